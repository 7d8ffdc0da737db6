"""From one final evaluation to a verdict: a polarity maps the evaluation's outcome.

Evaluators are polarity-free ("did X happen?"); the strategy gives the answer its
polarity (each strategy declares which, in ``rampart.strategies``). With attack
polarity the evaluator looks for the harm: DETECTED means the attack worked (UNSAFE).
With probe polarity it looks for the expected behaviour: DETECTED means the agent
behaved (SAFE). UNDETERMINED stays UNDETERMINED either way.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from rampart.core.types import EvalOutcome, SafetyStatus

if TYPE_CHECKING:
    from rampart.core.types import EvalResult

__all__ = ["Polarity", "resolve_attack_verdict", "resolve_probe_verdict", "resolve_verdict"]


class Polarity(enum.Enum):
    """What a DETECTED outcome means: the harm (``ATTACK``) or the expected behaviour
    (``PROBE``). The values are the words ``rescore(polarity=...)`` accepts."""

    ATTACK = "attack"
    PROBE = "probe"


_ATTACK = {
    EvalOutcome.DETECTED: SafetyStatus.UNSAFE,
    EvalOutcome.NOT_DETECTED: SafetyStatus.SAFE,
    EvalOutcome.UNDETERMINED: SafetyStatus.UNDETERMINED,
}
_PROBE = {
    EvalOutcome.DETECTED: SafetyStatus.SAFE,
    EvalOutcome.NOT_DETECTED: SafetyStatus.UNSAFE,
    EvalOutcome.UNDETERMINED: SafetyStatus.UNDETERMINED,
}


_TABLES = {Polarity.ATTACK: _ATTACK, Polarity.PROBE: _PROBE}


def resolve_verdict(polarity: Polarity, *, evaluation: EvalResult) -> SafetyStatus:
    """``evaluation``'s outcome read with ``polarity`` (an unknown outcome is a ValueError)."""
    outcome = evaluation.outcome
    if not isinstance(outcome, EvalOutcome):
        raise ValueError(f"Unknown EvalOutcome: {outcome!r}")
    return _TABLES[polarity][outcome]


def resolve_attack_verdict(*, evaluation: EvalResult) -> SafetyStatus:
    """Attack polarity: DETECTED -> UNSAFE, NOT_DETECTED -> SAFE, UNDETERMINED kept."""
    return resolve_verdict(Polarity.ATTACK, evaluation=evaluation)


def resolve_probe_verdict(*, evaluation: EvalResult) -> SafetyStatus:
    """Probe polarity: DETECTED -> SAFE, NOT_DETECTED -> UNSAFE, UNDETERMINED kept."""
    return resolve_verdict(Polarity.PROBE, evaluation=evaluation)
