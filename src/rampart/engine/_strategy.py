"""``TraceExecution``: the shared shape of strategies that drive and judge one trace.

An attack and a probe take the same parameters (a driver, a verdict evaluator, the
online stop condition, a turn budget) and run the same way: read the adapter's
observability level and manifest, run one trace (inside whatever scope the strategy
needs around it, e.g. live injections), then map the trace to a ``Result``. Only that
scope, the mapping, ``strategy_name`` and the strategy's ``declaration`` differ, so
those are what subclasses supply.

**No finding is lost.** When the run fails with a failure the
boundary converts, the turns completed before it are judged first
(``_failure_result``), by the verdict evaluator, but only when what the strategy calls
UNSAFE (DETECTED for an attack, NOT_DETECTED for a probe) can never be undone as the
conversation grows: the knowledge ``stop_when="auto"`` uses (``detected_is_absorbing``,
``not_detected_is_absorbing``: a tool call made, a side effect done, a secret said), or
when the whole trace had been judged already (a cleanup failed after the verdict
evaluation). Then a finding there makes the result UNSAFE, its summary saying the run
failed after it. Otherwise the result is ERROR: a partial conversation that the
evaluator might judge differently once complete is not judged (no evaluator, an LLM
judge above all, is called on a run that already failed), and the summary names what
the completed turns hold (their tool calls and side effects) as evidence not judged. A
probe's DETECTED is never made SAFE: a failed run is no pass.
"""

from __future__ import annotations

import abc
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from rampart._checks import check_int
from rampart._text import safe_str
from rampart.core._internal import Polarity, check_driver, check_evaluator, classify_failure
from rampart.core.evaluator import detected_is_absorbing, not_detected_is_absorbing
from rampart.core.result import SafetyStatus
from rampart.core.types import EvalOutcome
from rampart.engine._actor import manifest_of, observability_of
from rampart.engine._execution import BaseExecution, failure_cause
from rampart.engine._pipeline import evaluate
from rampart.engine._policies import resolve_stop_when
from rampart.engine._trace import evaluate_record, run_trace_around

if TYPE_CHECKING:
    from collections.abc import Coroutine, Sequence
    from contextlib import AbstractAsyncContextManager

    from rampart.core._internal import Failure
    from rampart.core.adapter import AgentAdapter
    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator
    from rampart.core.result import Result
    from rampart.core.types import EvalResult, Turn
    from rampart.engine._execution import ExecutionEventHandler
    from rampart.engine._observed import Observation
    from rampart.engine._trace import TraceRun

__all__ = ["Declaration", "TraceExecution"]

#: At most this many distinct tool and side-effect names are named as partial evidence.
EVIDENCE_NAMES = 5


class Declaration(Protocol):
    """What the engine reads from a strategy's declaration (``rampart.strategies``'
    ``Strategy``): the polarity of its verdict, and the summary of a finding kept from
    a run that failed after it."""

    @property
    def polarity(self) -> Polarity: ...

    def failed_summary(self, evaluation: EvalResult, *, failure: str) -> str: ...


def _names(values: Sequence[object]) -> str:
    distinct = list(dict.fromkeys(safe_str(value) for value in values))
    shown = ", ".join(distinct[:EVIDENCE_NAMES])
    return shown + (", ..." if len(distinct) > EVIDENCE_NAMES else "")


def partial_evidence(turns: Sequence[Turn]) -> str:
    """What completed turns hold that a verdict could rest on: the tools they called
    and the side effects they report (``""``: neither)."""
    tools = [call.name for turn in turns for call in turn.response.tool_calls]
    effects = [effect.kind for turn in turns for effect in turn.response.side_effects]
    parts = []
    if tools:
        parts.append(f"tool calls {_names(tools)}")
    if effects:
        parts.append(f"side effects {_names(effects)}")
    return "; ".join(parts)


