"""The learned rate's decisions: pure functions of a JSON-ready state and ``now``."""

from __future__ import annotations

import itertools

import attrs
import pytest

from rampart.limits import Quota, RateLimitSignal
from rampart.limits._policy import _learned_rate
from rampart.limits._policy._learned_rate import LearnedState, RatePolicy

POLICY = RatePolicy()


def _reserve_many(
    state: LearnedState | None, now: float, count: int, policy: RatePolicy = POLICY
) -> tuple[LearnedState, list[_learned_rate.Grant]]:
    grants = []
    for _ in range(count):
        state, grant = _learned_rate.reserve(state, now=now, policy=policy)
        grants.append(grant)
    assert state is not None
    return state, grants


def _stated(rate: float) -> RateLimitSignal:
    # OpenAI style: a quota of 60 per minute, 59 left, full again in 60/rate seconds.
    return RateLimitSignal(
        quotas=(Quota(unit="requests", source="openai", limit=60, remaining=59, reset=1 / rate),)
    )


class TestBucket:
    def test_starts_at_the_initial_rate_evenly_spaced(self) -> None:
        """Four requests at once with burst 1 at 4/s: due at 0, 0.25, 0.5, 0.75."""
        _, grants = _reserve_many(None, 0.0, 4)
        assert [g.wait for g in grants] == pytest.approx([0.0, 0.25, 0.5, 0.75])
        assert {g.rate for g in grants} == {4.0}
        assert {g.generation for g in grants} == {0}

    def test_burst(self) -> None:
        """burst=3: three at once, then the spacing."""
        _, grants = _reserve_many(None, 0.0, 5, RatePolicy(burst=3))
        assert [g.wait for g in grants] == pytest.approx([0.0, 0.0, 0.0, 0.25, 0.5])

    def test_ceiling_is_the_start(self) -> None:
        """rate= given: the learned rate starts there, not in slow start."""
        policy = RatePolicy(ceiling=50.0)
        state, grants = _reserve_many(None, 0.0, 2, policy)
        assert grants[1].wait == pytest.approx(0.02)
        assert state.law.phase == "probe"
        assert _learned_rate.rate_at(state, 100.0, policy) == 50.0

    def test_due_times_stay_in_order_when_the_rate_rises(self) -> None:
        """A request reserved later, at a higher rate, never goes before an earlier one
        (a balance of tokens would let it: the bug that made requests bunch)."""
        state, first = _reserve_many(None, 0.0, 8)
        later = []
        for now in (0.5, 0.6, 0.7):
            state, grant = _learned_rate.reserve(state, now=now, policy=POLICY)
            later.append(now + grant.wait)
        due = [g.wait for g in first] + later
        assert due == sorted(due)
        gaps = [b - a for a, b in itertools.pairwise(due)]
        assert min(gaps) > 0.0

    def test_slow_start_grows_only_while_the_rate_binds(self) -> None:
        """Requests queued on the bucket: the rate doubles every ``DOUBLING``. One
        request every second (the bucket sits full): it stays at 4."""
        busy, _ = _reserve_many(None, 0.0, 40)
        doubled = 4.0 * 2.0 ** (2.0 / _learned_rate.DOUBLING)
        assert _learned_rate.rate_at(busy, 2.0, POLICY) == pytest.approx(doubled, rel=0.01)
        idle: LearnedState | None = None
        for second in range(10):
            idle, _ = _learned_rate.reserve(idle, now=float(second), policy=POLICY)
        assert idle is not None
        assert _learned_rate.rate_at(idle, 9.0, POLICY) == pytest.approx(4.0, rel=0.05)

    def test_time_with_requests_queued_behind_the_rate_counts_for_growth(self) -> None:
        """One reservation a second finds the bucket empty each time. When the caller
        says requests wait behind the rate (``held``: its sends fell behind their
        tokens, as a late event loop makes them), that time counts and slow start
        doubles; when nobody waits, the rate held nobody back and it stays at 4."""
        states: dict[bool, LearnedState | None] = {True: None, False: None}
        for held in states:
            for second in range(3):
                states[held], _ = _learned_rate.reserve(
                    states[held], now=float(second), policy=POLICY, held=held
                )
        grown, idle = states[True], states[False]
        assert grown is not None
        assert idle is not None
        doubled = 4.0 * 2.0 ** (2.0 / _learned_rate.DOUBLING)
        assert _learned_rate.rate_at(grown, 2.0, POLICY) == pytest.approx(doubled, rel=0.01)
        assert _learned_rate.rate_at(idle, 2.0, POLICY) == pytest.approx(4.0, rel=0.05)


