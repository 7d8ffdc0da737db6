"""Argument validation for every public constructor and function in rampart.

One module, one message format::

    "{owner}: {name} must be {expected}, got {value!r}"

``owner`` is the class or function checked (``"XPIAExecution"``, ``"limit"``), ``name``
the argument (``"max_turns"``, ``"handles[2]"``), ``expected`` what would have been
accepted. A wrong type raises ``TypeError`` and states the type and the range
(``"must be a non-negative integer"``, ``"must be an integer >= 1"``); a value of the
right type out of range raises ``ValueError`` and states the range (``"must be
non-negative"``, ``"must be >= 1"``, ``"must be in [0, 1]"``), so the words RAMPART
uses for the same mistakes (``"max_turns must be non-negative"``, ``"trial(n=) must be
an integer"``, ``"trial(n=) must be >= 1"``) appear in ours. Bools are never numbers. The
rejected value is shown by a bounded ``repr`` that cannot raise, and never at all for
a secret (``secret=True`` shows only its type).

The checks return the value, normalised where that is the point (a number as
``float``, a path as ``Path``), so constructors read ``self._x = check_...(...)``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable


__all__ = [
    "DRIVER",
    "EVALUATOR",
    "check_bool",
    "check_callable",
    "check_choice",
    "check_filename",
    "check_instance",
    "check_int",
    "check_items",
    "check_method",
    "check_number",
    "check_optional_filename",
    "check_optional_instance",
    "check_optional_int",
    "check_optional_number",
    "check_optional_secret",
    "check_optional_seconds",
    "check_optional_text",
    "check_path",
    "check_probability",
    "check_seconds",
    "check_text",
    "describe",
    "invalid",
    "is_number",
    "message",
]

T = TypeVar("T")

_SHOWN_LIMIT = 120


def describe(value: object, *, secret: bool = False) -> str:
    """How a rejected value is shown: its ``repr``, cut to a bounded length.

    A class is shown with a hint (passing ``ToolCalled`` for ``ToolCalled(...)`` is a
    common slip); a secret shows only its type; a ``repr`` that raises does not.
    """
    if secret:
        # A str held hidden (``rampart._redact.Secret``) is a str to the caller.
        kind = str if isinstance(value, str) else type(value)
        return f"<{kind.__name__}, not shown>"
    if isinstance(value, type):
        return f"the class {value.__qualname__} (did you forget to call it?)"
    try:
        shown = repr(value)
    except Exception:
        return f"<unprintable {type(value).__name__}>"
    if len(shown) > _SHOWN_LIMIT:
        shown = shown[: _SHOWN_LIMIT - 3] + "..."
    return shown


def message(
    owner: str,
    name: str,
    expected: str,
    value: object,
    *,
    secret: bool = False,
    shown: str | None = None,
) -> str:
    """The one message format: ``"{owner}: {name} must be {expected}, got {value!r}"``.

    ``shown`` replaces the value's ``repr`` (a URL with its password redacted).
    """
    if shown is None:
        shown = describe(value, secret=secret)
    return f"{owner}: {name} must be {expected}, got {shown}"


def invalid(
    owner: str,
    name: str,
    expected: str,
    value: object,
    *,
    error: type[Exception] = TypeError,
    secret: bool = False,
    shown: str | None = None,
) -> Exception:
    """The exception to raise for a rejected argument: ``raise invalid(...)``.

    ``error`` (``TypeError`` unless given) carries the one message format (see
    :func:`message`).
    """
    return error(message(owner, name, expected, value, secret=secret, shown=shown))


def _or_none(expected: str, optional: bool) -> str:
    return f"{expected} or None" if optional else expected


def is_number(value: object) -> bool:
    """True for an int or float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_bool(owner: str, name: str, value: object) -> bool:
    """``value`` itself when it is a bool (``0`` / ``1`` are not)."""
    if not isinstance(value, bool):
        raise invalid(owner, name, "a bool", value)
    return value


def _int_range(minimum: int | None, maximum: int | None) -> str:
    """``"non-negative"``, ``">= 2"``, ``"<= 9"``, ``"in [1, 9]"``, or ``""``."""
    if maximum is not None:
        return f"<= {maximum}" if minimum is None else f"in [{minimum}, {maximum}]"
    if minimum is None:
        return ""
    return "non-negative" if minimum == 0 else f">= {minimum}"


def _int_expected(minimum: int | None, maximum: int | None) -> str:
    bound = _int_range(minimum, maximum)
    if not bound:
        return "an integer"
    if bound == "non-negative":
        return "a non-negative integer"
    return f"an integer {bound}"


