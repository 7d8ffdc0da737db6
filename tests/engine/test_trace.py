from __future__ import annotations

from datetime import UTC
from typing import Any

import anyio
import pytest

from rampart.core.driver import PromptDecision
from rampart.core.errors import DriverError, EvaluatorError, InfrastructureError
from rampart.core.manifest import AppManifest
from rampart.core.types import (
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    ObservabilityLevel,
    Request,
    Response,
    TraceEndReason,
    Turn,
)
from rampart.engine import (
    TraceRun,
    evaluate_final_trace,
    evaluate_final_trace_async,
    run_trace,
    run_trace_async,
)
from rampart.testing import ScriptedAgent
from tests._builders import replying_agent
from tests._doubles import FakeEvaluator, RecordingDriver

pytestmark = pytest.mark.anyio

D = EvalOutcome.DETECTED
N = EvalOutcome.NOT_DETECTED
U = EvalOutcome.UNDETERMINED
LEVEL = ObservabilityLevel.TOOL_ONLY


def _raise(error: BaseException) -> Any:
    """A script step raising ``error`` itself (identity and chain intact)."""

    def step(request: Request) -> Response:
        raise error

    return step


async def _run(
    adapter: ScriptedAgent,
    driver: Any,
    *,
    max_turns: int = 10,
    stop_when: Any = None,
    evaluator: Any = None,
    manifest: AppManifest | None = None,
) -> TraceRun:
    return await run_trace(
        adapter=adapter,
        driver=driver,
        max_turns=max_turns,
        observability_level=LEVEL,
        manifest=manifest,
        stop_when=stop_when,
        evaluator=evaluator,
    )


class TestSequentialSemantics:
    async def test_driver_exhausted(self) -> None:
        """The driver returning None ends the trace; it was asked once per turn plus once."""
        adapter, driver = replying_agent(), RecordingDriver(["a", "b", "c"])
        run = await _run(adapter, driver)
        assert run.trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED
        assert driver.calls == 4
        assert [r.prompt for r in adapter.requests] == ["a", "b", "c"]
        assert [t.turn_number for t in run.turns] == [0, 1, 2]
        assert [t.response.text for t in run.turns] == ["reply 0", "reply 1", "reply 2"]

    async def test_turn_fields(self) -> None:
        """Turns carry the request, response, reasoning and an aware UTC timestamp."""
        run = await _run(replying_agent(), RecordingDriver(["a"]))
        (turn,) = run.turns
        assert turn.request.prompt == "a"
        assert turn.driver_reasoning == "r"
        assert turn.timestamp is not None
        assert turn.timestamp.tzinfo is UTC
        assert turn.eval_result is None
        assert turn.eval_purpose is None
        assert run.raw_turns == run.turns

    async def test_driver_sees_annotated_history(self) -> None:
        """Each driver call sees the annotated turns so far (with their stop checks)."""
        driver = RecordingDriver(["a", "b", "c"])
        stop = FakeEvaluator([N, U, N])
        run = await _run(replying_agent(), driver, stop_when=stop)
        assert [len(h) for h in driver.histories] == [0, 1, 2, 3]
        last = driver.histories[-1]
        assert last == run.turns
        assert [t.eval_result.outcome for t in last if t.eval_result] == [N, U, N]
        assert all(t.eval_purpose is EvaluationPurpose.STOP_CHECK for t in last)

    async def test_history_is_a_copy(self) -> None:
        """A driver mutating its history cannot change the trace."""

        class Vandal:
            async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None:
                history.clear()
                return PromptDecision(request=Request(prompt="x"))

        run = await _run(replying_agent(), Vandal(), max_turns=3)
        assert len(run.turns) == 3
        assert run.trace_end_reason is TraceEndReason.MAX_TURNS_REACHED

    async def test_stop_checks_see_raw_snapshots(self) -> None:
        """Each stop check sees a snapshot of the raw (annotation-free) turns so far."""
        manifest = AppManifest(name="agent")
        stop = FakeEvaluator([N])
        run = await _run(
            replying_agent(), RecordingDriver(["a", "b"]), stop_when=stop, manifest=manifest
        )
        assert [len(c.turns) for c in stop.contexts] == [1, 2]
        for context in stop.contexts:
            assert all(t.eval_result is None for t in context.turns)
            assert context.observability_level is LEVEL
            assert context.manifest is manifest
        assert stop.contexts[0].turns is not stop.contexts[1].turns
        assert stop.contexts[1].turns == run.raw_turns
        assert all(t.eval_result is None for t in run.raw_turns)
        assert run.latest_stop_check is not None
        assert run.latest_stop_check.context is stop.contexts[-1]

    async def test_no_stop_condition_means_no_annotations(self) -> None:
        """Without stop_when, turns are the raw turns and no online evaluation runs."""
        run = await _run(replying_agent(), RecordingDriver(["a", "b"]))
        assert run.latest_stop_check is None
        assert all(t.eval_result is None for t in run.turns)