class TestSlowStart:
    """Issue 37: slow start reaches a fast agent's rate within a short run, and the
    refusal that ends it holds at half the refused rate instead of climbing back."""

    def test_reaches_forty_per_second_within_a_second(self) -> None:
        """Requests queued on the bucket from 4/s: 40/s within a second (doubling once a
        second took 3.3 s, most of a 200-trial run against a 40/s agent)."""
        busy, _ = _reserve_many(None, 0.0, 200)
        assert _learned_rate.rate_at(busy, 1.0, POLICY) >= 40.0
        assert _learned_rate.rate_at(busy, 0.5, POLICY) < 40.0

    def test_the_exit_holds_at_half_the_refused_rate(self) -> None:
        """Refused at 80/s in slow start: the rate drops to 40/s and stays near it for
        half a period (within 7 %), where climbing back towards 80/s (the rate a
        doubling too high) was at 70/s by then and refused again."""
        state, grants = _reserve_many(None, 0.0, 200)
        state, cut = _learned_rate.throttled(
            state, now=1.0, policy=POLICY, generation=grants[-1].generation, rate=80.0
        )
        assert cut
        assert state.law.phase == "probe"
        assert state.law.peak == pytest.approx(40.0)
        period = state.law.period
        queued = state
        for step in range(1, 11):
            queued, _ = _reserve_many(queued, 1.0 + step * period / 20, 40)
        half = _learned_rate.rate_at(queued, 1.0 + period / 2, POLICY)
        assert 40.0 <= half <= 40.0 * 1.07

    def test_after_the_exit_the_rate_still_probes_upwards(self) -> None:
        """Holding is not stopping: with requests queued, two periods after the exit the
        rate is well above the half it held at."""
        state, _ = _learned_rate.throttled(None, now=0.0, policy=POLICY, generation=0, rate=80.0)
        period = state.law.period
        for step in range(1, 41):
            state, _ = _reserve_many(state, step * period / 20, 40)
        assert _learned_rate.rate_at(state, 2 * period, POLICY) > 40.0 * 1.5

    def test_the_hold_counts_requests_not_latencies(self) -> None:
        """Against an agent answering in 5 s the probing period is 3 latencies (15 s);
        the hold after slow start lasts 10 requests at the held rate instead (0.1 s,
        at least 1 s), since what it waits for is a refusal, which comes at once."""
        state = _learned_rate.fresh(0.0, POLICY)
        for _ in range(30):
            state = _learned_rate.latency_reported(state, now=0.0, policy=POLICY, latency=5.0)
        assert state.latency == pytest.approx(5.0, rel=0.01)
        state, _ = _learned_rate.throttled(state, now=0.0, policy=POLICY, generation=0, rate=200.0)
        assert state.law.peak == pytest.approx(100.0)
        assert state.law.period == pytest.approx(1.0)
        probing, _ = _learned_rate.throttled(
            state, now=5.0, policy=POLICY, generation=1, rate=150.0
        )
        assert probing.law.period == pytest.approx(15.0, rel=0.01)

    def test_an_agent_without_a_burst_is_back_at_its_rate_soon(self) -> None:
        """A burst-1 agent at 20/s refuses as soon as slow start passes 20/s (here at
        20.5/s): the exit halves a rate that was not too high, holds for 10 requests
        (1 s at 10/s, where 80 held for 3.9 s) and is back above 90 % of the refused
        rate 1.5 s after the exit (it stayed near 10/s for 4 s)."""
        state, grants = _reserve_many(None, 0.0, 20)
        state, cut = _learned_rate.throttled(
            state, now=0.6, policy=POLICY, generation=grants[-1].generation, rate=20.5
        )
        assert cut
        assert state.law.period == pytest.approx(1.0)
        for step in range(1, 31):  # requests queued all along: the rate binds
            state, _ = _reserve_many(state, 0.6 + step * 0.05, 2)
        assert _learned_rate.rate_at(state, 0.6 + 0.5, POLICY) <= 10.25 * 1.07
        assert _learned_rate.rate_at(state, 0.6 + 1.5, POLICY) >= 0.9 * 20.5

    def test_a_later_refusal_climbs_back_towards_the_refused_rate(self) -> None:
        """Only slow start's exit holds: a refusal while probing cuts to 90 % and climbs
        back to the refused rate within a period (CUBIC), as before."""
        state, _ = _learned_rate.throttled(None, now=0.0, policy=POLICY, generation=0, rate=80.0)
        period = state.law.period
        state, cut = _learned_rate.throttled(
            state, now=period, policy=POLICY, generation=1, rate=50.0
        )
        assert cut
        assert state.law.peak == pytest.approx(50.0)
        assert _learned_rate.rate_at(state, period, POLICY) == pytest.approx(45.0)


