"""The ``concurrency`` setting: an integer >= 1, or ``"auto"`` for the adaptive limit.

Written once for every front end that reads it from text or a value: the trial
marker, the plugin's ``--rampart-concurrency`` option and ini value, ``rampart scan``
and ``rampart sweep``. Each front end words its own error around
:data:`CONCURRENCY_EXPECTED`, in its own style (a pytest usage error, a CLI error).
"""

from __future__ import annotations

from typing import Literal

__all__ = ["AUTO", "CONCURRENCY_EXPECTED", "parse_concurrency"]

AUTO: Literal["auto"] = "auto"
"""The ``concurrency`` value that selects the adaptive controller."""

CONCURRENCY_EXPECTED = f"an integer >= 1 or {AUTO!r}"
"""What a ``concurrency`` setting may be, for error messages."""


def parse_concurrency(value: object) -> int | Literal["auto"] | None:
    """A setting given as text or an int; ``None`` when ``value`` is not one.

    Text is an integer (surrounding space allowed) or ``auto`` in any case.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if value.strip().lower() == AUTO:
            return AUTO
        try:
            value = int(value)
        except ValueError:
            return None
    return value if isinstance(value, int) and value >= 1 else None
