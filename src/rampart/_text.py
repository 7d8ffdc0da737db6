"""Text sanitizers for anything rampart prints or persists from agent-controlled data.

Agent responses, evaluator rationales and summaries can carry terminal escape
sequences (on purpose, in a red-team run). Before such text reaches a terminal or a
report it goes through :func:`strip_ansi`, which removes ECMA-48 escape and control
sequences in both their 7-bit (``ESC``-prefixed) and 8-bit (C1) forms, and then every
remaining C0/C1 control character except tab, newline and carriage return.

Evaluators are user code and may put any object where text belongs (a rationale
whose ``__str__`` raises, evidence that is a bare string or an integer).
:func:`safe_str`, :func:`safe_str_list` and :func:`safe_float` turn such values into
exact ``str`` / ``list[str]`` / finite ``float`` (or ``None``) without raising, as
RAMPART's helpers of the same names do; the public path is ``rampart.common.text``.

Only :mod:`re`, :mod:`math` and :mod:`numbers` are imported and the patterns are
compiled once, at import time.
"""

from __future__ import annotations

import math
import numbers
import re
from itertools import islice
from typing import Any

from rampart._checks import invalid

__all__ = [
    "escape_hidden_json",
    "one_line",
    "reveal_hidden_json",
    "safe_float",
    "safe_str",
    "safe_str_list",
    "strip_ansi",
    "terminal_safe",
]

# Control strings: OSC, DCS, SOS, PM, APC. Introduced by ESC ] / ESC P / ESC X /
# ESC ^ / ESC _ or their 8-bit forms, ended by ST (ESC \ or 0x9C). BEL also ends them,
# as xterm accepts for OSC. An unterminated string is not matched here; its
# introducer is removed by the generic passes below and the rest stays visible, inert.
# The body stops at the next ESC, 8-bit introducer, ST or BEL, so each character is
# scanned by at most one attempt: linear time (a lazy ``.*?`` body made
# ``"\x1b]" * 40000`` quadratic, 27 s for 20,000). A string whose body holds an ESC
# that is not its ST is therefore not matched whole; its parts are removed by the
# passes below, and what is left is inert text.
_CONTROL_STRING = (
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])"
    r"[^\x1b\x07\x90\x98\x9c\x9d\x9e\x9f]*(?:\x1b\\|\x9c|\x07)"
)
# CSI: ESC [ or 0x9B, parameter bytes 0x30-0x3F, intermediates 0x20-0x2F, a final
# byte 0x40-0x7E.
_CSI = r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
# Every other escape: nF (ESC, intermediates 0x20-0x2F, final 0x30-0x7E) and the
# two-byte Fp/Fe/Fs forms (ESC plus one byte 0x30-0x7E, e.g. ESC c, a full reset).
_OTHER_ESCAPE = r"\x1b[\x20-\x2f]*[\x30-\x7e]"

_ESCAPES = re.compile(f"{_CONTROL_STRING}|{_CSI}|{_OTHER_ESCAPE}", re.DOTALL)
# C0 controls except \t \n \r, DEL, and the C1 range.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Line and tab characters that must not break a one-line terminal entry.
_LINE_BREAKS = re.compile(r"[\t\n\r\u2028\u2029]+")

# Zero-width and bidirectional formatting characters (Unicode category Cf, the ones
# that change how a line is displayed): ZWSP..RLM, LRE..RLO, LRI..PDI, BOM.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")

_UNPRINTABLE = "<unprintable value>"


def strip_ansi(text: str) -> str:
    """Remove escape sequences, then C0/C1 control characters other than ``\\t\\n\\r``."""
    if not isinstance(text, str):
        raise invalid("strip_ansi", "text", "a str", text)
    return _CONTROLS.sub("", _ESCAPES.sub("", text))


