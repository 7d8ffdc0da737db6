"""The trace runner: one task group per execution that produces and evaluates a trace.

``run_trace`` runs up to three tasks, each the owner of one thing:

* the **session actor** (``rampart.engine._actor``) is the calling task and owns the
  adapter's session and its cancellation: it opens the session, takes prompt
  decisions from its request mailbox one at a time, sends them and emits one raw turn
  event per response, and closes the session (shielded) when production is over. It
  is the only task that touches the session, so a timeout or a stop cancels a send in
  flight there while the turns so far survive in the other tasks.
* the **producer**, a child task started only once the session is open (so no driver
  is asked for a prompt that no session could receive), owns production: it asks the
  driver for the next prompt (showing it the annotated turns so far), hands it to the
  actor and waits for the turn; when production ends it runs the verdict evaluator
  and closes the request mailbox, which lets the actor close the session.
* the **evaluator pipeline** (``rampart.engine._pipeline``) owns the stop decision
  and the trace record: it records each turn event, runs the online stop check and
  applies the stop policies. It runs as a task of its own only when there is a stop
  check; production then runs inside a cancel scope (``TurnProduction``) that the
  pipeline cancels on a detection or when the turn budget is spent, and why
  production stopped is read from that state after the scope has exited. Without a
  stop check there is no pipeline task: the producer applies the pipeline's step
  itself (same behaviour, one task and one hand-off per turn fewer).

The tasks hand items over through one-slot mailboxes (``rampart.engine._mailbox``):
production is strictly one prompt, one turn at a time, so nothing ever queues.

Each task waits for the one it handed over to, so a trace keeps one order of events,
which is what callers observe: for each turn up to ``max_turns``, ask the driver
(``None`` ends the trace: DRIVER_EXHAUSTED), send, record the raw turn, stop-check it
if a stop condition is set (DETECTED ends the trace: STOP_CONDITION_MET); a spent
budget ends it with MAX_TURNS_REACHED. Then the verdict evaluator runs once over the
completed raw trace, while the session is still open, reusing the last stop check
when it was the same evaluator on the identical trace. The next turn waits for the
stop check on purpose: the pipeline cancels production *before* it acknowledges the
turn, so after a detection on turn k the driver has been asked, and the agent sent,
exactly k + 1 times (``docs/executions.md``). Evaluation therefore never overlaps the
conversation within one trace; what the structure adds is ownership: the session and
the cancellation of a send in flight belong to the actor alone (a hung agent is
cancelled there, the producer's turns survive and the close still runs), production
to the producer, the stop decision to the pipeline.

The runner converts no exceptions: failures propagate to the execution boundary
(``BaseExecution.execute_async``), which still sees the turns completed so far (the
trace record is registered with the run's ``Observation``, ``rampart.engine._observed``).
A failure in one of its tasks propagates as that exception, not wrapped in a group.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, TypeVar

import anyio
import attrs

from rampart._checks import check_instance, check_int, check_method
from rampart._text import safe_str_list
from rampart.core._internal import (
    check_driver,
    check_evaluator,
    dataclass_compatible,
    evaluate_checked,
    evaluator_raised,
    next_decision,
)
from rampart.core.errors import EvaluatorError
from rampart.core.manifest import AppManifest
from rampart.core.types import (
    EvalContext,
    EvalResult,
    ObservabilityLevel,
    Request,
    Response,
    TraceEndReason,
    Turn,
)
from rampart.engine._actor import AdapterSession, serve_session
from rampart.engine._exceptions import raise_unwrapped
from rampart.engine._mailbox import Mailbox
from rampart.engine._observed import observe
from rampart.engine._pipeline import EvaluationRecord, Pipeline, TraceRecord, evaluate
from rampart.engine._policies import TurnProduction

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from contextlib import AbstractAsyncContextManager

    from anyio.abc import TaskGroup

    from rampart.core.adapter import AgentAdapter, Session
    from rampart.core.driver import PromptDecision, PromptDriver
    from rampart.core.evaluator import Evaluator

T = TypeVar("T")

__all__ = [
    "EvaluationRecord",
    "TraceRun",
    "evaluate_final_trace",
    "evaluate_final_trace_async",
    "evaluate_record",
    "evaluate_terminal_async",
    "evaluate_turn_async",
    "run_trace",
    "run_trace_async",
]


@dataclass_compatible
@attrs.define(kw_only=True)
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


class _Producer:
    """The producing task of one trace run.

    ``run`` asks the driver for the next prompt (showing it the annotated turns so
    far), hands it to the actor and waits for the turn, until the driver has nothing
    more to say or a stop policy ends production. Then it runs the verdict evaluator
    over the completed trace, while the session is still open, and closes the request
    mailbox, which lets the actor close the session. ``reason`` and ``evaluation`` are
    what it found. (An object rather than a closure: at 200 concurrent trials every
    captured name would be one more cell for the garbage collector to walk.)
    """

    __slots__ = (
        "_driver",
        "_evaluator",
        "_max_turns",
        "_pipeline",
        "_production",
        "_replies",
        "_requests",
        "evaluation",
        "reason",
    )

    def __init__(
        self,
        *,
        driver: PromptDriver,
        max_turns: int,
        pipeline: Pipeline,
        production: TurnProduction | None,
        evaluator: Evaluator | None,
        requests: Mailbox[PromptDecision],
        replies: Mailbox[Turn],
    ) -> None:
        self._driver = driver
        self._max_turns = max_turns
        self._pipeline = pipeline
        self._production = production
        self._evaluator = evaluator
        self._requests = requests
        self._replies = replies
        self.reason: TraceEndReason | None = None
        self.evaluation: EvalResult | None = None

    async def run(self) -> None:
        production = self._production
        if self._max_turns == 0:
            self.reason = TraceEndReason.MAX_TURNS_REACHED
        elif production is None:
            # Nothing to evaluate online: the pipeline step runs here, inline.
            self.reason = await self._produce(self._pipeline)
        else:
            with production.scope:
                production.finish(await self._produce(None))
            self.reason = production.reason
        if self._evaluator is not None:
            # While the session (and any injection) is still live. Kept on the record
            # too: a cleanup that fails after it still leaves the verdict's evidence.
            record = self._pipeline.record
            self.evaluation = record.final_evaluation = await evaluate_record(
                self._evaluator, record
            )
        self._requests.close()  # the actor stops serving, which ends the turn-event stream

    async def _produce(self, inline: Pipeline | None) -> TraceEndReason:
        """The production loop; returns why production ended by itself.

        ``replies`` carries acknowledged (annotated) turns from the pipeline task, or,
        when ``inline`` is given, raw turn events straight from the actor, which this
        task runs through the pipeline step itself. (The pipeline task ends
        production by cancelling the production scope instead.)
        """
        driver, requests, replies = self._driver, self._requests, self._replies
        history: list[Turn] = []
        while True:
            # Through the driver contract check: DriverContractError / DriverError naming it.
            decision = await next_decision(driver, history=list(history))
            if decision is None:
                return TraceEndReason.DRIVER_EXHAUSTED
            requests.put(decision)
            turn = await replies.get()
            if inline is not None:
                turn, stop = await inline.step(turn)
                if stop is not None:
                    return stop
            history.append(turn)


def _detached(result: EvalResult) -> EvalResult:
    """A copy of ``result`` that shares no mutable list with the turn it annotates.

    Its lists are rebuilt with ``safe_str_list``: a bare string stays one entry (it
    is not split into characters), whatever the stop check's result was given since.
    """
    return attrs.evolve(
        result,
        evidence=safe_str_list(result.evidence),
        undetermined_operands=safe_str_list(result.undetermined_operands),
    )


def _covers(check: EvaluationRecord, record: TraceRecord) -> bool:
    """Whether ``check`` was made on exactly the trace ``record`` holds."""
    context = check.context
    return (
        context.observability_level is record.observability_level
        and context.manifest is record.manifest
        and len(context.turns) == len(record.raw_turns)
        and all(seen is turn for seen, turn in zip(context.turns, record.raw_turns, strict=True))
    )


async def evaluate_record(evaluator: Evaluator, record: TraceRecord) -> EvalResult | None:
    """``evaluator`` over the raw turns ``record`` holds (``None``: none), reusing the
    last stop check when it was this evaluator on the identical trace."""
    if not record.raw_turns:
        return None
    latest = record.latest_stop_check
    if latest is not None and latest.evaluator is evaluator and _covers(latest, record):
        return _detached(latest.result)
    return await evaluate(evaluator, record.context())


async def evaluate_final_trace(*, evaluator: Evaluator, run: TraceRun) -> EvalResult | None:
    """Evaluate the completed raw trace once; ``None`` when there are no turns.

    When the last stop check was this very evaluator object on an identical context
    (same observability level, same manifest object, same raw turn objects), its
    result is reused (as a detached copy) instead of calling the evaluator again.
    """
    record = TraceRecord(observability_level=run.observability_level, manifest=run.manifest)
    record.raw_turns = run.raw_turns
    record.latest_stop_check = run.latest_stop_check
    return await evaluate_record(evaluator, record)


async def _run(
    *,
    owner: str,
    session_scope: AbstractAsyncContextManager[Session],
    driver: PromptDriver,
    max_turns: int,
    observability_level: ObservabilityLevel,
    manifest: AppManifest | None,
    stop_when: Evaluator | None,
    evaluator: Evaluator | None,
) -> TraceRun:
    """The shared body of ``run_trace`` / ``run_trace_async``; validates their arguments."""
    driver = check_driver(owner, "driver", driver)
    max_turns = check_int(owner, "max_turns", max_turns, minimum=0)
    observability_level = check_instance(
        owner,
        "observability_level",
        observability_level,
        ObservabilityLevel,
        expected="an ObservabilityLevel",
    )
    if stop_when is not None:
        stop_when = check_evaluator(owner, "stop_when", stop_when)
    if evaluator is not None:
        evaluator = check_evaluator(owner, "evaluator", evaluator)
    return await _trace(
        session_scope=session_scope,
        driver=driver,
        max_turns=max_turns,
        observability_level=observability_level,
        manifest=manifest,
        stop_when=stop_when,
        evaluator=evaluator,
    )


#: The backend's own ``Event`` class (see ``rampart.engine._mailbox``) by the class of
#: the backend's task group, which names the backend: finding it by making an
#: ``anyio.Event()`` cost every execution about a microsecond.
_EVENT_CLASSES: dict[type[object], Callable[[], anyio.Event]] = {}


def _event_class(task_group: TaskGroup) -> Callable[[], anyio.Event]:
    """The running backend's ``Event`` class, looked up once per backend."""
    backend = type(task_group)
    event = _EVENT_CLASSES.get(backend)
    if event is None:
        event = _EVENT_CLASSES[backend] = type(anyio.Event())
    return event


