"""A learned rate over a campaign of hours, on a fake clock: every time-dependent
formula stays finite and in range for any elapsed time (issue 33, item 1).

After about 7,100 s of saturated load following a single statement of the agent's
limit, ``math.exp`` of the relaxed statement overflowed and every reservation raised
``OverflowError``; a fresh statement did not recover, because it read the relaxed
statement first. The property test below runs the pure core from arbitrary in-range
states over arbitrary elapsed times."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rampart.limits import FileBackend, MemoryBackend, Quota, RateLimitSignal
from rampart.limits._policy import _cubic
from rampart.limits._policy import _learned_rate as lr
from rampart.limits._policy._learned_rate import LearnedState, RatePolicy
from rampart.limits._shared_rate import LearnedRate

DAY = 86_400.0
YEAR = 365 * DAY
AGENT_RATE = 50.0


def _stated(rate: float) -> RateLimitSignal:
    quota = Quota(unit="requests", source="openai", limit=60, remaining=59, reset=1 / rate)
    return RateLimitSignal(quotas=(quota,))


def _in_bounds(state: LearnedState, now: float, policy: RatePolicy) -> float:
    rate = lr.rate_at(state, now, policy)
    ceiling = lr.MAX_RATE if policy.ceiling is None else min(lr.MAX_RATE, policy.ceiling)
    assert math.isfinite(rate)
    assert lr.MIN_RATE <= rate <= max(lr.MIN_RATE, ceiling)
    return rate


def _campaign(
    *, statements_every: float | None, step: float = 5.0, hours: float = 25.0
) -> tuple[LearnedState, float, list[float]]:
    """Saturated load for ``hours`` against an agent that refuses above AGENT_RATE: one
    reservation per ``step`` with requests held behind the rate (so every second counts
    for growth), a refusal whenever the rate was over the agent's, and (optionally) a
    statement of the agent's limit every ``statements_every`` seconds after the first."""
    policy = RatePolicy()
    state, _ = lr.observed(None, now=0.0, policy=policy, signal=_stated(AGENT_RATE), generation=0)
    now, last_statement, rates = 0.0, 0.0, []
    while now < hours * 3600.0:
        now += step
        state, grant = lr.reserve(state, now=now, policy=policy, held=True)
        assert 0.0 <= grant.wait <= lr.MAX_BACKLOG + 1.0 / lr.MIN_RATE
        if grant.rate > AGENT_RATE:
            state, _ = lr.throttled(
                state, now=now, policy=policy, generation=grant.generation, rate=grant.rate
            )
        if statements_every is not None and now - last_statement >= statements_every:
            state, _ = lr.observed(
                state, now=now, policy=policy, signal=_stated(AGENT_RATE), generation=-1
            )
            last_statement = now
        rates.append(_in_bounds(state, now, policy))
    return state, now, rates


class TestADayOfSaturatedLoad:
    def test_one_statement_then_a_day_without_one(self) -> None:
        """The issue's case: stated once, then 25 h of saturated load. No overflow; the
        rate stays in range; and a fresh statement brings the ceiling back at once."""
        state, now, rates = _campaign(statements_every=None)
        assert max(rates) <= lr.MAX_RATE
        policy = RatePolicy()
        state, _ = lr.observed(
            state, now=now, policy=policy, signal=_stated(AGENT_RATE), generation=-1
        )
        assert lr.rate_at(state, now, policy) <= AGENT_RATE * lr.HINT_SHARE + 1e-9
        state, grant = lr.reserve(state, now=now + 1.0, policy=policy)
        assert grant.rate <= AGENT_RATE * lr.HINT_SHARE + 1e-9

    def test_statements_all_day(self) -> None:
        """Statements keep coming (within ``HINT_HOLD`` of each other, as answers bring
        them): the ceiling holds at 97 % of the agent's rate all day."""
        _, _, rates = _campaign(statements_every=4.0, step=4.0)
        assert max(rates) <= AGENT_RATE * lr.HINT_SHARE + 1e-9
        assert min(rates[100:]) > AGENT_RATE * 0.3

    def test_no_statement_at_all_for_a_day(self) -> None:
        """Refusals alone (no statement): the law probes above the agent and is cut,
        for a day, without leaving its range."""
        policy = RatePolicy()
        state: LearnedState | None = None
        now = 0.0
        while now < 25 * 3600.0:
            now += 5.0
            state, grant = lr.reserve(state, now=now, policy=policy, held=True)
            if grant.rate > AGENT_RATE:
                state, _ = lr.throttled(
                    state, now=now, policy=policy, generation=grant.generation, rate=grant.rate
                )
            _in_bounds(state, now, policy)

    def test_a_statement_after_hours_recovers_the_relaxed_state(self) -> None:
        """Even a state left relaxing for a year (no reservation in between) takes a
        fresh statement: the relaxed statement is bounded, not ``exp`` of a year."""
        policy = RatePolicy()
        state, _ = lr.observed(None, now=0.0, policy=policy, signal=_stated(20.0), generation=0)
        later = 365 * DAY
        assert lr.rate_at(state, later, policy) <= lr.MAX_RATE
        state, _ = lr.observed(state, now=later, policy=policy, signal=_stated(20.0), generation=0)
        assert lr.rate_at(state, later, policy) == pytest.approx(20.0 * lr.HINT_SHARE)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.anyio