def safe_str(value: object) -> str:
    """``str(value)`` as an exact ``str``, or ``"<unprintable value>"`` when that raises.

    For rendering values that user or agent code produced, where a broken ``__str__``
    must not take the report down with it. The result is always an exact ``str``: a
    ``__str__`` returning a ``str`` subclass is copied into a plain ``str`` (through
    ``str.__str__``, which cannot be overridden), so the subclass's methods never run
    later; a ``str`` subclass gives its own text, whatever its ``__str__`` does.
    Accepts ``value=`` as a keyword too (RAMPART's spelling).
    """
    if type(value) is str:
        return value
    if isinstance(value, str):  # its text, without running the subclass's __str__
        return str.__str__(value)
    try:
        rendered = str(value)
    except Exception:
        return _UNPRINTABLE
    try:
        return str.__str__(rendered)
    except Exception:  # pragma: no cover - str.__str__ of a str does not raise
        return _UNPRINTABLE


def safe_str_list(value: object, *, limit: int | None = None) -> list[str]:
    """``value`` as a fresh list of exact ``str``, never raising.

    A bare string (a ``str`` subclass included) is one entry, not its characters;
    ``None`` and values that cannot be iterated give ``[]``, as does an iterable that
    raises partway through; every entry is rendered with :func:`safe_str`. A generator
    is read once. ``limit`` caps how many entries are read (an endless iterator then
    cannot hang the caller). Accepts ``value=`` as a keyword too.
    """
    if isinstance(value, str):
        return [str.__str__(value)]
    if value is None:
        return []
    try:
        iterable: Any = value
        items = list(iterable if limit is None else islice(iterable, limit))
    except Exception:
        return []
    return [safe_str(item) for item in items]


def safe_float(value: object) -> float | None:
    """``value`` as a finite ``float``, or ``None`` when it is not a finite real number.

    Booleans are not numbers here; NaN and the infinities give ``None`` (the JSON
    report writes them as ``null``). Never raises. Accepts ``value=`` as a keyword too.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        number = float(value)
    except Exception:  # an overflowing int, a __float__ that raises
        return None
    return number if math.isfinite(number) else None


def one_line(text: str, *, limit: int | None = None) -> str:
    """:func:`strip_ansi`, then each run of newlines/tabs becomes one space; trimmed.

    For terminal lines such as ``  FAIL  test_x -- <summary> (tool_only)``, where a
    multi-line summary would break the layout. Bidirectional overrides and invisible
    format characters are dropped too, so agent text cannot reorder the line visually.
    With ``limit``, the text is cut to ``limit`` characters *before* any per-character
    work and the result is at most ``limit`` long, so a huge hostile text costs no more
    than its first ``limit`` characters.
    """
    if limit is not None:
        text = text[:limit]
    cleaned = _LINE_BREAKS.sub(" ", _INVISIBLE.sub("", strip_ansi(text))).strip()
    return cleaned if limit is None else cleaned[:limit]


def terminal_safe(text: str) -> str:
    """:func:`strip_ansi`, then bidirectional overrides and invisible format characters
    dropped; line breaks are kept (for multi-line text such as a verdict's rationale)."""
    if text.isascii() and text.isprintable():  # the common case: nothing to remove
        return text
    return _INVISIBLE.sub("", strip_ansi(text))


# What JSON's encoder leaves raw inside strings (with ensure_ascii=False) that a
# terminal or a page acts on without showing it: DEL and the C1 controls (U+009B is an
# 8-bit CSI), bidirectional overrides and zero-width characters, line and paragraph
# separators, the byte order mark.
_HIDDEN = re.compile("[\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2028\u2029\u2066-\u2069\ufeff]")


def escape_hidden_json(text: str) -> str:
    """JSON text with every hidden character (see above) written as a ``\\u`` escape.

    Those characters occur only inside JSON strings, where the escape decodes to the
    same character: the document is unchanged, but printing or viewing the text shows
    the escape instead of obeying the character.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _HIDDEN.sub(lambda match: f"\\u{ord(match[0]):04x}", text)


def reveal_hidden_json(text: str) -> str:
    """JSON text with every hidden character replaced by visible ``[U+XXXX]`` text.

    For a page people read: the decoded strings show where an override or a control
    character was, and the page never obeys it.
    """
    if text.isascii() and "\x7f" not in text:
        return text
    return _HIDDEN.sub(lambda match: f"[U+{ord(match[0]):04X}]", text)