def check_int(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    wrong_type: type[Exception] = TypeError,
) -> int:
    """``value`` as an int in ``[minimum, maximum]`` (either bound optional).

    A non-int (or a bool) raises ``wrong_type`` (``TypeError`` unless a caller whose
    input is text, such as a CLI option, asks for ``ValueError``).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(owner, name, _int_expected(minimum, maximum), value, error=wrong_type)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise invalid(owner, name, _int_range(minimum, maximum), value, error=ValueError)
    return value


def check_optional_int(
    owner: str, name: str, value: object, *, minimum: int | None = None
) -> int | None:
    """``None``, or ``value`` checked by :func:`check_int`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(owner, name, _or_none(_int_expected(minimum, None), True), value)
    return check_int(owner, name, value, minimum=minimum)


def _number_range(
    minimum: float | None, maximum: float | None, above: float | None, below: float | None
) -> str:
    low = ("[", minimum) if minimum is not None else ("(", above) if above is not None else None
    high = ("]", maximum) if maximum is not None else (")", below) if below is not None else None
    if low is not None and high is not None:
        return f"in {low[0]}{low[1]:g}, {high[1]:g}{high[0]}"
    if low is not None:
        return f"{'>=' if low[0] == '[' else '>'} {low[1]:g}"
    if high is not None:
        return f"{'<=' if high[0] == ']' else '<'} {high[1]:g}"
    return ""


def _number(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: float | None,
    maximum: float | None,
    above: float | None,
    below: float | None,
    noun: str,
    optional: bool,
) -> float | None:
    # The message is built only on failure: these checks run on every execution built.
    if type(value) is float or type(value) is int:
        number = float(value)
        if (
            math.isfinite(number)
            and (minimum is None or number >= minimum)
            and (maximum is None or number <= maximum)
            and (above is None or number > above)
            and (below is None or number < below)
        ):
            return number
    elif optional and value is None:
        return None
    bound = _number_range(minimum, maximum, above, below)
    expected = f"{noun} {bound}" if bound else noun
    if not is_number(value):
        raise invalid(owner, name, _or_none(expected, optional), value)
    number = float(value)  # type: ignore[arg-type]
    if (
        math.isfinite(number)
        and (minimum is None or number >= minimum)
        and (maximum is None or number <= maximum)
        and (above is None or number > above)
        and (below is None or number < below)
    ):
        return number  # an int or float subclass within bounds
    raise invalid(owner, name, expected, value, error=ValueError)


def check_number(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    noun: str = "a finite number",
) -> float:
    """``value`` as a finite float within the bounds given.

    ``minimum`` / ``maximum`` are inclusive, ``above`` / ``below`` exclusive. ``noun``
    names the kind (``"a finite number of seconds"``); the bounds are appended to it.
    """
    number = _number(
        owner,
        name,
        value,
        minimum=minimum,
        maximum=maximum,
        above=above,
        below=below,
        noun=noun,
        optional=False,
    )
    assert number is not None
    return number


def check_optional_number(
    owner: str,
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    below: float | None = None,
    noun: str = "a finite number",
) -> float | None:
    """``None``, or ``value`` checked by :func:`check_number`."""
    return _number(
        owner,
        name,
        value,
        minimum=minimum,
        maximum=maximum,
        above=above,
        below=below,
        noun=noun,
        optional=True,
    )


_SECONDS = "a finite number of seconds"


def check_seconds(owner: str, name: str, value: object, *, positive: bool = False) -> float:
    """A duration: a finite number of seconds, >= 0 (> 0 when ``positive``), as float."""
    if positive:
        return check_number(owner, name, value, above=0, noun=_SECONDS)
    return check_number(owner, name, value, minimum=0, noun=_SECONDS)


def check_optional_seconds(
    owner: str, name: str, value: object, *, positive: bool = False
) -> float | None:
    """``None``, or a duration checked by :func:`check_seconds`."""
    if positive:
        return check_optional_number(owner, name, value, above=0, noun=_SECONDS)
    return check_optional_number(owner, name, value, minimum=0, noun=_SECONDS)


def check_probability(owner: str, name: str, value: object) -> float:
    """A fraction or probability: a number in [0, 1], as float."""
    return check_number(owner, name, value, minimum=0, maximum=1, noun="a number")


def _text(
    owner: str,
    name: str,
    value: object,
    *,
    optional: bool,
    secret: bool,
    wrong_type: type[Exception],
    blank_ok: bool = False,
) -> str | None:
    if isinstance(value, str) and (value.strip() or (blank_ok and value)):
        return value
    if optional and value is None:
        return None
    expected = _or_none("a non-empty string", optional)
    if not isinstance(value, str):
        raise invalid(owner, name, expected, value, error=wrong_type, secret=secret)
    raise invalid(owner, name, expected, value, error=ValueError, secret=secret)


def check_text(
    owner: str,
    name: str,
    value: object,
    *,
    secret: bool = False,
    wrong_type: type[Exception] = TypeError,
    blank_ok: bool = False,
) -> str:
    """``value`` when it is a str that is not blank (``blank_ok``: not empty)."""
    text = _text(
        owner,
        name,
        value,
        optional=False,
        secret=secret,
        wrong_type=wrong_type,
        blank_ok=blank_ok,
    )
    assert text is not None
    return text


