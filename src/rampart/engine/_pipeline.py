"""The evaluator pipeline: consumes turn events, runs stop checks, applies stop policies.

The pipeline is the single writer of the trace record. For every raw turn event the
session actor emits it

1. appends the raw turn (what evaluators see),
2. runs the online stop check, if any, on a snapshot of the raw turns and annotates
   the turn with it (``eval_purpose=STOP_CHECK``),
3. then either stops turn production (a detection, or the turn budget is spent) or
   acknowledges the turn so the producer may ask the driver for the next prompt.

When there is an online stop check the pipeline runs as its own task and stops
production by cancelling the production scope *before* the acknowledgement would be
sent, so the driver is never asked again after a stop. Without a stop check there
is nothing to evaluate online; the runner then applies the same ``step`` in the
producing task (one task and one hand-off per turn fewer on the hot path), where a
stop simply ends the production loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
import attrs

from rampart.core._internal import dataclass_compatible, evaluate_checked
from rampart.core.evaluator import Evaluator
from rampart.core.types import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    ObservabilityLevel,
    TraceEndReason,
    Turn,
)

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from rampart.core.manifest import AppManifest
    from rampart.core.types import Request
    from rampart.engine._mailbox import Mailbox
    from rampart.engine._policies import TurnProduction

__all__ = ["EvaluationRecord", "Pipeline", "TraceRecord", "evaluate"]


@dataclass_compatible
@attrs.frozen(kw_only=True, eq=False)
class EvaluationRecord:
    """One evaluation: which evaluator ran, on which context, with which result.

    Compared by identity: reuse decisions ask "is this the very same evaluation?".
    """

    evaluator: Evaluator
    context: EvalContext
    result: EvalResult


class TraceRecord:
    """The trace as it is produced; written only by the pipeline task, except what a
    failure's boundary reads (``rampart.engine._observed``): ``sent``, the requests the
    session actor has sent (one more than the turns recorded while the agent is
    answering), ``pending``, the last request sent, and ``final_evaluation``, the
    verdict evaluator's answer once the producer has it (a cleanup may still fail after
    it)."""

    __slots__ = (
        "final_evaluation",
        "latest_stop_check",
        "manifest",
        "observability_level",
        "pending",
        "raw_turns",
        "sent",
        "turns",
    )

    def __init__(
        self, *, observability_level: ObservabilityLevel, manifest: AppManifest | None
    ) -> None:
        self.observability_level = observability_level
        self.manifest = manifest
        self.raw_turns: list[Turn] = []
        self.turns: list[Turn] = []
        self.latest_stop_check: EvaluationRecord | None = None
        self.sent = 0
        self.pending: Request | None = None
        self.final_evaluation: EvalResult | None = None

    def context(self) -> EvalContext:
        """An evaluation context over a snapshot of the raw turns so far."""
        return EvalContext(
            turns=list(self.raw_turns),
            manifest=self.manifest,
            observability_level=self.observability_level,
        )


def evaluate(evaluator: Evaluator, context: EvalContext) -> Coroutine[Any, Any, EvalResult]:
    """Run ``evaluator`` on ``context`` through the evaluator contract check (await it).

    A malformed answer or an evaluator that is not async is an
    ``EvaluatorContractError``, an exception it raises an ``EvaluatorError`` naming it
    (see ``rampart.core._contract``); the boundary makes either an ERROR result. (It
    returns the check's coroutine instead of awaiting it: one frame fewer per
    evaluation.)
    """
    return evaluate_checked(evaluator, context=context)


class Pipeline:
    """The evaluator pipeline: one ``step`` per raw turn event.

    ``step`` records the raw turn, runs the stop check (if any) on a snapshot of the
    raw turns, records the annotated turn, and applies the stop policies. It returns
    the annotated turn, and the reason production must end (``None``: go on).
    """

    __slots__ = ("_max_turns", "_stop_when", "record")

    def __init__(self, *, record: TraceRecord, stop_when: Evaluator | None, max_turns: int) -> None:
        self.record = record
        self._stop_when = stop_when
        self._max_turns = max_turns

    async def step(self, raw: Turn) -> tuple[Turn, TraceEndReason | None]:
        record = self.record
        record.raw_turns.append(raw)
        turn = raw
        detected = False
        stop_when = self._stop_when
        if stop_when is not None:
            context = record.context()
            result = await evaluate(stop_when, context)
            record.latest_stop_check = EvaluationRecord(
                evaluator=stop_when, context=context, result=result
            )
            turn = Turn(
                request=raw.request,
                response=raw.response,
                eval_result=result,
                eval_purpose=EvaluationPurpose.STOP_CHECK,
                turn_number=raw.turn_number,
                timestamp=raw.timestamp,
                driver_reasoning=raw.driver_reasoning,
            )
            detected = result.outcome is EvalOutcome.DETECTED
        record.turns.append(turn)
        if detected:
            return turn, TraceEndReason.STOP_CONDITION_MET
        if len(record.turns) >= self._max_turns:
            return turn, TraceEndReason.MAX_TURNS_REACHED
        return turn, None

    async def run(
        self, events: Mailbox[Turn], acks: Mailbox[Turn], production: TurnProduction
    ) -> None:
        """As its own task: consume turn events until the session actor closes ``events``.

        A stop cancels the production scope *before* the acknowledgement would be
        sent, so the producer never asks the driver again. On failure the task group
        cancels every task, so no one mistakes a failure for a normal end of stream.
        """
        while True:
            try:
                raw = await events.get()
            except anyio.EndOfStream:
                return
            turn, stop = await self.step(raw)
            if stop is not None:
                production.stop(stop)
            else:
                acks.put(turn)