class TestThrottled:
    def test_first_refusal_halves_and_ends_slow_start(self) -> None:
        state, grants = _reserve_many(None, 0.0, 3)
        state, cut = _learned_rate.throttled(
            state, now=0.5, policy=POLICY, generation=grants[-1].generation, rate=10.0
        )
        assert cut
        assert state.law.phase == "probe"
        assert state.generation == 1
        assert _learned_rate.rate_at(state, 0.5, POLICY) == pytest.approx(5.0)

    def test_answers_to_requests_sent_before_the_cut_do_not_cut_again(self) -> None:
        """Five refusals of requests sent under generation 0: one cut."""
        state, grants = _reserve_many(None, 0.0, 5)
        cuts = 0
        for grant in grants:
            state, cut = _learned_rate.throttled(
                state, now=1.0, policy=POLICY, generation=grant.generation, rate=grant.rate
            )
            cuts += cut
        assert cuts == 1
        assert state.generation == 1

    def test_refused_again_early_in_the_climb(self) -> None:
        """After a cut at 40 (to 36): refused again late in the climb back -> x0.9 of
        the refused rate; early, a lone refusal among many answers is taken for jitter
        and changes nothing, but one among few answers cuts deeper (x0.7)."""
        state, _ = _learned_rate.throttled(None, now=0.0, policy=POLICY, generation=0, rate=40.0)
        period = state.law.period
        late, cut = _learned_rate.throttled(
            state, now=0.9 * period, policy=POLICY, generation=1, rate=30.0
        )
        assert cut
        assert late.law.origin == pytest.approx(27.0)
        sparse, cut = _learned_rate.throttled(
            state, now=0.3 * period, policy=POLICY, generation=1, rate=30.0
        )
        assert cut
        assert sparse.law.origin == pytest.approx(21.0)
        busy = state
        for i in range(100):
            busy, _ = _learned_rate.reserve(busy, now=0.3 * period * i / 100, policy=POLICY)
        lone, cut = _learned_rate.throttled(
            busy, now=0.3 * period, policy=POLICY, generation=1, rate=30.0
        )
        assert not cut
        assert lone.law == busy.law

    def test_no_second_cut_while_the_first_takes_effect(self) -> None:
        """A refusal of a request sent after a cut, within ``HOLD`` of it: the agent's
        bucket that a bunch emptied is still refilling, so it does not cut again (nor
        count as a cut). After ``HOLD`` the same refusal, early in the climb and among
        few answers, cuts deeper (x0.7)."""
        state, _ = _learned_rate.throttled(None, now=0.0, policy=POLICY, generation=0, rate=40.0)
        hold = _learned_rate.HOLD
        soon, cut = _learned_rate.throttled(
            state, now=0.5 * hold, policy=POLICY, generation=1, rate=36.0
        )
        assert not cut
        assert soon.law == state.law
        assert soon.refused > state.refused  # still counted as a refusal
        later, cut = _learned_rate.throttled(
            state, now=1.2 * hold, policy=POLICY, generation=1, rate=36.0
        )
        assert cut
        assert later.generation == 2
        assert later.law.origin == pytest.approx(0.7 * 36.0)

    def test_a_saturated_agent_is_measured(self) -> None:
        """When a good share of what was sent was refused, the cut starts from what the
        agent accepted, not from the (far higher) rate the refused request was sent at."""
        state, _ = _learned_rate.throttled(None, now=0.0, policy=POLICY, generation=0, rate=100.0)
        state = _learned_rate.reserve(state, now=0.0, policy=POLICY)[0]
        # 60 sent and 30 refused within a second: the agent accepts about half.
        now = 1.0
        generation = state.generation
        for i in range(60):
            state, _ = _learned_rate.reserve(state, now=now + i / 600, policy=POLICY)
        for i in range(29):
            state, _ = _learned_rate.throttled(
                state, now=now + 0.1 + i / 600, policy=POLICY, generation=-1, rate=60.0
            )
        sent, refused = state.smoothed(now + 0.2)
        state, cut = _learned_rate.throttled(
            state, now=now + 0.2, policy=POLICY, generation=generation, rate=60.0
        )
        assert cut
        accepted = sent - refused
        assert accepted < 40.0
        assert state.law.peak < 40.0

    def test_a_stalled_client_does_not_measure_the_agent(self) -> None:
        """The client stalled: it sent a bunch at once and most were refused, so sent
        minus refused is near nothing. The cut still keeps half the rate the refused
        request went at (measured: without this, cut after cut to the 0.01/s floor)."""
        policy = RatePolicy(ceiling=200.0)
        state, _ = _learned_rate.reserve(None, now=0.0, policy=policy)
        for _ in range(20):
            state, _ = _learned_rate.reserve(state, now=0.5, policy=policy)
        for _ in range(19):
            state, _ = _learned_rate.throttled(
                state, now=0.5, policy=policy, generation=-1, rate=200.0
            )
        sent, refused = state.smoothed(0.5)
        assert sent - refused < 10.0
        state, cut = _learned_rate.throttled(
            state, now=0.5, policy=policy, generation=0, rate=200.0
        )
        assert cut
        assert state.law.peak == pytest.approx(100.0)

    def test_cut_forgives_reservations_queued_at_the_old_rate(self) -> None:
        """After a cut the next request is one spacing (at the new rate) away, however
        many were queued before it."""
        state, _ = _reserve_many(None, 0.0, 20)
        state, _ = _learned_rate.throttled(state, now=0.1, policy=POLICY, generation=0, rate=4.0)
        state, grant = _learned_rate.reserve(state, now=0.1, policy=POLICY)
        assert grant.wait == pytest.approx(0.5)
        assert grant.generation == 1