def check_optional_text(
    owner: str, name: str, value: object, *, secret: bool = False
) -> str | None:
    """``None``, or ``value`` checked by :func:`check_text`."""
    return _text(owner, name, value, optional=True, secret=secret, wrong_type=TypeError)


def check_instance(owner: str, name: str, value: object, kind: type[T], *, expected: str) -> T:
    """``value`` when it is an instance of ``kind``."""
    if not isinstance(value, kind):
        raise invalid(owner, name, expected, value)
    return value


def check_optional_instance(
    owner: str, name: str, value: object, kind: type[T], *, expected: str
) -> T | None:
    """``None``, or ``value`` checked by :func:`check_instance`."""
    if value is None:
        return None
    if not isinstance(value, kind):
        raise invalid(owner, name, _or_none(expected, True), value)
    return value


def check_choice(owner: str, name: str, value: T, choices: Iterable[T]) -> T:
    """``value`` when it equals one of ``choices`` (``ValueError`` listing them otherwise)."""
    allowed = list(choices)
    if value not in allowed:
        listed = ", ".join(repr(choice) for choice in allowed)
        raise invalid(owner, name, f"one of {listed}", value, error=ValueError)
    return value


def check_callable(
    owner: str, name: str, value: object, *, expected: str = "a callable", optional: bool = False
) -> Callable[..., object] | None:
    """``value`` when it is callable (``None`` too when ``optional``)."""
    if optional and value is None:
        return None
    if not callable(value):
        raise invalid(owner, name, _or_none(expected, optional), value)
    return value


def check_method(owner: str, name: str, value: object, method: str, *, expected: str) -> object:
    """``value`` when it is an instance (not a class) with a callable ``method``.

    The structural check for the protocols user code implements (an evaluator's
    ``evaluate_async``, a driver's ``next_prompt_async``); ``isinstance`` against a
    runtime-checkable protocol is slow on Python 3.11, and this sits on the path of
    every execution a trial run builds.
    """
    if isinstance(value, type) or not callable(getattr(value, method, None)):
        raise invalid(owner, name, expected, value)
    return value


EVALUATOR = "an Evaluator (an object with an async evaluate_async(*, context) method)"
DRIVER = "a PromptDriver (an object with an async next_prompt_async(*, history) method)"


def check_items(
    owner: str,
    name: str,
    value: object,
    check: Callable[[str, object], T],
    *,
    expected: str,
) -> list[T]:
    """``value`` as a list (from a list or tuple), each item checked as ``name[i]``.

    ``check(item_name, item)`` validates one item and returns it (it raises with the
    item's own message, e.g. ``"handles[2] must be ..."``).
    """
    if not isinstance(value, list | tuple):
        raise invalid(owner, name, expected, value)
    return [check(f"{name}[{index}]", item) for index, item in enumerate(value)]


def check_path(owner: str, name: str, value: object) -> Path:
    """``value`` as a ``Path``: a non-empty ``str`` or ``os.PathLike``."""
    expected = "a non-empty path (str or os.PathLike)"
    if not isinstance(value, str | os.PathLike):
        raise invalid(owner, name, expected, value)
    if not os.fspath(value):
        raise invalid(owner, name, expected, value, error=ValueError)
    return Path(value)


_FILENAME = "a bare file name without directories"


def check_filename(owner: str, name: str, value: object) -> str:
    """A bare file name: a non-empty ``str`` with no directory part, not ``.`` / ``..``."""
    if not isinstance(value, str):
        raise invalid(owner, name, _FILENAME, value)
    separators = {os.sep, os.altsep or os.sep, "/"}
    if (
        not value
        or value in {".", ".."}
        or "\x00" in value
        or any(separator in value for separator in separators)
    ):
        raise invalid(owner, name, _FILENAME, value, error=ValueError)
    return value


def check_optional_filename(owner: str, name: str, value: object) -> str | None:
    """``None``, or ``value`` checked by :func:`check_filename`."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise invalid(owner, name, _or_none(_FILENAME, True), value)
    return check_filename(owner, name, value)


def check_optional_secret(owner: str, name: str, value: object) -> str | None:
    """``None``, or a non-blank str without line breaks; a rejected value is never shown.

    For api keys and passwords: a rejected value may still be a real secret (with a
    stray newline, say), so the message names its type only.
    """
    if value is None:
        return None
    expected = "a non-empty string without line breaks, or None"
    if not isinstance(value, str):
        raise invalid(owner, name, expected, value, secret=True)
    if not value.strip() or any(char in value for char in "\r\n"):
        raise invalid(owner, name, expected, value, error=ValueError, secret=True)
    return value