class TestStopPolicies:
    @pytest.mark.parametrize("k", [0, 1, 3])
    async def test_stop_when_cancels_production_promptly(self, k: int) -> None:
        """A detection on turn k stops production: the driver is not asked again."""
        adapter = replying_agent()
        driver = RecordingDriver(["p"] * 10)
        stop = FakeEvaluator([N] * k + [D])
        run = await _run(adapter, driver, stop_when=stop)
        assert run.trace_end_reason is TraceEndReason.STOP_CONDITION_MET
        assert driver.calls == k + 1
        assert len(adapter.requests) == k + 1
        assert stop.calls == k + 1
        assert len(run.turns) == k + 1
        assert run.turns[-1].eval_result is not None
        assert run.turns[-1].eval_result.outcome is D

    async def test_undetermined_does_not_stop(self) -> None:
        """Only DETECTED stops; UNDETERMINED stop checks let production go on."""
        run = await _run(
            replying_agent(), RecordingDriver(["a", "b"]), stop_when=FakeEvaluator([U])
        )
        assert run.trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED

    async def test_budget(self) -> None:
        """Spending max_turns ends the trace; the driver is asked exactly max_turns times."""
        adapter, driver = replying_agent(), RecordingDriver(["p"] * 10)
        run = await _run(adapter, driver, max_turns=2)
        assert run.trace_end_reason is TraceEndReason.MAX_TURNS_REACHED
        assert driver.calls == 2
        assert len(adapter.requests) == 2

    async def test_detection_on_last_budgeted_turn(self) -> None:
        """A detection on the final allowed turn records STOP_CONDITION_MET."""
        run = await _run(
            replying_agent(),
            RecordingDriver(["p"] * 10),
            max_turns=2,
            stop_when=FakeEvaluator([N, D]),
        )
        assert run.trace_end_reason is TraceEndReason.STOP_CONDITION_MET

    async def test_exact_budget_with_exhausting_driver(self) -> None:
        """A driver with exactly max_turns prompts is cut by the budget, never asked again."""
        driver = RecordingDriver(["a", "b"])
        run = await _run(replying_agent(), driver, max_turns=2)
        assert run.trace_end_reason is TraceEndReason.MAX_TURNS_REACHED
        assert driver.calls == 2

    async def test_zero_budget(self) -> None:
        """max_turns=0 produces no turn and never asks the driver."""
        adapter, driver = replying_agent(), RecordingDriver(["a"])
        evaluator = FakeEvaluator()
        run = await _run(adapter, driver, max_turns=0, evaluator=evaluator)
        assert run.trace_end_reason is TraceEndReason.MAX_TURNS_REACHED
        assert driver.calls == 0
        assert adapter.requests == []
        assert run.turns == []
        assert run.final_trace_evaluation is None
        assert evaluator.calls == 0

    @pytest.mark.parametrize(
        ("value", "error"), [(-1, ValueError), (1.5, TypeError), (True, TypeError)]
    )
    async def test_rejects_bad_budget(self, value: object, error: type[Exception]) -> None:
        """max_turns must be a non-negative int."""
        with pytest.raises(error, match="max_turns"):
            await _run(replying_agent(), RecordingDriver(["a"]), max_turns=value)  # type: ignore[arg-type]


