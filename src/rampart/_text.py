"""Text sanitizers for anything rampart prints or persists from agent-controlled data.

Agent responses, evaluator rationales and summaries can carry terminal escape
sequences (on purpose, in a red-team run). Before such text reaches a terminal or a
report it goes through :func:`strip_ansi`, which removes ECMA-48 escape and control
sequences in both their 7-bit (``ESC``-prefixed) and 8-bit (C1) forms, and then every
remaining C0/C1 control character except tab, newline and carriage return.

Only :mod:`re` is imported and the patterns are compiled once, at import time.
"""

from __future__ import annotations

import re

from rampart._checks import invalid

__all__ = ["one_line", "safe_str", "strip_ansi"]

# Control strings: OSC, DCS, SOS, PM, APC. Introduced by ESC ] / ESC P / ESC X /
# ESC ^ / ESC _ or their 8-bit forms, ended by ST (ESC \ or 0x9C). BEL also ends them,
# as xterm accepts for OSC. An unterminated string is not matched here; its
# introducer is removed by the generic passes below and the rest stays visible, inert.
_CONTROL_STRING = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]).*?(?:\x1b\\|\x9c|\x07)"
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
    """``str(value)``, or ``"<unprintable value>"`` when its ``__str__`` raises.

    For rendering values that user or agent code produced, where a broken ``__str__``
    must not take the report down with it.
    """
    if type(value) is str:
        return value
    try:
        return str(value)
    except Exception:
        return _UNPRINTABLE


def one_line(text: str) -> str:
    """:func:`strip_ansi`, then each run of newlines/tabs becomes one space; trimmed.

    For terminal lines such as ``  FAIL  test_x -- <summary> (tool_only)``, where a
    multi-line summary would break the layout. Bidirectional overrides and invisible
    format characters are dropped too, so agent text cannot reorder the line visually.
    """
    return _LINE_BREAKS.sub(" ", _INVISIBLE.sub("", strip_ansi(text))).strip()
