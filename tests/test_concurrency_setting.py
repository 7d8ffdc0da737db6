"""The one reading of a ``concurrency`` setting (marker, option, ini, scan, sweep)."""

from __future__ import annotations

import pytest

from rampart._concurrency import AUTO, parse_concurrency


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1, 1), (64, 64), ("8", 8), (" 16 ", 16), ("auto", AUTO), ("AUTO", AUTO), (" Auto", AUTO)],
)
def test_a_setting_reads(value: object, expected: object) -> None:
    assert parse_concurrency(value) == expected


@pytest.mark.parametrize("value", [0, -3, "0", "lots", "", "1.5", 2.0, True, None, [4]])
def test_anything_else_is_not_a_setting(value: object) -> None:
    assert parse_concurrency(value) is None
