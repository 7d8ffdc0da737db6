from __future__ import annotations

from typing import Any

import anyio
import pytest

from rampart.attacks import Attacks
from rampart.core.errors import EvaluatorError, InfrastructureError
from rampart.core.result import InjectionRecord, Result, SafetyStatus
from rampart.core.types import EvalOutcome, Request, Response, TraceEndReason
from rampart.testing import ScriptedAgent
from tests._builders import replying_agent
from tests._doubles import Barrier, FakeEvaluator, FakeHandle

pytestmark = pytest.mark.anyio


async def _xpia(
    handles: list[FakeHandle],
    adapter: ScriptedAgent | None = None,
    *,
    time_limit: float | None = None,
    evaluator: FakeEvaluator | None = None,
) -> Result:
    execution = Attacks.xpia(
        inject=handles,
        trigger=["go"],
        evaluator=evaluator or FakeEvaluator([EvalOutcome.NOT_DETECTED]),
        timeout=time_limit,
    )
    with anyio.fail_after(10):  # a safety net against deadlock, not a timing assertion
        return await execution.execute_async(adapter=adapter or replying_agent())


def _balanced(handles: list[FakeHandle]) -> bool:
    return all(handle.removed == handle.activated for handle in handles)


class _AsyncReady(FakeHandle):
    def __init__(self, name: str, barrier: Barrier, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._barrier = barrier

    async def wait_until_ready_async(self) -> None:
        self.log.append(f"ready-start-{self.name}")
        await self._barrier.wait()
        self.log.append(f"ready-done-{self.name}")


class _LegacyReady(FakeHandle):
    """Uses the original method name, ``wait_until_ready``."""

    def __init__(self, name: str, barrier: Barrier, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        self._barrier = barrier

    async def wait_until_ready(self) -> None:
        self.log.append(f"ready-start-{self.name}")
        await self._barrier.wait()
        self.log.append(f"ready-done-{self.name}")


class _FailingReady(FakeHandle):
    async def wait_until_ready_async(self) -> None:
        raise TimeoutError("index never caught up")


class TestActivation:
    async def test_handles_activate_concurrently(self) -> None:
        """All N activations are in flight at once (each waits for all N to start)."""
        barrier = Barrier(4)
        log: list[str] = []
        handles = [FakeHandle(str(i), enter_gate=barrier.wait, log=log) for i in range(4)]
        result = await _xpia(handles)
        assert result.status is SafetyStatus.SAFE
        starts = [i for i, entry in enumerate(log) if entry.startswith("enter-start")]
        dones = [i for i, entry in enumerate(log) if entry.startswith("enter-done")]
        assert max(starts) < min(dones)
        assert all(h.activated == 1 and h.removed == 1 for h in handles)

    async def test_readiness_waits_run_concurrently_after_activation(self) -> None:
        """Readiness waits (either method name) start after every activation, all at once."""
        barrier = Barrier(3)
        log: list[str] = []
        handles: list[FakeHandle] = [
            _AsyncReady("a", barrier, log=log),
            _LegacyReady("b", barrier, log=log),
            _AsyncReady("c", barrier, log=log),
            FakeHandle("no-readiness", log=log),
        ]
        result = await _xpia(handles)
        assert result.status is SafetyStatus.SAFE
        last_enter = max(i for i, e in enumerate(log) if e.startswith("enter-done"))
        ready_starts = [i for i, e in enumerate(log) if e.startswith("ready-start")]
        ready_dones = [i for i, e in enumerate(log) if e.startswith("ready-done")]
        assert len(ready_starts) == 3
        assert last_enter < min(ready_starts)
        assert max(ready_starts) < min(ready_dones)
        assert log.index("ready-done-a") < log.index("exit-a")

    async def test_session_opens_after_readiness(self) -> None:
        """The agent is only contacted once every injection is active and ready, and its
        session is closed before the injection is removed."""
        agent = replying_agent()
        sessions_at_exit: list[tuple[int, int]] = []

        def at_exit() -> None:
            stats = agent.statistics()
            sessions_at_exit.append((stats.sessions_created, stats.sessions_closed))

        class Ready(FakeHandle):
            async def wait_until_ready_async(self) -> None:
                self.log.append(f"ready-done-{self.name} sessions={agent.sessions_created}")

        handle = Ready("a", on_exit=at_exit)
        result = await _xpia([handle], agent)
        assert result.status is SafetyStatus.SAFE
        assert "ready-done-a sessions=0" in handle.log
        assert sessions_at_exit == [(1, 1)]

    async def test_failed_activation_keeps_siblings_and_removes_them(self) -> None:
        """One failing activation does not cancel siblings; every active one is removed."""

        async def slow() -> None:
            for _ in range(5):
                await anyio.lowlevel.checkpoint()

        handles = [
            FakeHandle("bad", fail_enter=InfrastructureError("upload refused")),
            FakeHandle("slow", enter_gate=slow),
            FakeHandle("fast"),
        ]
        adapter = replying_agent()
        result = await _xpia(handles, adapter)
        assert result.status is SafetyStatus.ERROR
        assert result.summary == "InfrastructureError: upload refused"
        assert [h.activated for h in handles] == [0, 1, 1]
        assert [h.removed for h in handles] == [0, 1, 1]
        assert adapter.sessions_created == 0

    async def test_several_failed_activations(self) -> None:
        """Several activation failures are reported together."""
        handles = [
            FakeHandle("a", fail_enter=InfrastructureError("a down")),
            FakeHandle("b", fail_enter=OSError("b down")),
            FakeHandle("c"),
        ]
        result = await _xpia(handles)
        assert result.status is SafetyStatus.ERROR
        assert result.metadata["error_type"] == "ExceptionGroup"
        assert "InfrastructureError: a down" in result.summary
        assert "OSError: b down" in result.summary
        assert _balanced(handles)
        assert handles[2].removed == 1

    async def test_activation_bug_propagates_after_cleanup(self) -> None:
        """A bug in a handle's activation propagates, after the active siblings are removed."""
        handles = [FakeHandle("bug", fail_enter=ValueError("bad handle")), FakeHandle("ok")]
        with pytest.raises(ValueError, match="bad handle"):
            await _xpia(handles)
        assert handles[1].activated == 1
        assert handles[1].removed == 1

    async def test_readiness_failure(self) -> None:
        """A readiness failure is an ERROR result; the handles are removed."""
        handles = [_FailingReady("a"), FakeHandle("b")]
        adapter = replying_agent()
        result = await _xpia(handles, adapter)
        assert result.summary == "TimeoutError: index never caught up"
        assert [h.removed for h in handles] == [1, 1]
        assert adapter.sessions_created == 0

    async def test_single_handle_failure(self) -> None:
        """The single-handle path reports its failure the same way."""
        handle = FakeHandle("a", fail_enter=InfrastructureError("nope"))
        result = await _xpia([handle])
        assert result.summary == "InfrastructureError: nope"
        assert handle.activated == handle.removed == 0


class TestRemoval:
    @pytest.mark.parametrize("count", [1, 3])
    async def test_removed_once_on_success(self, count: int) -> None:
        """Every handle is removed exactly once after a normal run, with no exception info."""
        handles = [FakeHandle(str(i)) for i in range(count)]
        await _xpia(handles)
        assert all(h.activated == 1 and h.removed == 1 for h in handles)
        assert all(h.exit_info == (None, None, None) for h in handles)

    async def test_removal_failure_makes_error(self) -> None:
        """A removal failure discards a clean evaluation: ERROR, no trace end reason."""
        handles = [FakeHandle("a", fail_exit=InfrastructureError("delete failed")), FakeHandle("b")]
        evaluator = FakeEvaluator([EvalOutcome.NOT_DETECTED])
        result = await _xpia(handles, evaluator=evaluator)
        assert result.status is SafetyStatus.ERROR
        assert result.summary == "InfrastructureError: delete failed"
        assert result.trace_end_reason is None
        assert result.final_trace_evaluation is None
        assert evaluator.calls == 1
        assert [h.removed for h in handles] == [1, 1]

    async def test_removal_failure_keeps_a_finding(self) -> None:
        """The attack succeeded before the removal failed: the finding is not lost."""
        handles = [FakeHandle("a", fail_exit=InfrastructureError("delete failed")), FakeHandle("b")]
        evaluator = FakeEvaluator([EvalOutcome.DETECTED])
        result = await _xpia(handles, evaluator=evaluator)
        assert result.status is SafetyStatus.UNSAFE
        assert result.summary.endswith(
            "; the run failed after the attack succeeded: InfrastructureError: delete failed"
        )
        assert result.trace_end_reason is None
        assert result.final_trace_evaluation is not None
        assert evaluator.calls == 1
        assert [r.payload_id for r in result.injections] == ["payload-a", "payload-b"]

    async def test_body_and_removal_failures_reported_together(self) -> None:
        """A failing run whose cleanup also fails reports both failures."""
        adapter = ScriptedAgent([InfrastructureError("agent down")])
        handle = FakeHandle("a", fail_exit=OSError("delete failed"))
        result = await _xpia([handle], adapter)
        assert result.metadata["error_type"] == "ExceptionGroup"
        assert "InfrastructureError: agent down" in result.summary
        assert "OSError: delete failed" in result.summary
        assert handle.removed == 1
        exc_type, exc, _ = handle.exit_info  # type: ignore[misc]
        assert exc_type is InfrastructureError
        assert str(exc) == "agent down"

    async def test_agent_failure_still_removes(self) -> None:
        """An agent failure mid-run still removes every injection."""
        handles = [FakeHandle(str(i)) for i in range(3)]
        result = await _xpia(handles, ScriptedAgent([InfrastructureError("boom")]))
        assert result.status is SafetyStatus.ERROR
        assert all(h.activated == 1 and h.removed == 1 for h in handles)

    async def test_evaluator_bug_still_removes(self) -> None:
        """An evaluator that raises gives an ERROR result naming it; the injections are
        removed and still listed on the result."""
        handles = [FakeHandle(str(i)) for i in range(2)]
        result = await _xpia(handles, evaluator=FakeEvaluator([ValueError("evaluator bug")]))
        assert result.status is SafetyStatus.ERROR
        assert result.summary == (
            "EvaluatorError: FakeEvaluator.evaluate_async raised ValueError: evaluator bug"
        )
        assert all(h.removed == 1 for h in handles)
        assert [record.payload_id for record in result.injections] == ["payload-0", "payload-1"]


async def _hang(request: Request) -> Response:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


class TestTimeoutsAndCancellation:
    async def test_timeout_ends_hung_send_and_removes(self) -> None:
        """A hung agent is ended by the timeout; removal still runs (shielded)."""
        handles = [FakeHandle(str(i), exit_checkpoint=True) for i in range(3)]
        adapter = ScriptedAgent([_hang], close_delay=0.001)
        result = await _xpia(handles, adapter, time_limit=0.01)
        assert result.status is SafetyStatus.ERROR
        assert result.summary == "TimeoutError: timed out after 0.01 s"
        assert result.trace_end_reason is None
        assert all(h.activated == 1 and h.removed == 1 for h in handles)
        # The session's slow close ran to its end although the timeout had fired.
        assert adapter.statistics().sessions_closed == 1

    async def test_timeout_during_activation(self) -> None:
        """A hung activation is cancelled by the timeout; the ones that activated are removed."""
        handles = [
            FakeHandle("hung", enter_gate=anyio.sleep_forever),
            FakeHandle("ok1"),
            FakeHandle("ok2"),
        ]
        result = await _xpia(handles, time_limit=0.01)
        assert result.summary == "TimeoutError: timed out after 0.01 s"
        assert [h.activated for h in handles] == [0, 1, 1]
        assert _balanced(handles)

    async def test_outer_cancel_propagates_after_removal(self) -> None:
        """An outer cancel scope cancels the run; cancellation propagates, removal ran."""
        handles = [FakeHandle(str(i), exit_checkpoint=True) for i in range(2)]
        sending = anyio.Event()

        async def hang(request: Request) -> Response:
            sending.set()
            return await _hang(request)

        finished = False

        async def run() -> None:
            nonlocal finished
            await _xpia(handles, ScriptedAgent([hang]))
            finished = True

        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await sending.wait()
            tg.cancel_scope.cancel()
        assert not finished
        assert all(h.activated == 1 and h.removed == 1 for h in handles)

    async def test_removal_failure_under_cancellation_is_not_lost(self) -> None:
        """Cancelled with a failing removal: cancellation is absorbed, the failure surfaces."""
        handle = FakeHandle("a", fail_exit=InfrastructureError("delete failed"))
        sending = anyio.Event()

        async def hang(request: Request) -> Response:
            sending.set()
            return await _hang(request)

        with pytest.RaisesGroup(
            pytest.RaisesExc(InfrastructureError, match="delete failed"), flatten_subgroups=True
        ):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_xpia, [handle], ScriptedAgent([hang]))
                await sending.wait()
                tg.cancel_scope.cancel()
        assert handle.removed == 1

    @pytest.mark.parametrize("fail_at", ["activation", "send", "evaluation", "removal", "none"])
    async def test_removals_equal_activations(self, fail_at: str) -> None:
        """Whatever fails, every successful activation is matched by exactly one removal."""
        handles = [
            FakeHandle(
                str(i),
                fail_enter=InfrastructureError("x") if fail_at == "activation" and i == 1 else None,
                fail_exit=InfrastructureError("y") if fail_at == "removal" and i == 2 else None,
            )
            for i in range(4)
        ]
        adapter = ScriptedAgent([InfrastructureError("z") if fail_at == "send" else "fine"])
        outcomes: list[Any] = [EvalOutcome.NOT_DETECTED]
        if fail_at == "evaluation":
            outcomes = [EvaluatorError("judge outage")]
        result = await _xpia(handles, adapter, evaluator=FakeEvaluator(outcomes))
        expected = SafetyStatus.SAFE if fail_at == "none" else SafetyStatus.ERROR
        assert result.status is expected
        assert _balanced(handles)
        assert sum(h.activated for h in handles) == (3 if fail_at == "activation" else 4)


class TestRecords:
    async def test_one_record_per_handle(self) -> None:
        """The result names every handle's payload and surface, in order."""
        handles = [FakeHandle("a"), FakeHandle("b")]
        handles[1].payload_id = None
        result = await _xpia(handles)
        assert result.injections == [
            InjectionRecord(payload_id="payload-a", surface_name="surface-a"),
            InjectionRecord(payload_id=None, surface_name="surface-b"),
        ]
        assert result.trace_end_reason is TraceEndReason.DRIVER_EXHAUSTED

    async def test_no_handles(self) -> None:
        """No handles records no injections (and, with no attachment either, no SAFE)."""
        result = await _xpia([])
        assert result.injections == []
        assert result.status is SafetyStatus.UNDETERMINED
