"""Argument checks shared by the simulated agents; every message names the argument."""

from __future__ import annotations

from rampart._checks import check_finite, is_number

__all__ = ["check_probability", "check_seconds"]


def check_probability(owner: str, name: str, value: object) -> float:
    """``value`` as a float in [0, 1], else ``TypeError`` / ``ValueError`` naming ``name``."""
    if not is_number(value):
        raise TypeError(f"{owner}: {name} must be a number in [0, 1], got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{owner}: {name} must be in [0, 1], got {value!r}")
    return number


def check_seconds(owner: str, name: str, value: object) -> float:
    """``value`` as a finite, non-negative number of seconds."""
    return check_finite(
        owner,
        name,
        value,
        expected="a finite number of seconds >= 0",
        type_expected="a number of seconds",
    )
