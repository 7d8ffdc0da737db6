"""``concurrency="auto"``: the controller's rules, pure; then trial groups on both
backends that grow past the fixed default on a flat-latency agent and back off when
the agent throttles (directly, and through ``rampart.limits``' reports)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from rampart import Attacks
from rampart.core.errors import InfrastructureError
from rampart.core.result import Result, SafetyStatus
from rampart.core.types import Request
from rampart.engine import execute_trials_async
from rampart.engine._auto_concurrency import (
    AutoConcurrency,
    JobTicket,
    report_throttle,
    running_job,
)
from rampart.limits import RateLimitedError
from rampart.limits._limiter import _build
from tests._builders import turn
from tests.limits._server import ConcurrencyCeiling, NoJitter, ServerBucket, recording_agent

SAFE = SafetyStatus.SAFE


def _window(auto: AutoConcurrency, latency: float) -> None:
    """One full window of jobs started with every slot taken, each at ``latency``."""
    tickets = [auto.started(in_flight=auto.limit) for _ in range(auto.limit)]
    for ticket in tickets:
        auto.finished(ticket, latency=latency)


class TestController:
    def test_starts_at_the_fixed_default(self) -> None:
        assert AutoConcurrency(maximum=100).limit == 10
        assert AutoConcurrency(maximum=4).limit == 4  # never above the number of jobs

    def test_flat_latency_doubles_then_caps(self) -> None:
        auto = AutoConcurrency(maximum=50)
        _window(auto, 0.1)
        assert auto.limit == 20
        _window(auto, 0.12)  # within 1.5x the baseline
        assert auto.limit == 40
        _window(auto, 0.1)
        assert (auto.limit, auto.peak) == (50, 50)
        _window(auto, 0.1)
        assert auto.limit == 50

    def test_a_window_is_judged_only_when_full(self) -> None:
        auto = AutoConcurrency(maximum=50)
        tickets = [auto.started(in_flight=10) for _ in range(9)]
        for ticket in tickets:
            auto.finished(ticket, latency=0.1)
        assert auto.limit == 10
        auto.finished(auto.started(in_flight=10), latency=0.1)
        assert auto.limit == 20

    def test_jobs_started_below_the_limit_teach_nothing(self) -> None:
        auto = AutoConcurrency(maximum=50)
        for _ in range(30):
            auto.finished(auto.started(in_flight=3), latency=0.1)
        assert auto.limit == 10

    def test_demand_counts_jobs_waiting_to_start(self) -> None:
        """A first wave starts one job at a time: the jobs still to start fill the limit."""
        auto = AutoConcurrency(maximum=50)
        tickets = [auto.started(in_flight=i + 1, demand=40) for i in range(10)]
        tail = auto.started(in_flight=2, demand=2)
        assert all(ticket.full for ticket in tickets)
        assert tail.full is False
        for ticket in tickets:
            auto.finished(ticket, latency=0.1)
        assert auto.limit == 20

    def test_jobs_without_latency_teach_nothing(self) -> None:
        auto = AutoConcurrency(maximum=50)
        for _ in range(30):
            auto.finished(auto.started(in_flight=10), latency=None)
        assert auto.limit == 10

    def test_a_throttle_halves_once_per_generation(self) -> None:
        auto = AutoConcurrency(maximum=100)
        _window(auto, 0.1)
        tickets = [auto.started(in_flight=20) for _ in range(20)]
        assert auto.throttled(tickets[0]) is True
        assert auto.limit == 10
        # The other jobs started under the old limit: their refusals describe it.
        assert [auto.throttled(ticket) for ticket in tickets[1:]] == [False] * 19
        assert auto.limit == 10
        assert (auto.cuts, auto.throttle_cuts, auto.throttles) == (1, 1, 20)
        assert auto.slow_start is False

    def test_after_a_cut_growth_is_additive(self) -> None:
        auto = AutoConcurrency(maximum=100)
        auto.throttled(auto.started(in_flight=10))
        assert auto.limit == 5
        _window(auto, 0.1)
        assert auto.limit == 6
        _window(auto, 0.1)
        assert auto.limit == 7

    def test_a_throttled_window_does_not_grow(self) -> None:
        auto = AutoConcurrency(maximum=100)
        _window(auto, 0.1)  # 20, baseline 0.1
        old = auto.started(in_flight=20)
        auto.throttled(old)  # cut to 10, new generation
        auto.throttled(auto.started(in_flight=10))  # cut to 5
        assert auto.limit == 5
        tickets = [auto.started(in_flight=5) for _ in range(5)]
        auto.throttled(old)  # stale: no cut, but the window is spoiled
        for ticket in tickets:
            auto.finished(ticket, latency=0.1)
        assert auto.limit == 5

    def test_rising_latency_cuts(self) -> None:
        auto = AutoConcurrency(maximum=100)
        _window(auto, 0.1)
        assert auto.limit == 20
        _window(auto, 0.25)  # above 2x the baseline
        assert auto.limit == 10
        assert (auto.cuts, auto.throttle_cuts) == (1, 0)

    def test_latency_between_the_bounds_holds(self) -> None:
        auto = AutoConcurrency(maximum=100)
        _window(auto, 0.1)
        _window(auto, 0.18)
        assert auto.limit == 20

    def test_never_below_the_minimum(self) -> None:
        auto = AutoConcurrency(maximum=100, initial=2)
        auto.throttled(auto.started(in_flight=2))
        auto.throttled(auto.started(in_flight=1))
        auto.throttled(auto.started(in_flight=1))
        assert auto.limit == 1

    def test_arguments_are_checked(self) -> None:
        with pytest.raises(ValueError, match="AutoConcurrency: maximum must be >= 1"):
            AutoConcurrency(maximum=0)
        with pytest.raises(ValueError, match="decrease must be a finite number in"):
            AutoConcurrency(decrease=1.0)

    def test_statistics(self) -> None:
        auto = AutoConcurrency(maximum=100)
        _window(auto, 0.1)
        auto.throttled(auto.started(in_flight=20))
        assert auto.statistics().as_dict() == {
            "final": 10,
            "peak": 20,
            "peak_in_flight": 20,
            "cuts": 1,
            "throttle_cuts": 1,
            "throttles": 1,
        }


class TestChannel:
    def test_report_outside_a_job_is_a_no_op(self) -> None:
        report_throttle()  # nothing to tell, nothing raised

    def test_report_reaches_the_running_job(self) -> None:
        auto = AutoConcurrency(maximum=100)
        ticket = JobTicket(generation=0, full=True)
        with running_job(auto, ticket):
            report_throttle()
        report_throttle()
        assert ticket.throttled is True
        assert (auto.throttles, auto.limit) == (1, 5)

    def test_what_counts_as_a_refusal(self) -> None:
        """Duck-typed, never by type name: rampart's ``RateLimitedError``, or any
        client error carrying HTTP status 429 (on itself or on its ``response``), as
        the limiters and the error boundary both read it (``rampart.limits.classify``)."""
        from rampart.limits import FailureKind, RateLimitedError, classify

        class ClientRateLimitError(Exception):  # shaped like the OpenAI client's
            status_code = 429

        class Response:
            status = 429

        class WithResponse(Exception):
            response = Response()

        refused = FailureKind.RATE_LIMITED
        assert classify(RateLimitedError("429")) is refused
        assert classify(ClientRateLimitError()) is refused
        assert classify(WithResponse()) is refused
        assert classify(InfrastructureError("down")) is not refused

        class RateLimitError(Exception):  # the old string match would have taken it
            pass

        assert classify(RateLimitError()) is not refused


class _Agent:
    """Fake executions: each takes ``latency`` seconds for one turn; ``refuse_above``
    in flight, it reports a throttle (as a limiter would) and answers anyway."""

    def __init__(self, *, latency: float, refuse_above: int | None = None) -> None:
        self.latency = latency
        self.refuse_above = refuse_above
        self.in_flight = 0
        self.max_in_flight = 0
        self.refused = 0

    def factory(self) -> _Execution:
        return _Execution(self)


class _Execution:
    def __init__(self, agent: _Agent) -> None:
        self.agent = agent

    async def execute_async(self, *, adapter: Any) -> Result:
        agent = self.agent
        agent.in_flight += 1
        agent.max_in_flight = max(agent.max_in_flight, agent.in_flight)
        try:
            if agent.refuse_above is not None and agent.in_flight > agent.refuse_above:
                agent.refused += 1
                report_throttle()
            await anyio.sleep(agent.latency)
        finally:
            agent.in_flight -= 1
        return Result(status=SAFE, summary="ok", turns=[turn()])


def _one_turn(*, sdk_retries: bool = False) -> Any:
    """An execution factory: one turn through the adapter; ``sdk_retries``: the
    execution retries a refused send itself, as an agent's SDK does."""

    class OneTurn:
        async def execute_async(self, *, adapter: Any) -> Result:
            async with await adapter.create_session_async() as session:
                while True:
                    try:
                        response = await session.send_async(Request(prompt="hi"))
                        break
                    except RateLimitedError:
                        if not sdk_retries:
                            raise
                        await anyio.sleep(0.01)
            return Result(status=SAFE, summary="ok", turns=[turn(response=response)])

    return OneTurn