@pytest.mark.parametrize("store", ["memory", "file"])
async def test_the_async_shell_over_a_day(anyio_backend: str, store: str, tmp_path: object) -> None:
    """``LearnedRate`` (what ``limit(adaptive=True)`` uses) on a fake clock: a statement,
    then 25 h of saturated load with timed answers and refusals, then 13 h without any
    answer (the latency floor's rise overflowed ``exp`` after 12 h), then a statement:
    every call returns, and the rate and the floor stay finite and in range."""
    clock = FakeClock()
    backend = (
        MemoryBackend(clock=clock) if store == "memory" else FileBackend(tmp_path, clock=clock)
    )  # type: ignore[arg-type]
    learner = LearnedRate(backend=backend, key="agent", policy=RatePolicy(), clock=clock)
    first = await learner.reserve(held=True)
    await learner.observed(first, [_stated(AGENT_RATE)])
    end = clock.now + 25 * 3600.0
    while clock.now < end:
        clock.now += 60.0
        serial = learner.begin(clock.now)
        grant = await learner.reserve(held=True)
        assert 0.0 <= grant.wait <= lr.MAX_BACKLOG + 1.0 / lr.MIN_RATE
        learner.end(serial, clock.now + 0.5, timed=True, answered=True)
        if grant.rate > AGENT_RATE:
            await learner.throttled(grant, [])
        stats = learner.statistics()
        assert lr.MIN_RATE <= stats.rate <= lr.MAX_RATE
    clock.now += 13 * 3600.0
    serial = learner.begin(clock.now)
    learner.end(serial, clock.now + 2.0, timed=True, answered=True)
    assert learner.latency_floor() == pytest.approx(2.0)
    grant = await learner.reserve()
    await learner.observed(grant, [_stated(AGENT_RATE)])
    grant = await learner.reserve()
    assert grant.rate <= AGENT_RATE * lr.HINT_SHARE + 1e-9


# -- the property: any in-range state, any elapsed time ------------------------------


def _in_range(name: str) -> st.SearchStrategy[float]:
    low, high = lr.RANGES[name]
    return st.floats(min_value=low, max_value=high, allow_nan=False, allow_infinity=False)


_ELAPSED = st.one_of(
    st.floats(min_value=0.0, max_value=10.0),
    st.floats(min_value=0.0, max_value=DAY),
    st.floats(min_value=0.0, max_value=YEAR),
    st.floats(min_value=YEAR, max_value=1e15),
    st.floats(min_value=-DAY, max_value=0.0),  # a clock that stepped back
)


