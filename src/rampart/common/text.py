"""Text sanitizers for agent- and evaluator-produced values (RAMPART's ``rampart.common.text``).

* ``strip_ansi(text)`` removes ECMA-48 escape sequences (CSI, OSC, DCS/SOS/PM/APC and
  the short escapes, 7- and 8-bit) and then C0/C1 control characters other than tab,
  newline and carriage return.
* ``safe_str(value)`` never raises: ``"<unprintable value>"`` when ``str()`` fails.
* ``safe_str_list(value)`` never raises: a bare string is one entry, a value that
  cannot be iterated gives ``[]``.
* ``safe_float(value)`` never raises: a finite ``float``, or ``None``.
* ``one_line(text)`` (rampart's own) makes a terminal-safe single line.

The implementation lives in ``rampart._text``; this module is its public path.
"""

from rampart._text import one_line, safe_float, safe_str, safe_str_list, strip_ansi

__all__ = ["one_line", "safe_float", "safe_str", "safe_str_list", "strip_ansi"]