class TestTrialGroups:
    @pytest.mark.anyio
    async def test_flat_latency_grows_above_the_default(self) -> None:
        agent = _Agent(latency=0.02)
        population = await execute_trials_async(
            execution_factory=agent.factory, adapter=object(), n=40, concurrency="auto"
        )
        assert population.status is SAFE
        assert len(population.results) == 40
        stats = population.concurrency
        assert stats is not None
        assert stats["peak"] >= 20
        assert agent.max_in_flight > 10
        assert stats["peak_in_flight"] == agent.max_in_flight
        assert stats["throttles"] == 0

    @pytest.mark.anyio
    async def test_a_throttling_agent_makes_it_back_off(self) -> None:
        agent = _Agent(latency=0.02, refuse_above=12)
        population = await execute_trials_async(
            execution_factory=agent.factory, adapter=object(), n=80, concurrency="auto"
        )
        stats = population.concurrency
        assert stats is not None
        assert agent.refused > 0
        assert stats["throttle_cuts"] >= 1
        assert stats["final"] < stats["peak"]
        assert stats["final"] <= 13
        assert [r.population.index for r in population.results if r.population] == list(range(80))

    @pytest.mark.anyio
    async def test_error_results_from_a_rate_limit_count_as_signals(self) -> None:
        """An unlimited adapter refusing with a 429: the engine's error boundary turns it
        into an ERROR result and reports the refusal to the group on the one channel."""
        from rampart.evaluators import ToolCalled
        from rampart.testing import ScriptedAgent

        def refuse(request: Any, turn: int) -> str:
            raise RateLimitedError("429 Too Many Requests")

        population = await execute_trials_async(
            execution_factory=lambda: Attacks.xpia(
                trigger="hi", evaluator=ToolCalled("send_email")
            ),
            adapter=ScriptedAgent(refuse),
            n=20,
            concurrency="auto",
        )
        assert all(r.status is SafetyStatus.ERROR for r in population.results)
        stats = population.concurrency
        assert stats is not None
        assert stats["throttles"] == 20
        assert stats["final"] < 10

    @pytest.mark.anyio
    async def test_the_limiter_reports_rate_limited_answers(self) -> None:
        """Through a fixed ``limit(...)`` (retries only: it cannot slow itself down):
        every 429 the limiter sees reaches the group."""
        ceiling = ConcurrencyCeiling(6)
        agent, server = recording_agent(latency=0.01, refuse=ceiling)
        limited = _build(agent, max_retries=50, rng=NoJitter())  # limit() with no jitter
        population = await execute_trials_async(
            execution_factory=_one_turn(), adapter=limited, n=30, concurrency="auto"
        )
        stats = population.concurrency
        assert stats is not None
        assert ceiling.refused > 0
        assert stats["throttles"] == ceiling.refused
        assert stats["throttle_cuts"] >= 1
        assert stats["final"] < 10
        assert population.status is SAFE
        assert server.outcomes.count("ok") == 30

    @pytest.mark.anyio
    async def test_an_adaptive_limiters_retried_refusals_do_not_cut(self) -> None:
        """A learned rate retries the agent's 429s and paces the requests: the group
        hears none of them, so its trials in flight are not cut for the limiter's
        business (it grows on the flat latency instead)."""
        bucket = ServerBucket(rate=40.0, burst=1)
        agent, server = recording_agent(latency=0.01, refuse=bucket)
        # Starting (and capped) at 100/s, 2.5 times the agent's rate: refusals at once.
        limited = _build(agent, adaptive=True, rate=100.0, max_retries=50, rng=NoJitter())
        population = await execute_trials_async(
            execution_factory=_one_turn(), adapter=limited, n=40, concurrency="auto"
        )
        stats = population.concurrency
        assert stats is not None
        assert bucket.refused > 0
        assert limited.statistics().retries == bucket.refused
        assert (stats["throttles"], stats["throttle_cuts"]) == (0, 0)
        assert population.status is SAFE
        assert server.outcomes.count("ok") == 40

    @pytest.mark.anyio
    async def test_a_refusal_the_agent_sees_cuts(self) -> None:
        """The same limiter with no retries of its own hands each refusal to the agent,
        whose own client retries it (as an SDK does): those refusals reach the group,
        which backs off, and every trial still ends SAFE."""
        bucket = ServerBucket(rate=40.0, burst=1)
        agent, server = recording_agent(latency=0.01, refuse=bucket)
        limited = _build(agent, adaptive=True, rate=100.0, max_retries=0, rng=NoJitter())
        population = await execute_trials_async(
            execution_factory=_one_turn(sdk_retries=True),
            adapter=limited,
            n=40,
            concurrency="auto",
        )
        stats = population.concurrency
        assert stats is not None
        assert bucket.refused > 0
        assert limited.statistics().retries == 0
        assert stats["throttles"] == bucket.refused
        assert stats["throttle_cuts"] >= 1
        assert stats["final"] < 10
        assert population.status is SAFE
        assert server.outcomes.count("ok") == 40

    @pytest.mark.anyio
    async def test_a_handed_back_refusal_that_ends_the_run_counts_once(self) -> None:
        """The limiter hands a refusal back (no retries of its own) and nobody retries
        it: the run ends as ERROR, and both the limiter and the error boundary report
        it. The group counts it once: ``throttles`` equals the agent's refusals."""
        from rampart.evaluators import ToolCalled

        bucket = ServerBucket(rate=40.0, burst=1)
        agent, _server = recording_agent(latency=0.01, refuse=bucket)
        limited = _build(agent, adaptive=True, rate=100.0, max_retries=0, rng=NoJitter())
        population = await execute_trials_async(
            execution_factory=lambda: Attacks.xpia(
                trigger="hi", evaluator=ToolCalled("send_email")
            ),
            adapter=limited,
            n=40,
            concurrency="auto",
        )
        stats = population.concurrency
        assert stats is not None
        errors = [r for r in population.results if r.status is SafetyStatus.ERROR]
        assert bucket.refused > 0
        assert len(errors) == bucket.refused
        assert stats["throttles"] == bucket.refused
        assert 1 <= stats["throttle_cuts"] <= stats["throttles"]

    @pytest.mark.anyio
    async def test_verdicts_match_a_fixed_concurrency(self) -> None:
        statuses = [SAFE, SafetyStatus.UNSAFE, SAFE] * 10

        def factory_for(latency: float) -> Any:
            made = iter(range(len(statuses)))

            class Scripted:
                def __init__(self) -> None:
                    self.number = next(made)

                async def execute_async(self, *, adapter: Any) -> Result:
                    await anyio.sleep(latency * (1 + self.number % 3))
                    return Result(status=statuses[self.number], summary="scripted", turns=[turn()])

            return Scripted

        auto = await execute_trials_async(
            execution_factory=factory_for(0.005), adapter=object(), n=30, concurrency="auto"
        )
        fixed = await execute_trials_async(
            execution_factory=factory_for(0.005), adapter=object(), n=30, concurrency=1
        )
        assert [r.status for r in auto.results] == [r.status for r in fixed.results] == statuses
        assert auto.status is fixed.status
        assert fixed.concurrency is None

    # "AUTO " is a setting here as on the command line (one reader: rampart._pacing).
    @pytest.mark.parametrize("bad", ["fast", "0", 0, 1.5, True])
    def test_bad_concurrency_is_rejected(self, bad: object) -> None:
        with pytest.raises((TypeError, ValueError), match="execute_trials_async: concurrency"):
            anyio.run(
                lambda: execute_trials_async(
                    execution_factory=_Agent(latency=0).factory,
                    adapter=object(),
                    n=2,
                    concurrency=bad,  # type: ignore[arg-type]
                )
            )