class TestObserved:
    def test_a_stated_rate_ends_slow_start_at_once(self) -> None:
        """The agent says 50/s: the learned rate goes to 97 % of it, no doubling."""
        state, _ = _learned_rate.observed(
            None, now=0.0, policy=POLICY, signal=_stated(50.0), generation=0
        )
        assert state.law.phase == "probe"
        assert state.hint == pytest.approx(50.0)
        assert _learned_rate.rate_at(state, 0.0, POLICY) == pytest.approx(48.5)
        assert _learned_rate.rate_at(state, 4.0, POLICY) == pytest.approx(48.5)

    def test_the_lowest_statement_wins_and_holds(self) -> None:
        state, _ = _learned_rate.observed(
            None, now=0.0, policy=POLICY, signal=_stated(50.0), generation=0
        )
        state, _ = _learned_rate.observed(
            state, now=1.0, policy=POLICY, signal=_stated(80.0), generation=0
        )
        assert state.hint == pytest.approx(50.0)
        state, _ = _learned_rate.observed(
            state, now=2.0, policy=POLICY, signal=_stated(20.0), generation=0
        )
        assert _learned_rate.rate_at(state, 2.0, POLICY) == pytest.approx(19.4)

    def test_an_old_statement_relaxes(self) -> None:
        """Not stated again for a long time, the ceiling rises (a raised limit is found)."""
        state, _ = _learned_rate.observed(
            None, now=0.0, policy=POLICY, signal=_stated(10.0), generation=0
        )
        assert _learned_rate._hint_at(state, 4.0) == pytest.approx(10.0)
        assert _learned_rate._hint_at(state, 15.0) == pytest.approx(10.0 * 2.718281828, rel=1e-6)

    def test_a_quota_nearly_used_up_is_a_gentle_cut(self) -> None:
        """remaining/limit below 5 % of a large quota: x0.9 before any 429."""
        low = RateLimitSignal(
            quotas=(Quota(unit="tokens", source="openai", limit=10_000, remaining=100),)
        )
        policy = RatePolicy(ceiling=40.0)
        state = _learned_rate.fresh(0.0, policy)
        state, cut = _learned_rate.observed(state, now=1.0, policy=policy, signal=low, generation=0)
        assert cut
        assert state.headroom_cuts == 1
        assert _learned_rate.rate_at(state, 1.0, policy) == pytest.approx(36.0)
        _, cut = _learned_rate.observed(state, now=1.1, policy=policy, signal=low, generation=0)
        assert not cut  # an answer to a request sent before that cut