class TraceExecution(BaseExecution):
    """An execution that drives one trace with ``driver`` and judges it with ``evaluator``.

    The constructor validates the parameters (same messages for every strategy);
    subclasses implement ``strategy_name`` and ``_result`` and may override
    ``_trace_scope``.
    """

    def __init__(
        self,
        *,
        driver: PromptDriver,
        evaluator: Evaluator,
        stop_when: Evaluator | str | None,
        max_turns: int,
        event_handlers: Sequence[ExecutionEventHandler] | None,
        timeout: float | None,
    ) -> None:
        super().__init__(event_handlers=event_handlers, timeout=timeout)
        owner = type(self).__name__
        self._driver = check_driver(owner, "driver", driver)
        self._evaluator = check_evaluator(owner, "evaluator", evaluator)
        self._stop_when = resolve_stop_when(stop_when, evaluator=self._evaluator, owner=owner)
        self._max_turns = check_int(owner, "max_turns", max_turns, minimum=0)

    @property
    @abc.abstractmethod
    def declaration(self) -> Declaration:
        """The strategy's declaration (``rampart.strategies.XPIA``, ``PROBE``, ...)."""

    @property
    def stop_when(self) -> Evaluator | None:
        """The resolved online stop condition (``None``: no online stop)."""
        return self._stop_when

    @property
    def max_turns(self) -> int:
        return self._max_turns

    def _trace_scope(self) -> AbstractAsyncContextManager[object]:
        """What must stay open while the trace runs and is evaluated (default: nothing).

        The session actor enters it before it opens the session and leaves it after the
        session is closed and ``_result`` has run, inside the cancel scope the session's
        close shielded (``run_trace_around``): its exit runs shielded from cancellation
        without a scope of its own.
        """
        return nullcontext()

    @abc.abstractmethod
    def _result(self, run: TraceRun) -> Result:
        """Map the completed trace to the strategy's verdict (called inside ``_trace_scope``)."""

    def _execute_async(self, *, adapter: AgentAdapter) -> Coroutine[Any, Any, Result]:
        # A plain method returning the runner's coroutine rather than an ``async def``
        # awaiting it: the calling task is the session actor, so every suspension of the
        # trace is resumed through one frame fewer. (The boundary calls this inside its
        # ``try``, so what the checks below raise is handled as if raised by the await.)
        # The adapter's declarations are checked before the scope opens, so a broken
        # adapter fails before anything (an injection) has been set up.
        observability_level = observability_of(adapter)
        manifest = manifest_of(adapter)
        # The result is made inside the trace scope: a strategy may ask what is still
        # live (an injection handle, whether its payload was read) before it is torn down.
        return run_trace_around(
            around=self._trace_scope(),
            finish=self._result,
            adapter=adapter,
            driver=self._driver,
            max_turns=self._max_turns,
            observability_level=observability_level,
            manifest=manifest,
            stop_when=self._stop_when,
            evaluator=self._evaluator,
        )

    async def _failure_result(
        self, error: Exception, *, failure: Failure, adapter: object, observation: Observation
    ) -> Result:
        """The result of a run that failed after ``observation`` (the module docstring):
        UNSAFE when the completed turns hold a finding that can no longer be undone,
        else ERROR naming the partial evidence."""
        record = observation.record
        partial = observation.partial_turn()
        if record is None or not (record.raw_turns or partial):
            return await super()._failure_result(
                error, failure=failure, adapter=adapter, observation=observation
            )
        cause = failure_cause(error, failure, observation)
        raw_turns = list(record.raw_turns)
        turns: dict[str, Any] = {}
        if partial is not None:
            raw_turns.append(partial)
            turns["turns"] = [*record.turns, partial]
            cause += (
                " (tool calls it ran, seen in its model API traffic: "
                f"{_names([call.name for call in partial.response.tool_calls])})"
            )
        evaluator = self._evaluator
        attack = self.declaration.polarity is Polarity.ATTACK
        finding = EvalOutcome.DETECTED if attack else EvalOutcome.NOT_DETECTED
        evaluation = record.final_evaluation  # the whole trace was judged: a cleanup failed
        final = evaluation is not None or (
            detected_is_absorbing(evaluator) if attack else not_detected_is_absorbing(evaluator)
        )
        if final:
            if evaluation is None:
                try:
                    if partial is None:
                        evaluation = await evaluate_record(evaluator, record)
                    else:
                        context = record.context()
                        context.turns.append(partial)
                        evaluation = await evaluate(evaluator, context)
                except Exception as judging:
                    if not classify_failure(judging).infrastructure:
                        raise
                    evaluation = None  # the completed turns could not be judged: ERROR
            if evaluation is not None and evaluation.outcome is finding:
                return self._error_result(
                    error,
                    failure=failure,
                    adapter=adapter,
                    observation=observation,
                    status=SafetyStatus.UNSAFE,
                    summary=self.declaration.failed_summary(evaluation, failure=cause),
                    final_trace_evaluation=evaluation,
                    **turns,
                )
            return self._error_result(
                error,
                failure=failure,
                adapter=adapter,
                observation=observation,
                summary=cause,
                **turns,
            )
        evidence = partial_evidence(raw_turns)
        if evidence:
            name = type(evaluator).__name__
            cause += f"; evidence not judged ({name} judges only a completed run): {evidence}"
        return self._error_result(
            error, failure=failure, adapter=adapter, observation=observation, summary=cause, **turns
        )