async def _trace(
    *,
    session_scope: AbstractAsyncContextManager[Session],
    driver: PromptDriver,
    max_turns: int,
    observability_level: ObservabilityLevel,
    manifest: AppManifest | None,
    stop_when: Evaluator | None,
    evaluator: Evaluator | None,
) -> TraceRun:
    """Produce and evaluate one trace over ``session_scope`` (callers checked the arguments)."""
    record = TraceRecord(observability_level=observability_level, manifest=manifest)
    observe(record)  # a failure's boundary still sees the turns completed so far
    pipeline = Pipeline(record=record, stop_when=stop_when, max_turns=max_turns)
    task_group = anyio.create_task_group()
    event = _event_class(task_group)
    requests: Mailbox[PromptDecision] = Mailbox(event)
    events: Mailbox[Turn] = Mailbox(event)
    production = None if stop_when is None else TurnProduction()
    # The producer reads raw turn events itself when there is no online stop check
    # (applying the pipeline step inline), else the pipeline task's acknowledgements.
    replies: Mailbox[Turn] = events if production is None else Mailbox(event)
    producer = _Producer(
        driver=driver,
        max_turns=max_turns,
        pipeline=pipeline,
        production=production,
        evaluator=evaluator,
        requests=requests,
        replies=replies,
    )
    # The calling task is the session actor. Production starts once the session is
    # open, so no driver is asked for a prompt that no session could receive. The
    # session's cleanup sees a failure as itself, not as the task group's wrapper.
    async with session_scope as session:
        try:
            async with task_group as tg:
                tg.start_soon(producer.run)
                if production is not None:
                    tg.start_soon(pipeline.run, events, replies, production)
                await serve_session(session, requests, events, record)
        except BaseExceptionGroup as group:
            raise_unwrapped(group)
    reason = producer.reason
    if reason is None:  # pragma: no cover - production only ends through a policy
        raise AssertionError("turn production ended without a recorded reason")
    return TraceRun(
        trace_end_reason=reason,
        observability_level=observability_level,
        manifest=manifest,
        turns=record.turns,
        raw_turns=record.raw_turns,
        latest_stop_check=record.latest_stop_check,
        final_trace_evaluation=producer.evaluation,
    )


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
        owner="run_trace",
        session_scope=AdapterSession(adapter),
        driver=driver,
        max_turns=max_turns,
        observability_level=observability_level,
        manifest=manifest,
        stop_when=stop_when,
        evaluator=evaluator,
    )


