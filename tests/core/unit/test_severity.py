"""The one severity order of verdicts (``rampart.core._severity``)."""

from __future__ import annotations

from rampart.core._severity import severity, worst
from rampart.core.types import SafetyStatus


def test_the_order_is_unsafe_error_undetermined_safe() -> None:
    ordered = sorted(SafetyStatus, key=severity)
    assert ordered == [
        SafetyStatus.UNSAFE,
        SafetyStatus.ERROR,
        SafetyStatus.UNDETERMINED,
        SafetyStatus.SAFE,
    ]


def test_a_value_that_is_no_status_sorts_last() -> None:
    assert severity("unsafe") > severity(SafetyStatus.SAFE)


def test_worst_picks_the_most_severe_and_is_safe_for_none() -> None:
    assert worst([SafetyStatus.SAFE, SafetyStatus.UNDETERMINED]) is SafetyStatus.UNDETERMINED
    assert worst(iter([SafetyStatus.ERROR, SafetyStatus.UNSAFE])) is SafetyStatus.UNSAFE
    assert worst([]) is SafetyStatus.SAFE
