"""The one reading of a ``concurrency`` setting (marker, option, ini, scan, sweep)."""

from __future__ import annotations

import pytest

from rampart._pacing import (
    AUTO,
    DEFAULT_CONCURRENCY,
    check_concurrency,
    default_concurrency,
    parse_concurrency,
    run_concurrency,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1), (64, 64), ("8", 8), (" 16 ", 16), ("auto", AUTO), ("AUTO", AUTO), (" Auto", AUTO)],
)
def test_a_setting_reads(value: object, expected: object) -> None:
    assert parse_concurrency(value) == expected


@pytest.mark.parametrize("value", [0, -3, "0", "lots", "", "1.5", 2.0, True, None, [4]])
def test_anything_else_is_not_a_setting(value: object) -> None:
    assert parse_concurrency(value) is None


@pytest.mark.parametrize(
    ("value", "error"),
    [(0, ValueError), ("fast", ValueError), ("0", ValueError), (True, TypeError), (2.0, TypeError)],
)
def test_every_front_end_refuses_with_one_message(value: object, error: type) -> None:
    """The marker, the option, the ini value and the API word a refusal alike."""
    with pytest.raises(error) as raised:
        check_concurrency("owner", "concurrency", value)
    assert str(raised.value) == (
        f"owner: concurrency must be an integer >= 1 or 'auto', got {value!r}"
    )


def test_a_front_end_chooses_its_error_type() -> None:
    with pytest.raises(KeyError):
        check_concurrency("owner", "concurrency", 0, error=KeyError)


def test_the_run_setting_is_the_default_inside_the_run_only() -> None:
    """Outside a run a fan-out given no concurrency is unbounded; a run declares its
    setting for what runs inside it, and the declaration ends with the block."""
    assert default_concurrency() is None
    with run_concurrency(AUTO):
        assert default_concurrency() == AUTO
        with run_concurrency(4):
            assert default_concurrency() == 4
        assert default_concurrency() == AUTO
    assert default_concurrency() is None
    assert DEFAULT_CONCURRENCY == 32
