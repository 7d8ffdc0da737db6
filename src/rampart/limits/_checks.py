"""Argument checks for ``rampart.limits``; every message names the argument."""

from __future__ import annotations

from rampart._checks import check_finite, check_int

__all__ = [
    "check_optional_count",
    "check_positive_rate",
    "check_positive_seconds",
    "check_retry_after",
    "check_seconds",
]


def check_optional_count(owner: str, name: str, value: object, *, minimum: int) -> int | None:
    """``None`` or an int >= ``minimum``."""
    if value is None:
        return None
    return check_int(owner, name, value, minimum=minimum)


def check_positive_rate(owner: str, name: str, value: object) -> float:
    """``value`` as a finite float > 0."""
    return check_finite(owner, name, value, positive=True, expected="a finite number > 0")


def check_positive_seconds(owner: str, name: str, value: object) -> float:
    """``value`` as a finite float > 0 (a duration in seconds)."""
    return check_finite(
        owner, name, value, positive=True, expected="a finite number of seconds > 0"
    )


def check_seconds(owner: str, name: str, value: object) -> float:
    """``value`` as a finite float >= 0 (a duration in seconds)."""
    return check_finite(owner, name, value, expected="a finite number of seconds >= 0")


def check_retry_after(owner: str, value: object) -> float | None:
    """``None`` or a finite number of seconds >= 0."""
    if value is None:
        return None
    return check_seconds(owner, "retry_after", value)