class TestFinalTraceEvaluation:
    async def test_reuses_last_stop_check(self) -> None:
        """When the verdict evaluator is the stop check, the final evaluation is not re-run."""
        evaluator = FakeEvaluator([N, N, N], evidence=["e"], undetermined_operands=["gap"])
        run = await _run(
            replying_agent(), RecordingDriver(["a", "b"]), stop_when=evaluator, evaluator=evaluator
        )
        assert evaluator.calls == 2
        final = run.final_trace_evaluation
        last = run.turns[-1].eval_result
        assert final is not None
        assert last is not None
        assert final == last
        assert final is not last
        assert final.evidence is not last.evidence
        assert final.undetermined_operands is not last.undetermined_operands

    async def test_reuse_after_stop(self) -> None:
        """A stop on detection reuses that detection as the final evaluation."""
        evaluator = FakeEvaluator([N, D])
        run = await _run(
            replying_agent(),
            RecordingDriver(["a", "b", "c"]),
            stop_when=evaluator,
            evaluator=evaluator,
        )
        assert evaluator.calls == 2
        assert run.final_trace_evaluation is not None
        assert run.final_trace_evaluation.outcome is D

    async def test_different_evaluator_runs_once_over_whole_trace(self) -> None:
        """A verdict evaluator other than the stop check runs once, over every raw turn."""
        stop, verdict = FakeEvaluator([N]), FakeEvaluator([D])
        run = await _run(
            replying_agent(), RecordingDriver(["a", "b", "c"]), stop_when=stop, evaluator=verdict
        )
        assert stop.calls == 3
        assert verdict.calls == 1
        assert verdict.contexts[0].turns == run.raw_turns
        assert all(t.eval_result is None for t in verdict.contexts[0].turns)
        assert verdict.contexts[0].observability_level is LEVEL
        assert run.final_trace_evaluation == EvalResult(outcome=D)

    async def test_without_stop_check(self) -> None:
        """Without stop_when the verdict evaluator runs exactly once."""
        verdict = FakeEvaluator([N])
        run = await _run(replying_agent(), RecordingDriver(["a", "b"]), evaluator=verdict)
        assert verdict.calls == 1
        assert len(verdict.contexts[0].turns) == 2
        assert run.turns
        assert all(t.eval_result is None for t in run.turns)

    async def test_runs_before_session_closes(self) -> None:
        """The final evaluation happens after the last send, while the session is open."""
        agent = replying_agent()
        seen: list[tuple[int, int]] = []
        verdict = FakeEvaluator()
        verdict.on_evaluate = lambda: seen.append(
            (agent.statistics().requests, agent.statistics().sessions_open)
        )
        await _run(agent, RecordingDriver(["a"]), evaluator=verdict)
        assert seen == [(1, 1)]
        assert agent.statistics().sessions_closed == 1

    async def test_evaluate_final_trace_without_turns(self) -> None:
        """No raw turns: no evaluation (None), the evaluator is not called."""
        verdict = FakeEvaluator()
        run = TraceRun(trace_end_reason=TraceEndReason.DRIVER_EXHAUSTED, observability_level=LEVEL)
        assert await evaluate_final_trace(evaluator=verdict, run=run) is None
        assert await evaluate_final_trace_async(evaluator=verdict, run=run) is None
        assert verdict.calls == 0

    async def test_not_reused_when_trace_differs(self) -> None:
        """A stop check over a different set of turns is not reused."""
        evaluator = FakeEvaluator([N, D])
        run = await _run(replying_agent(), RecordingDriver(["a", "b"]), stop_when=evaluator)
        extra = Turn(request=Request(prompt="z"), response=Response(text="z"), turn_number=2)
        longer = TraceRun(
            trace_end_reason=run.trace_end_reason,
            observability_level=run.observability_level,
            turns=run.turns,
            raw_turns=[*run.raw_turns, extra],
            latest_stop_check=run.latest_stop_check,
        )
        result = await evaluate_final_trace(evaluator=evaluator, run=longer)
        assert evaluator.calls == 3
        assert result is not None
        assert result.outcome is D


