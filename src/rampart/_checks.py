"""Argument checks shared by the packages whose errors read ``"{owner}: {name} must be ..."``.

Every message names the owner (the class or function checked) and the argument, and
shows the rejected value's ``repr``. Bools are never accepted as numbers.
"""

from __future__ import annotations

import math

__all__ = [
    "check_bool",
    "check_finite",
    "check_int",
    "check_optional_secret",
    "check_text",
    "is_number",
]


def is_number(value: object) -> bool:
    """True for an int or float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_bool(owner: str, name: str, value: object) -> bool:
    """``value`` itself when it is a bool (``0`` / ``1`` are not)."""
    if not isinstance(value, bool):
        raise TypeError(f"{owner}: {name} must be a bool, got {value!r}")
    return value


def check_int(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: int,
    wrong_type: type[Exception] = TypeError,
) -> int:
    """``value`` as an int >= ``minimum``; a non-int (or a bool) raises ``wrong_type``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise wrong_type(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    if value < minimum:
        raise ValueError(f"{owner}: {name} must be an int >= {minimum}, got {value!r}")
    return value


def check_text(
    owner: str, name: str, value: object, *, wrong_type: type[Exception] = TypeError
) -> str:
    """``value`` when it is a str that is not blank; a non-str raises ``wrong_type``."""
    if not isinstance(value, str):
        raise wrong_type(f"{owner}: {name} must be a non-empty string, got {value!r}")
    if not value.strip():
        raise ValueError(f"{owner}: {name} must be a non-empty string, got {value!r}")
    return value


def check_finite(
    owner: str,
    name: str,
    value: object,
    *,
    expected: str,
    positive: bool = False,
    type_expected: str | None = None,
) -> float:
    """``value`` as a finite float >= 0 (> 0 when ``positive``).

    Errors read ``"{owner}: {name} must be {expected}, got {value!r}"``; for a value
    that is not a number at all, ``type_expected`` (when given) replaces ``expected``.
    """
    if not is_number(value):
        raise TypeError(f"{owner}: {name} must be {type_expected or expected}, got {value!r}")
    number = float(value)  # type: ignore[arg-type]
    if not ((number > 0.0 if positive else number >= 0.0) and math.isfinite(number)):
        raise ValueError(f"{owner}: {name} must be {expected}, got {value!r}")
    return number


def check_optional_secret(owner: str, name: str, value: object) -> str | None:
    """``value`` when it is ``None`` or a non-blank str; errors never show the value.

    For api keys and passwords: a rejected value may still be a real secret (with a
    stray newline, say), so the message names its type only.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{owner}: {name} must be a str or None, got a {type(value).__name__}")
    if not value.strip() or any(char in value for char in "\r\n"):
        raise ValueError(
            f"{owner}: {name} must be a non-empty string without line breaks (value not shown)"
        )
    return value