class TestState:
    def test_round_trip(self) -> None:
        state, _ = _reserve_many(None, 3.0, 3)
        state, _ = _learned_rate.observed(
            state, now=3.0, policy=POLICY, signal=_stated(7.0), generation=0
        )
        assert LearnedState.from_dict(state.to_dict()) == state

    @pytest.mark.parametrize(
        "document",
        [None, [], {"v": 2}, {"v": 1}, {**_learned_rate.fresh(0.0, POLICY).to_dict(), "peak": "x"}],
    )
    def test_damaged_documents_restart(self, document: object) -> None:
        assert LearnedState.from_dict(document) is None

    def test_a_clock_that_steps_back_keeps_ages(self) -> None:
        """State written under a clock near 1000, read under one near 5: the cut is
        still 2 s old and the queue is still there."""
        state, _ = _learned_rate.throttled(None, now=998.0, policy=POLICY, generation=0, rate=8.0)
        state, _ = _reserve_many(state, 1000.0, 3)
        moved, grant = _learned_rate.reserve(state, now=5.0, policy=POLICY)
        assert moved.last_cut == pytest.approx(3.0)
        assert grant.wait > 0.0


def _bucket(capacity: int, rate: float) -> RateLimitSignal:
    """OpenAI style: a bucket of ``capacity`` refilling at ``rate``, one request used."""
    quota = Quota(
        unit="requests", source="openai", limit=capacity, remaining=capacity - 1, reset=1 / rate
    )
    return RateLimitSignal(quotas=(quota,))