async def run_trace_around(
    *,
    around: AbstractAsyncContextManager[object],
    finish: Callable[[TraceRun], T],
    adapter: AgentAdapter,
    driver: PromptDriver,
    max_turns: int,
    observability_level: ObservabilityLevel,
    manifest: AppManifest | None,
    stop_when: Evaluator | None,
    evaluator: Evaluator | None,
) -> T:
    """``finish(run_trace(...))`` inside ``around`` (a strategy's trace scope).

    ``around`` (e.g. XPIA's live injections) is entered before the session is opened
    and left after ``finish`` has mapped the completed trace, so a strategy can still
    ask what is live (whether an injection's payload was read) while it builds its
    result. The session's close and leaving ``around`` share one shielded cancel scope
    (see ``AdapterSession``). The arguments are not checked again: ``TraceExecution``
    checked them when it was built.
    """
    with anyio.CancelScope() as cleanup:  # shielded once the session starts closing
        async with around:
            run = await _trace(
                session_scope=AdapterSession(adapter, cleanup=cleanup),
                driver=driver,
                max_turns=max_turns,
                observability_level=observability_level,
                manifest=manifest,
                stop_when=stop_when,
                evaluator=evaluator,
            )
            return finish(run)
    raise AssertionError("the cleanup scope is never cancelled")  # pragma: no cover


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
    check_method(
        "run_trace_async",
        "session",
        session,
        "send_async",
        expected="a Session (with async send_async)",
    )
    with _evaluator_exceptions_as_raised():
        return await _run(
            owner="run_trace_async",
            session_scope=nullcontext(session),
            driver=driver,
            max_turns=max_turns,
            observability_level=observability_level,
            manifest=manifest,
            stop_when=stop_when,
            evaluator=None,
        )