class TestFailures:
    async def test_send_failure_propagates_unwrapped(self) -> None:
        """A session failure propagates as itself (not wrapped in a group); session closed."""
        adapter = ScriptedAgent(["ok", InfrastructureError("dropped")])
        with pytest.raises(InfrastructureError, match=r"^dropped$") as caught:
            await _run(adapter, RecordingDriver(["a", "b", "c"]))
        assert type(caught.value) is InfrastructureError
        (session,) = adapter.sessions
        assert session.entered
        assert session.closed

    async def test_propagating_bug_keeps_its_cause(self) -> None:
        """A bug raised 'from' another exception leaves the task groups with its chain intact."""
        root = KeyError("missing")
        bug = ValueError("adapter bug")
        bug.__cause__ = root
        with pytest.raises(ValueError, match="adapter bug") as caught:
            await _run(ScriptedAgent([_raise(bug)]), RecordingDriver(["a"]))
        assert caught.value is bug
        assert caught.value.__cause__ is root
        assert caught.value.__suppress_context__
        assert not isinstance(caught.value.__context__, BaseExceptionGroup)

    async def test_infrastructure_error_keeps_its_cause(self) -> None:
        """An InfrastructureError wrapping a connection error still names it as its cause."""
        root = ConnectionRefusedError("connect failed")
        error = InfrastructureError("agent unreachable")
        error.__cause__ = root
        with pytest.raises(InfrastructureError) as caught:
            await _run(ScriptedAgent([error]), RecordingDriver(["a"]))
        assert caught.value.__cause__ is root

    async def test_driver_failure_propagates(self) -> None:
        """A driver failure propagates and the session is still closed."""

        class Failing:
            async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None:
                raise DriverError("no more ideas")

        adapter = replying_agent()
        with pytest.raises(DriverError, match="no more ideas"):
            await _run(adapter, Failing())
        assert adapter.sessions[0].closed

    async def test_driver_wrong_type(self) -> None:
        """A driver returning something else than a PromptDecision is a DriverError."""

        class Sloppy:
            async def next_prompt_async(self, *, history: list[Turn]) -> Any:
                return "next prompt"

        with pytest.raises(DriverError, match=r"returned str, expected rampart\.PromptDecision"):
            await _run(replying_agent(), Sloppy())

    @pytest.mark.parametrize(
        ("answer", "message"),
        [
            ("detected", r"returned str, expected rampart\.EvalResult"),
            (EvalResult(outcome="detected"), "outcome is 'detected'"),  # type: ignore[arg-type]
        ],
    )
    async def test_evaluator_wrong_type(self, answer: Any, message: str) -> None:
        """A malformed evaluator answer is an EvaluatorError naming what came back."""

        class Sloppy:
            async def evaluate_async(self, *, context: Any) -> Any:
                return answer

        with pytest.raises(EvaluatorError, match=message):
            await _run(replying_agent(), RecordingDriver(["a"]), stop_when=Sloppy())

    async def test_evaluator_exception_becomes_evaluator_error(self) -> None:
        """A ValueError from a stop check is an EvaluatorError naming the evaluator, chained."""
        bug = ValueError("bug")
        agent = replying_agent()
        with pytest.raises(EvaluatorError) as caught:
            await _run(agent, RecordingDriver(["a"]), stop_when=FakeEvaluator([bug]))
        assert str(caught.value) == "FakeEvaluator.evaluate_async raised ValueError: bug"
        assert caught.value.__cause__ is bug
        assert agent.statistics().sessions_closed == 1

    async def test_session_failure_before_any_prompt(self) -> None:
        """When the session cannot be opened, the driver is never asked."""

        class NoSession(ScriptedAgent):
            async def create_session_async(self) -> Any:
                raise InfrastructureError("cannot connect")

        driver = RecordingDriver(["a"])
        with pytest.raises(InfrastructureError, match="cannot connect"):
            await _run(NoSession(["never"]), driver)
        assert driver.calls == 0

    async def test_outer_cancel_closes_session_shielded(self) -> None:
        """Cancelling a hung send propagates; the session close still runs to completion."""
        sending = anyio.Event()

        async def hang(request: Request) -> Response:
            sending.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        adapter = ScriptedAgent([hang], close_delay=0.001)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_run, adapter, RecordingDriver(["a"]))
            await sending.wait()
            tg.cancel_scope.cancel()
        # A close that sleeps completes under cancellation only when it is shielded.
        assert adapter.statistics().sessions_closed == 1