class TestLearnedBurst:
    """The client's own burst: 1 until the agent states its capacity, then a share of it."""

    def test_one_until_the_agent_states_a_capacity(self) -> None:
        state, grants = _reserve_many(None, 0.0, 3)
        assert state.capacity is None
        assert {g.burst for g in grants} == {1}
        assert [g.wait for g in grants] == pytest.approx([0.0, 0.25, 0.5])

    @pytest.mark.parametrize(
        ("capacity", "rate", "burst"),
        [
            (10.0, 200.0, 5),  # half the agent's capacity
            (10.0, 20.0, 1),  # at most 50 ms of requests at the rate
            (1.0, 200.0, 1),  # an agent without a burst: none
            (5000.0, 1000.0, 16),  # never more than 16
        ],
    )
    def test_burst_at(self, capacity: float, rate: float, burst: int) -> None:
        state = attrs.evolve(_learned_rate.fresh(0.0, POLICY), capacity=capacity)
        assert _learned_rate.burst_at(state, rate, POLICY) == burst

    def test_the_users_burst_wins(self) -> None:
        state = attrs.evolve(_learned_rate.fresh(0.0, POLICY), capacity=10.0)
        assert _learned_rate.burst_at(state, 200.0, RatePolicy(burst=1)) == 1
        assert _learned_rate.burst_at(state, 200.0, RatePolicy(burst=3)) == 3

    def test_a_stated_capacity_lets_requests_go_together(self) -> None:
        """The agent states a bucket of 10 at 200/s: the learned rate is 194/s and the
        client may send 5 at once (then the spacing)."""
        state, _ = _learned_rate.observed(
            None, now=0.0, policy=POLICY, signal=_bucket(10, 200.0), generation=0
        )
        assert state.capacity == 10.0
        state, grants = _reserve_many(state, 0.0, 7)
        assert {g.burst for g in grants} == {5}
        spacing = 1 / 194.0
        assert [g.wait for g in grants] == pytest.approx([0.0] * 5 + [spacing, 2 * spacing])

    def test_a_window_quota_states_no_capacity(self) -> None:
        """IETF's q per w is what a window holds, not what may come at once."""
        window = RateLimitSignal(
            quotas=(Quota(unit="requests", source="ietf", limit=200, remaining=150, window=1),)
        )
        state, _ = _learned_rate.observed(None, now=0.0, policy=POLICY, signal=window, generation=0)
        assert state.capacity is None


class TestTolerance:
    """Refusals under the agent's stated rate are jitter while they stay under 3 %."""

    def _stated_and_busy(self, count: int) -> tuple[LearnedState, float]:
        """The agent states 50/s; ``count`` requests go at the learned 48.5/s."""
        state, _ = _learned_rate.observed(
            None, now=0.0, policy=POLICY, signal=_stated(50.0), generation=0
        )
        rate = _learned_rate.rate_at(state, 0.0, POLICY)
        for i in range(count):
            state, _ = _learned_rate.reserve(state, now=i / rate, policy=POLICY)
        return state, count / rate

    def test_a_rare_refusal_under_the_stated_rate_does_not_cut(self) -> None:
        state, now = self._stated_and_busy(100)
        assert state.refused_share == 0.0
        state, cut = _learned_rate.throttled(state, now=now, policy=POLICY, generation=0, rate=48.5)
        assert not cut
        assert state.generation == 0
        assert state.refused_share == pytest.approx(1 / state.tally)
        assert _learned_rate.rate_at(state, now, POLICY) == pytest.approx(48.5)

    def test_refusals_that_are_not_rare_cut(self) -> None:
        """Two refusals in the last ~63 (decayed) reservations are over 3 %: a cut, and
        the share restarts from the new rate."""
        state, now = self._stated_and_busy(100)
        state, first = _learned_rate.throttled(
            state, now=now, policy=POLICY, generation=0, rate=48.5
        )
        state, second = _learned_rate.throttled(
            state, now=now + 0.01, policy=POLICY, generation=0, rate=48.5
        )
        assert (first, second) == (False, True)
        assert state.generation == 1
        assert state.tally_refused == 0.0

    def test_too_few_requests_to_tell_cut(self) -> None:
        state, now = self._stated_and_busy(20)
        assert state.refused_share is None
        _, cut = _learned_rate.throttled(state, now=now, policy=POLICY, generation=0, rate=48.5)
        assert cut

    def test_a_refusal_above_the_stated_rate_cuts(self) -> None:
        state, now = self._stated_and_busy(100)
        _, cut = _learned_rate.throttled(state, now=now, policy=POLICY, generation=0, rate=50.5)
        assert cut

    def test_a_refusal_at_a_rate_the_agent_allows_is_tolerated_above_the_margin(self) -> None:
        """Sent at 49.9/s, over the 97 % the learned rate keeps but under the stated
        50/s: still not a rate too high. (The stated rate a capped learned rate follows
        moves by hundredths between answers: in a traced run of eight hosts against a
        200/s agent, both cuts were refusals at 194.2/s, a hair over 97 % of the
        200.16/s stated by then, at refused shares of 2.1 % and 2.9 %.)"""
        state, now = self._stated_and_busy(100)
        _, cut = _learned_rate.throttled(state, now=now, policy=POLICY, generation=0, rate=49.9)
        assert not cut

    def test_without_a_statement_every_refusal_counts(self) -> None:
        policy = RatePolicy(ceiling=50.0)
        state, _ = _reserve_many(None, 0.0, 1, policy)
        for i in range(1, 100):
            state, _ = _learned_rate.reserve(state, now=i / 50.0, policy=policy)
        assert state.refused_share == 0.0
        _, cut = _learned_rate.throttled(state, now=2.0, policy=policy, generation=0, rate=50.0)
        assert cut

    def test_forfeited_reservations_do_not_count(self) -> None:
        state, _ = _reserve_many(None, 0.0, 10)
        before = state.tally
        state, _ = _learned_rate.reserve(state, now=0.0, policy=POLICY, forfeited=3)
        assert state.tally == pytest.approx(before * 0.99 + 1 - 3)


