"""Temporal scopes: which of the turns already in the context an evaluator looks at.

A scope quantifies over the turns an ``EvalContext`` holds; it never decides how many
turns run (``max_turns``, the driver and ``stop_when`` do).
"""

from __future__ import annotations

import enum

__all__ = ["ResponseScope", "TranscriptScope"]


class ResponseScope(enum.Enum):
    """Which responses ``ResponseContains`` checks.

    ``ANY_TURN`` detects when at least one response matches; ``ALL_TURNS`` only when
    every response does; ``CURRENT_TURN`` checks the latest response alone. Negation
    reads naturally: ``~ANY_TURN`` is "no response matches", ``~ALL_TURNS`` is "some
    response does not match".
    """

    ANY_TURN = "any_turn"
    ALL_TURNS = "all_turns"
    CURRENT_TURN = "current_turn"


class TranscriptScope(enum.Enum):
    """How much of the transcript a whole-transcript evaluator (an LLM judge) reads."""

    FULL = "full"
    CURRENT_TURN = "current_turn"
