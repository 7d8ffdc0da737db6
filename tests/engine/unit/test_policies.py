from __future__ import annotations

import math

import anyio
import pytest

from rampart.core.errors import InfrastructureError
from rampart.core.types import TraceEndReason
from rampart.engine._policies import (
    TurnProduction,
    deadline,
    format_seconds,
    resolve_stop_when,
)
from rampart.evaluators import ResponseContains, ResponseScope, SideEffectOccurred, ToolCalled
from tests._doubles import FakeEvaluator

STOP = TraceEndReason.STOP_CONDITION_MET


class TestTurnProduction:
    @pytest.mark.anyio
    async def test_stop_cancels_and_records(self) -> None:
        """stop() cancels the scope; the reason is read after the scope exits."""
        production = TurnProduction()
        with production.scope:
            production.stop(STOP)
            await anyio.sleep_forever()
        assert production.scope.cancelled_caught
        assert production.reason is STOP

    @pytest.mark.anyio
    async def test_first_reason_wins(self) -> None:
        """Later reasons do not overwrite the first one."""
        production = TurnProduction()
        production.finish(TraceEndReason.DRIVER_EXHAUSTED)
        production.stop(STOP)
        assert production.reason is TraceEndReason.DRIVER_EXHAUSTED


class TestDeadline:
    @pytest.mark.anyio
    async def test_raises_timeout_after_exit(self) -> None:
        """A deadline that fires becomes TimeoutError('timed out after N s')."""
        with pytest.raises(TimeoutError, match=r"^timed out after 0\.01 s$"), deadline(0.01):
            await anyio.sleep_forever()

    @pytest.mark.anyio
    async def test_none_is_unbounded(self) -> None:
        """deadline(None) adds no deadline: the effective one is unchanged, inside or not."""
        assert anyio.current_effective_deadline() == math.inf
        with deadline(None):
            assert anyio.current_effective_deadline() == math.inf
            await anyio.lowlevel.checkpoint()
        with anyio.move_on_after(60):
            outer = anyio.current_effective_deadline()
            with deadline(None):
                assert anyio.current_effective_deadline() == outer
                await anyio.lowlevel.checkpoint()

    @pytest.mark.anyio
    async def test_timeout_sets_effective_deadline(self) -> None:
        """deadline(N) makes the effective deadline finite (the contrast to None)."""
        with deadline(60):
            assert anyio.current_effective_deadline() < math.inf
            await anyio.lowlevel.checkpoint()

    @pytest.mark.anyio
    async def test_outer_cancellation_is_not_a_timeout(self) -> None:
        """An outer cancellation propagates through a (later) deadline unchanged."""
        with anyio.CancelScope() as outer:
            outer.cancel()
            with deadline(60):
                await anyio.sleep_forever()
        assert outer.cancelled_caught

    @pytest.mark.anyio
    async def test_cleanup_failure_after_timeout_names_both(self) -> None:
        """A cleanup error escaping a fired deadline is raised together with the timeout."""
        error = InfrastructureError("close failed")

        async def hang_then_fail_cleanup() -> None:
            with deadline(0.01):
                try:
                    await anyio.sleep_forever()
                finally:
                    raise error  # a cleanup that fails under the cancellation

        with pytest.raises(ExceptionGroup) as caught:
            await hang_then_fail_cleanup()
        group = caught.value
        assert group.message == "timed out after 0.01 s, then cleanup failed"
        timeout, cleanup = group.exceptions
        assert isinstance(timeout, TimeoutError)
        assert str(timeout) == "timed out after 0.01 s"
        assert cleanup is error

    @pytest.mark.anyio
    async def test_error_before_deadline_is_unchanged(self) -> None:
        """An error raised before the deadline fires propagates as itself."""
        error = InfrastructureError("down")

        async def fail() -> None:
            with deadline(60):
                await anyio.lowlevel.checkpoint()
                raise error

        with pytest.raises(InfrastructureError) as caught:
            await fail()
        assert caught.value is error

    def test_deadline_with_mock_clock(self) -> None:
        """On trio's MockClock the deadline fires at exactly the virtual time given."""
        import trio
        import trio.testing

        clock = trio.testing.MockClock(autojump_threshold=0)
        fired_at: list[float] = []

        async def main() -> None:
            start = trio.current_time()
            with pytest.raises(TimeoutError, match="timed out after 30 s"), deadline(30):
                await trio.sleep(3600)
            fired_at.append(trio.current_time() - start)

        trio.run(main, clock=clock)
        assert fired_at == [30.0]

    def test_format_seconds(self) -> None:
        """Durations read naturally in messages."""
        assert [format_seconds(v) for v in (2.0, 0.5, 30)] == ["2", "0.5", "30"]


class TestStopWhen:
    def test_none_and_explicit(self) -> None:
        """None disables online stopping; an explicit evaluator is used as given."""
        verdict, stop = FakeEvaluator(), FakeEvaluator()
        assert resolve_stop_when(None, evaluator=verdict, owner="X") is None
        assert resolve_stop_when(stop, evaluator=verdict, owner="X") is stop

    @pytest.mark.parametrize(
        "evaluator",
        [
            ToolCalled("send_email"),
            SideEffectOccurred("http_request"),
            ResponseContains("x", scope=ResponseScope.ANY_TURN),
            ToolCalled("a") | SideEffectOccurred("b"),
            ToolCalled("a") & ToolCalled("b"),
        ],
        ids=["tool", "side-effect", "contains-any", "or", "and"],
    )
    def test_auto_uses_absorbing_evaluators(self, evaluator: object) -> None:
        """'auto' stops online on evaluators whose detection can never be undone."""
        assert resolve_stop_when("auto", evaluator=evaluator, owner="X") is evaluator  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "evaluator",
        [
            FakeEvaluator(),
            ResponseContains("x", scope=ResponseScope.CURRENT_TURN),
            ResponseContains("x", scope=ResponseScope.ALL_TURNS),
            ~ToolCalled("a"),
            ToolCalled("a") | FakeEvaluator(),
        ],
        ids=["third-party", "contains-current", "contains-all", "not", "or-third-party"],
    )
    def test_auto_skips_other_evaluators(self, evaluator: object) -> None:
        """'auto' means no online stop for everything else (third-party evaluators included)."""
        assert resolve_stop_when("auto", evaluator=evaluator, owner="X") is None  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("value", "error"),
        [
            ("AUTO", ValueError),
            ("never", ValueError),
            (1, TypeError),
            (object(), TypeError),
            (FakeEvaluator, TypeError),
        ],
    )
    def test_rejects_other_values(self, value: object, error: type[Exception]) -> None:
        """Another string is a ValueError, anything else a TypeError; both name the owner,
        the argument and the 'auto' option."""
        with pytest.raises(
            error, match=r"^XPIAExecution: stop_when must be .*, None or 'auto', got"
        ):
            resolve_stop_when(value, evaluator=FakeEvaluator(), owner="XPIAExecution")
