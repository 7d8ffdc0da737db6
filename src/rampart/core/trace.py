"""The trace runner: one task group per execution that produces and evaluates a trace.

``run_trace`` opens one task group holding

* the **session actor** (``rampart.core._actor``), which owns the adapter's session,
  takes prompt decisions over a memory channel and emits one raw turn event per
  response, and
* the **evaluator pipeline** (``rampart.core._pipeline``), which consumes the bounded
  stream of turn events, runs the online stop check and applies the stop policies,

while the calling task produces turns: it asks the driver for the next prompt (showing
it the annotated turns so far), hands it to the actor and waits for the pipeline's
acknowledgement. Production runs inside a cancel scope (``TurnProduction``); the
pipeline cancels it on a detection or when the turn budget is spent, and why
production stopped is read from that state after the scope has exited.

The observable behaviour is exactly the sequential algorithm: for each turn up to
``max_turns``, ask the driver (``None`` ends the trace: DRIVER_EXHAUSTED), send, record
the raw turn, stop-check it if a stop condition is set (DETECTED ends the trace:
STOP_CONDITION_MET); a spent budget ends it with MAX_TURNS_REACHED. Then the verdict
evaluator runs once over the completed raw trace, while the session is still open,
reusing the last stop check when it was the same evaluator on the identical trace.

The runner converts no exceptions: failures propagate to the execution boundary
(``BaseExecution.execute_async``). A failure in one of its tasks propagates as that
exception, not wrapped in a group.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import partial
from typing import TYPE_CHECKING

import anyio
import attrs

from rampart.core._actor import AdapterSession, serve_session
from rampart.core._exceptions import raise_unwrapped
from rampart.core._pipeline import EvaluationRecord, TraceRecord, evaluate, run_pipeline
from rampart.core._policies import TurnProduction, check_max_turns
from rampart.core.driver import PromptDecision
from rampart.core.errors import DriverError
from rampart.core.manifest import AppManifest
from rampart.core.types import EvalResult, ObservabilityLevel, TraceEndReason, Turn

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from rampart.core.adapter import AgentAdapter, Session
    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator

__all__ = [
    "EvaluationRecord",
    "TraceRun",
    "evaluate_final_trace",
    "evaluate_final_trace_async",
    "run_trace",
    "run_trace_async",
]


@attrs.frozen(kw_only=True)
class TraceRun:
    """A completed trace.

    ``turns`` is the annotated view (stop checks attached, what drivers and reports
    see); ``raw_turns`` the annotation-free turns evaluators see.
    ``latest_stop_check`` is the last online evaluation, if any.
    ``final_trace_evaluation`` is the verdict evaluator's output over the whole raw
    trace (``None`` when no turn was produced or no verdict evaluator was given).
    """

    trace_end_reason: TraceEndReason
    observability_level: ObservabilityLevel
    manifest: AppManifest | None = None
    turns: list[Turn] = attrs.field(factory=list)
    raw_turns: list[Turn] = attrs.field(factory=list)
    latest_stop_check: EvaluationRecord | None = None
    final_trace_evaluation: EvalResult | None = None


async def _next_decision(driver: PromptDriver, history: list[Turn]) -> PromptDecision | None:
    decision = await driver.next_prompt_async(history=list(history))
    if decision is not None and not isinstance(decision, PromptDecision):
        raise DriverError(
            f"{type(driver).__name__}.next_prompt_async returned {type(decision).__name__}, "
            "expected rampart.PromptDecision or None"
        )
    return decision


async def _produce(
    driver: PromptDriver,
    requests: MemoryObjectSendStream[PromptDecision],
    acks: MemoryObjectReceiveStream[Turn],
    production: TurnProduction,
) -> None:
    """Ask the driver, hand the prompt to the actor, wait for the pipeline; repeat."""
    history: list[Turn] = []
    while True:
        decision = await _next_decision(driver, history)
        if decision is None:
            production.finish(TraceEndReason.DRIVER_EXHAUSTED)
            return
        try:
            requests.send_nowait(decision)
        except anyio.WouldBlock:
            await requests.send(decision)
        history.append(await acks.receive())


def _detached(result: EvalResult) -> EvalResult:
    """A copy of ``result`` that shares no mutable list with the turn it annotates."""
    return attrs.evolve(
        result,
        evidence=list(result.evidence),
        undetermined_operands=list(result.undetermined_operands),
    )


def _covers_trace(record: EvaluationRecord, run: TraceRun) -> bool:
    context = record.context
    return (
        context.observability_level is run.observability_level
        and context.manifest is run.manifest
        and len(context.turns) == len(run.raw_turns)
        and all(seen is turn for seen, turn in zip(context.turns, run.raw_turns, strict=True))
    )


async def evaluate_final_trace(*, evaluator: Evaluator, run: TraceRun) -> EvalResult | None:
    """Evaluate the completed raw trace once; ``None`` when there are no turns.

    When the last stop check was this very evaluator object on an identical context
    (same observability level, same manifest object, same raw turn objects), its
    result is reused (as a detached copy) instead of calling the evaluator again.
    """
    if not run.raw_turns:
        return None
    latest = run.latest_stop_check
    if latest is not None and latest.evaluator is evaluator and _covers_trace(latest, run):
        return _detached(latest.result)
    record = TraceRecord(observability_level=run.observability_level, manifest=run.manifest)
    record.raw_turns = run.raw_turns
    return await evaluate(evaluator, record.context())


async def _run(
    *,
    open_session: Callable[[], AbstractAsyncContextManager[Session]],
    driver: PromptDriver,
    max_turns: int,
    observability_level: ObservabilityLevel,
    manifest: AppManifest | None,
    stop_when: Evaluator | None,
    evaluator: Evaluator | None,
) -> TraceRun:
    production = TurnProduction()
    record = TraceRecord(observability_level=observability_level, manifest=manifest)
    request_send, request_receive = anyio.create_memory_object_stream[PromptDecision](1)
    event_send, event_receive = anyio.create_memory_object_stream[Turn](1)
    ack_send, ack_receive = anyio.create_memory_object_stream[Turn](1)
    pipeline = partial(
        run_pipeline,
        event_receive,
        ack_send,
        record=record,
        stop_when=stop_when,
        max_turns=max_turns,
        production=production,
    )
    try:
        async with anyio.create_task_group() as tg:
            await tg.start(serve_session, open_session, request_receive, event_send)
            tg.start_soon(pipeline)
            if max_turns == 0:
                production.finish(TraceEndReason.MAX_TURNS_REACHED)
            else:
                with production.scope:
                    await _produce(driver, request_send, ack_receive, production)
            reason = production.reason
            if reason is None:  # pragma: no cover - production only ends through a policy
                raise AssertionError("turn production ended without a recorded reason")
            run = TraceRun(
                trace_end_reason=reason,
                observability_level=observability_level,
                manifest=manifest,
                turns=record.turns,
                raw_turns=record.raw_turns,
                latest_stop_check=record.latest_stop_check,
            )
            if evaluator is not None:
                # While the session (and any injection) is still live.
                evaluation = await evaluate_final_trace(evaluator=evaluator, run=run)
                run = attrs.evolve(run, final_trace_evaluation=evaluation)
            # Closing the request channel lets the actor close the session, which ends
            # the turn-event stream and with it the pipeline.
            request_send.close()
    except BaseExceptionGroup as group:
        raise_unwrapped(group)
    finally:
        # The runner owns every stream end; closing is idempotent.
        for end in (
            request_send,
            request_receive,
            event_send,
            event_receive,
            ack_send,
            ack_receive,
        ):
            end.close()
    return run


async def run_trace(
    *,
    adapter: AgentAdapter,
    driver: PromptDriver,
    max_turns: int,
    observability_level: ObservabilityLevel,
    manifest: AppManifest | None = None,
    stop_when: Evaluator | None = None,
    evaluator: Evaluator | None = None,
) -> TraceRun:
    """Open a session on ``adapter``, produce the trace, evaluate it, close the session.

    ``evaluator`` (the verdict evaluator) runs once over the completed trace before the
    session closes; its output is ``TraceRun.final_trace_evaluation``.
    """
    return await _run(
        open_session=lambda: AdapterSession(adapter),
        driver=driver,
        max_turns=check_max_turns(max_turns),
        observability_level=observability_level,
        manifest=manifest,
        stop_when=stop_when,
        evaluator=evaluator,
    )


async def run_trace_async(
    *,
    session: Session,
    driver: PromptDriver,
    max_turns: int,
    observability_level: ObservabilityLevel,
    stop_when: Evaluator | None = None,
    manifest: AppManifest | None = None,
) -> TraceRun:
    """Produce a trace over a session the caller has already opened (and will close).

    For custom strategies; the built-in ones use ``run_trace``. Follow it with
    ``evaluate_final_trace_async`` before leaving the session.
    """
    return await _run(
        open_session=lambda: nullcontext(session),
        driver=driver,
        max_turns=check_max_turns(max_turns),
        observability_level=observability_level,
        manifest=manifest,
        stop_when=stop_when,
        evaluator=None,
    )


async def evaluate_final_trace_async(*, evaluator: Evaluator, run: TraceRun) -> EvalResult | None:
    """The original name of ``evaluate_final_trace``; same behaviour."""
    return await evaluate_final_trace(evaluator=evaluator, run=run)