class TestFeedbackDelay:
    def test_a_report_after_a_full_bucket_keeps_the_rate(self) -> None:
        """Four tokens at t=0, then nothing until the first answers come back 5 s
        later (the window bound, not the rate): that time held nobody back, so the
        next request still goes at the initial rate, and slow start goes on doubling
        every ``DOUBLING`` (not every 5 s) once requests queue on the bucket."""
        state, _ = _reserve_many(None, 0.0, 4)
        before = _learned_rate.rate_at(state, 0.0, POLICY)
        state = _learned_rate.latency_reported(state, now=5.0, policy=POLICY, latency=5.0)
        state, grant = _learned_rate.reserve(state, now=5.0, policy=POLICY)
        assert grant.rate == pytest.approx(before)
        state, _ = _reserve_many(state, 5.0, 40)
        later = 5.0 + 2 * _learned_rate.DOUBLING
        assert _learned_rate.rate_at(state, later, POLICY) == pytest.approx(4 * before, rel=0.01)


class TestStateCompatibility:
    def test_round_trip_with_capacity_and_tally(self) -> None:
        state, _ = _learned_rate.observed(
            None, now=0.0, policy=POLICY, signal=_bucket(10, 20.0), generation=0
        )
        state, _ = _reserve_many(state, 1.0, 5)
        state, _ = _learned_rate.throttled(state, now=1.0, policy=POLICY, generation=0, rate=20.0)
        assert state.capacity == 10.0
        assert state.tally > 0
        assert LearnedState.from_dict(state.to_dict()) == state

    def test_a_document_of_the_previous_version_still_loads(self) -> None:
        """Written before capacity and the tally existed (another process, an older
        rampart): read with none of them, not thrown away."""
        state, _ = _reserve_many(None, 0.0, 3)
        document = state.to_dict()
        for key in ("capacity", "tally", "tally_refused"):
            del document[key]
        loaded = LearnedState.from_dict(document)
        assert loaded is not None
        assert (loaded.capacity, loaded.tally, loaded.tally_refused) == (None, 0.0, 0.0)
        assert loaded.due == state.due

    @pytest.mark.parametrize(
        ("key", "value"), [("capacity", -1.0), ("tally", float("inf")), ("tally_refused", "x")]
    )
    def test_damaged_new_fields_restart(self, key: str, value: object) -> None:
        document = {**_learned_rate.fresh(0.0, POLICY).to_dict(), key: value}
        assert LearnedState.from_dict(document) is None