@contextmanager
def _evaluator_exceptions_as_raised() -> Iterator[None]:
    """RAMPART's trace functions let an evaluator's exception propagate as its own
    type: a custom strategy catches what its evaluator raises. The note keeps the
    evaluator's name; inside an execution the boundary still makes it an ERROR."""
    try:
        yield
    except EvaluatorError as error:
        original = evaluator_raised(error)
        if original is None:
            raise
        original.add_note(f"rampart: {error}")
        raise original from None


async def evaluate_final_trace_async(*, evaluator: Evaluator, run: TraceRun) -> EvalResult | None:
    """The original name of ``evaluate_final_trace``: the same, except that an
    exception the evaluator raises propagates as its own type (as in RAMPART)."""
    with _evaluator_exceptions_as_raised():
        return await evaluate_final_trace(evaluator=evaluator, run=run)


async def evaluate_terminal_async(*, evaluator: Evaluator, run: TraceRun) -> EvalResult | None:
    """RAMPART's intermediate name of ``evaluate_final_trace``; as
    ``evaluate_final_trace_async``."""
    with _evaluator_exceptions_as_raised():
        return await evaluate_final_trace(evaluator=evaluator, run=run)


async def evaluate_turn_async(
    *,
    evaluator: Evaluator,
    history: list[Turn],
    request: Request,
    response: Response,
    turn_number: int,
    driver_reasoning: str = "",
    manifest: AppManifest | None = None,
    observability_level: ObservabilityLevel | None = None,
) -> Turn:
    """RAMPART 0.1.0's per-turn helper: the new turn, evaluated over ``[*history, turn]``.

    Builds the turn, runs ``evaluator`` (through the evaluator contract check, so a
    raising evaluator is an ``EvaluatorError`` naming it) on a context holding the
    history and the new turn, and returns the turn with ``eval_result`` attached.
    New code evaluates the whole trace once (``evaluate_final_trace``).
    """
    owner = "evaluate_turn_async"
    evaluator = check_evaluator(owner, "evaluator", evaluator)
    check_instance(owner, "request", request, Request, expected="a Request")
    check_instance(owner, "response", response, Response, expected="a Response")
    turn_number = check_int(owner, "turn_number", turn_number, minimum=0)
    turn = Turn(
        request=request,
        response=response,
        turn_number=turn_number,
        driver_reasoning=driver_reasoning,
    )
    context = EvalContext(
        turns=[*history, turn], manifest=manifest, observability_level=observability_level
    )
    result = await evaluate_checked(evaluator, context=context)
    return attrs.evolve(turn, eval_result=result)