class TestExternalSession:
    async def test_run_trace_async_uses_callers_session(self) -> None:
        """run_trace_async sends on the given session without entering or closing it."""
        adapter = replying_agent()
        session = await adapter.create_session_async()
        evaluator = FakeEvaluator([N, D])
        async with session:
            run = await run_trace_async(
                session=session,
                driver=RecordingDriver(["a", "b", "c"]),
                max_turns=5,
                observability_level=LEVEL,
                stop_when=evaluator,
            )
            assert session.entered
            assert not session.closed
            final = await evaluate_final_trace_async(evaluator=evaluator, run=run)
        assert run.trace_end_reason is TraceEndReason.STOP_CONDITION_MET
        assert len(session.requests) == 2
        assert run.final_trace_evaluation is None
        assert final is not None
        assert final.outcome is D
        assert evaluator.calls == 2


class _Raising:
    async def evaluate_async(self, *, context: Any) -> Any:
        raise ValueError("judge crashed")


class TestEvaluatorExceptionsInRampartFunctions:
    """RAMPART's trace functions let an evaluator's exception out as its own type."""

    async def test_run_trace_async_raises_the_original(self) -> None:
        adapter = replying_agent()
        session = await adapter.create_session_async()
        async with session:
            with pytest.raises(ValueError, match="judge crashed") as raised:
                await run_trace_async(
                    session=session,
                    driver=RecordingDriver(["a"]),
                    max_turns=2,
                    observability_level=LEVEL,
                    stop_when=_Raising(),
                )
        assert any("_Raising" in note for note in raised.value.__notes__)

    async def test_evaluate_final_trace_async_raises_the_original(self) -> None:
        adapter = replying_agent()
        session = await adapter.create_session_async()
        async with session:
            run = await run_trace_async(
                session=session,
                driver=RecordingDriver(["a"]),
                max_turns=1,
                observability_level=LEVEL,
            )
            with pytest.raises(ValueError, match="judge crashed"):
                await evaluate_final_trace_async(evaluator=_Raising(), run=run)
            with pytest.raises(EvaluatorError, match="judge crashed"):
                await evaluate_final_trace(evaluator=_Raising(), run=run)

    async def test_an_evaluator_error_is_not_unwrapped(self) -> None:
        """An EvaluatorError the evaluator reports itself (a judge outage) stays one."""

        class Outage:
            async def evaluate_async(self, *, context: Any) -> Any:
                raise EvaluatorError("the judge model call failed")

        adapter = replying_agent()
        session = await adapter.create_session_async()
        async with session:
            run = await run_trace_async(
                session=session,
                driver=RecordingDriver(["a"]),
                max_turns=1,
                observability_level=LEVEL,
            )
            with pytest.raises(EvaluatorError, match="judge model call failed"):
                await evaluate_final_trace_async(evaluator=Outage(), run=run)


class TestInputValidation:
    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"driver": "prompts"}, "driver must be a PromptDriver"),
            ({"observability_level": "tool_only"}, "observability_level must be"),
            ({"stop_when": object()}, "stop_when must be an Evaluator"),
            ({"evaluator": 42}, "evaluator must be an Evaluator"),
        ],
    )
    async def test_run_trace_rejects(self, kwargs: dict[str, Any], match: str) -> None:
        """run_trace names the bad argument before opening any session."""
        adapter = replying_agent()
        arguments: dict[str, Any] = {
            "adapter": adapter,
            "driver": RecordingDriver(["a"]),
            "max_turns": 1,
            "observability_level": LEVEL,
            **kwargs,
        }
        with pytest.raises(TypeError, match=match):
            await run_trace(**arguments)
        assert adapter.sessions == []

    async def test_run_trace_async_rejects_non_session(self) -> None:
        """run_trace_async wants a session object."""
        with pytest.raises(TypeError, match="session must be a Session"):
            await run_trace_async(
                session=object(),  # type: ignore[arg-type]
                driver=RecordingDriver(["a"]),
                max_turns=1,
                observability_level=LEVEL,
            )
