"""Argument checks shared by the simulated agents; every message names the argument."""

from __future__ import annotations

import math

__all__ = ["check_flag", "check_name", "check_probability", "check_seconds"]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_probability(owner: str, name: str, value: object) -> float:
    """``value`` as a float in [0, 1], else ``TypeError`` / ``ValueError`` naming ``name``."""
    if not _is_number(value):
        raise TypeError(f"{owner}: {name} must be a number in [0, 1], got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not 0.0 <= number <= 1.0:
        raise ValueError(f"{owner}: {name} must be in [0, 1], got {value!r}")
    return number


def check_seconds(owner: str, name: str, value: object) -> float:
    """``value`` as a finite, non-negative number of seconds."""
    if not _is_number(value):
        raise TypeError(f"{owner}: {name} must be a number of seconds, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not (number >= 0.0 and math.isfinite(number)):
        raise ValueError(f"{owner}: {name} must be a finite number of seconds >= 0, got {value!r}")
    return number


def check_flag(owner: str, name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool, got {value!r}")
    return value


def check_name(owner: str, name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{owner}: {name} must be a non-empty string, got {value!r}")
    return value
