"""Argument checks for ``rampart.limits``; every message names the argument."""

from __future__ import annotations

import math

__all__ = [
    "check_bool",
    "check_count",
    "check_optional_count",
    "check_positive_rate",
    "check_retry_after",
    "check_seconds",
]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_bool(owner: str, name: str, value: object) -> bool:
    """``value`` itself when it is a bool (``0`` / ``1`` are not)."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool, got {value!r}")
    return value


def check_count(owner: str, name: str, value: object, *, minimum: int) -> int:
    """``value`` as an int >= ``minimum`` (bools are rejected)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    return value


def check_optional_count(owner: str, name: str, value: object, *, minimum: int) -> int | None:
    """``None`` or an int >= ``minimum``."""
    if value is None:
        return None
    return check_count(owner, name, value, minimum=minimum)


def check_positive_rate(owner: str, name: str, value: object) -> float:
    """``value`` as a finite float > 0."""
    if not _is_number(value):
        raise TypeError(f"{owner}: {name} must be a finite number > 0, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not (number > 0.0 and math.isfinite(number)):
        raise ValueError(f"{owner}: {name} must be a finite number > 0, got {value!r}")
    return number


def check_seconds(owner: str, name: str, value: object) -> float:
    """``value`` as a finite float >= 0 (a duration in seconds)."""
    if not _is_number(value):
        raise TypeError(f"{owner}: {name} must be a finite number of seconds >= 0, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not (number >= 0.0 and math.isfinite(number)):
        raise ValueError(f"{owner}: {name} must be a finite number of seconds >= 0, got {value!r}")
    return number


def check_retry_after(owner: str, value: object) -> float | None:
    """``None`` or a finite number of seconds >= 0."""
    if value is None:
        return None
    return check_seconds(owner, "retry_after", value)