@st.composite
def _states(draw: st.DrawFn) -> LearnedState:
    """A stored state with every field in its documented range."""
    stamp = draw(st.floats(min_value=-1e9, max_value=1e10))
    peak = draw(_in_range("peak"))
    origin = draw(st.floats(min_value=lr.RANGES["origin"][0], max_value=peak))
    period = draw(_in_range("period"))
    phase = draw(st.sampled_from(["start", "probe"]))
    used = draw(st.floats(min_value=0.0, max_value=YEAR))
    hint = draw(st.none() | _in_range("hint"))
    data = {
        "v": 1,
        "due": stamp + draw(st.floats(min_value=-DAY, max_value=lr.MAX_BACKLOG)),
        "stamp": stamp,
        "phase": phase,
        "origin": origin,
        "peak": peak,
        "epoch": stamp - used,
        "period": period,
        "doubling": draw(_in_range("doubling")),
        "cuts": draw(st.integers(min_value=0, max_value=1000)),
        "latency": draw(_in_range("latency")),
        "sent": draw(_in_range("sent")),
        "refused": draw(_in_range("refused")),
        "measured_at": stamp - draw(st.floats(min_value=-DAY, max_value=YEAR)),
        "window": draw(_in_range("window")),
        "hint": hint,
        "hint_at": stamp - draw(st.floats(min_value=0.0, max_value=YEAR)),
        "last_cut": draw(st.none() | st.floats(min_value=stamp - YEAR, max_value=stamp)),
        "headroom_cuts": draw(st.integers(min_value=0, max_value=1000)),
        "capacity": draw(st.none() | _in_range("capacity")),
        "tally": draw(_in_range("tally")),
        "tally_refused": draw(st.floats(min_value=0.0, max_value=1e6)),
    }
    try:
        return lr.load(data)
    except lr.DamagedState:
        # In range field by field, but its law is far above MAX_RATE at the stamp: a
        # state no transition writes. Start from the same fields with a younger law.
        data["epoch"] = stamp
        return lr.load(data)


_POLICIES = st.builds(
    RatePolicy,
    burst=st.none() | st.integers(min_value=1, max_value=100),
    ceiling=st.none() | st.floats(min_value=1e-6, max_value=1e12),
)


class TestAnyStateAnyTime:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        state=_states(),
        policy=_POLICIES,
        steps=st.lists(
            st.tuples(
                _ELAPSED,
                st.sampled_from(["reserve", "held", "throttled", "observed", "latency"]),
                st.floats(min_value=1e-3, max_value=1e9),
            ),
            min_size=1,
            max_size=8,
        ),
    )
    def test_no_exception_and_a_finite_rate_in_range(
        self,
        state: LearnedState,
        policy: RatePolicy,
        steps: list[tuple[float, str, float]],
    ) -> None:
        now = state.stamp
        current: LearnedState = state
        for elapsed, event, value in steps:
            now += elapsed
            if event in ("reserve", "held"):
                current, grant = lr.reserve(current, now=now, policy=policy, held=event == "held")
                assert math.isfinite(grant.wait)
                assert 0.0 <= grant.wait <= lr.MAX_BACKLOG + 1.0 / lr.MIN_RATE
                assert lr.MIN_RATE <= grant.rate <= lr.MAX_RATE
                assert grant.burst >= 1
            elif event == "throttled":
                current, _ = lr.throttled(
                    current, now=now, policy=policy, generation=current.generation, rate=value
                )
            elif event == "observed":
                current, _ = lr.observed(
                    current, now=now, policy=policy, signal=_stated(value), generation=0
                )
            else:
                current = lr.latency_reported(current, now=now, policy=policy, latency=value)
            _in_bounds(current, now, policy)
            assert lr.burst_at(current, lr.rate_at(current, now, policy), policy) >= 1
            sent, refused = current.smoothed(now)
            assert math.isfinite(sent)
            assert math.isfinite(refused)
            # What a transition wrote is a state the reader takes back.
            assert LearnedState.from_dict(current.to_dict()) == current

    @settings(max_examples=200, deadline=None)
    @given(
        origin=st.floats(min_value=1e-3, max_value=1e5),
        ratio=st.floats(min_value=0.0, max_value=1.0),
        period=st.floats(min_value=1e-3, max_value=1e3),
        doubling=st.floats(min_value=1e-300, max_value=1e3),
        phase=st.sampled_from(["start", "probe"]),
        elapsed=st.floats(min_value=0.0, max_value=1e300),
    )
    def test_the_growth_law_is_finite_for_any_elapsed_time(
        self,
        origin: float,
        ratio: float,
        period: float,
        doubling: float,
        phase: str,
        elapsed: float,
    ) -> None:
        peak = origin / max(ratio, 1e-3)
        law = _cubic.CubicState(
            phase="start" if phase == "start" else "probe",
            origin=origin,
            peak=peak,
            epoch=0.0,
            period=period,
            doubling=doubling,
        )
        value = _cubic.value(law, elapsed)
        assert math.isfinite(value)
        assert value >= origin * (1 - 1e-9)
