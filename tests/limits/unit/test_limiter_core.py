from __future__ import annotations

import random

import pytest

from rampart.core.errors import AdapterContractError, DriverError, InfrastructureError
from rampart.limits import FailureKind, RateLimitedError, classify
from rampart.limits._policy._limiter_core import (
    Decision,
    LimiterCore,
    booking_depth,
    window_cap,
    window_need,
)
from tests.limits._server import TopJitter


def _core(**kwargs: object) -> LimiterCore:
    options: dict[str, object] = {
        "max_concurrency": None,
        "adaptive": False,
        "max_retries": 3,
        "rng": random.Random(0),
    }
    options.update(kwargs)
    return LimiterCore(**options)  # type: ignore[arg-type]


class TestClassify:
    @pytest.mark.parametrize(
        ("error", "kind"),
        [
            (RateLimitedError("429"), FailureKind.RATE_LIMITED),
            (RateLimitedError("429", retry_after=3), FailureKind.RATE_LIMITED),
            (InfrastructureError("reset", transient=True), FailureKind.TRANSIENT),
            (TimeoutError("slow"), FailureKind.TRANSIENT),
            (InfrastructureError("bad credentials"), FailureKind.FATAL),
            (AdapterContractError("send_async is not async"), FailureKind.FATAL),
            (AdapterContractError("odd", transient=True), FailureKind.FATAL),
            (DriverError("no prompt"), FailureKind.FATAL),
            (ValueError("bug"), FailureKind.FATAL),
            (OSError("disk"), FailureKind.FATAL),
        ],
    )
    def test_table(self, error: BaseException, kind: FailureKind) -> None:
        """Rate limits, transient failures and everything else are told apart."""
        assert classify(error) is kind


class TestPassesOn:
    """Which refusals an adaptive trial group around the limiter hears."""

    @pytest.mark.parametrize(
        ("options", "retried", "passed"),
        [
            ({"adaptive": True, "learned": True}, True, False),  # the learned rate's own
            ({"adaptive": True, "learned": True}, False, True),  # left the limiter
            ({"adaptive": True}, True, False),  # an adaptive window is cut instead
            ({}, True, True),  # retries alone cannot slow down
            ({"max_concurrency": 4}, True, True),
            ({}, False, True),
        ],
    )
    def test_table(self, options: dict[str, object], retried: bool, passed: bool) -> None:
        core = _core(**options)
        decision = Decision(kind=FailureKind.RATE_LIMITED, retry=retried, delay=0.1)
        assert core.passes_on(decision) is passed


class TestRetryDecisions:
    def test_rate_limited_is_retried_no_sooner_than_retry_after(self) -> None:
        """A 429 with Retry-After is retried after at least that long."""
        core = _core()
        ticket = core.begin_attempt(0.0)
        decision = core.on_failure(ticket, RateLimitedError("x", retry_after=4.0), 0.0, 0)
        assert decision.retry
        assert decision.kind is FailureKind.RATE_LIMITED
        assert decision.delay >= 4.0

    @pytest.mark.parametrize(
        "error", [InfrastructureError("reset", transient=True), TimeoutError()]
    )
    def test_transient_failures_are_retried(self, error: Exception) -> None:
        """Transient failures get a backoff retry and are counted."""
        core = _core()
        decision = core.on_failure(core.begin_attempt(0.0), error, 0.0, 0)
        assert decision.retry
        assert 0.0 <= decision.delay <= 0.5
        assert core.transient_failures == 1
        assert core.retries == 1

    @pytest.mark.parametrize("error", [ValueError("bug"), InfrastructureError("401")])
    def test_other_failures_are_not_retried(self, error: Exception) -> None:
        """A fatal failure propagates at once and counts the request as failed."""
        core = _core()
        decision = core.on_failure(core.begin_attempt(0.0), error, 0.0, 0)
        assert not decision.retry
        assert core.retries == 0
        assert core.failed == 1

    def test_max_retries_bounds_the_attempts(self) -> None:
        """After max_retries retries the error stands."""
        core = _core(max_retries=2)
        decisions = [
            core.on_failure(core.begin_attempt(0.0), RateLimitedError("x"), 0.0, retry)
            for retry in range(3)
        ]
        assert [d.retry for d in decisions] == [True, True, False]
        assert core.retries == 2
        assert core.rate_limited == 3
        assert core.failed == 1

    def test_zero_retries_means_one_attempt(self) -> None:
        """max_retries=0 turns every failure into the request's error."""
        core = _core(max_retries=0)
        decision = core.on_failure(core.begin_attempt(0.0), TimeoutError(), 0.0, 0)
        assert not decision.retry


class TestRetryBudget:
    """Retries last while the time a request spent failing (its failed attempts and
    backoffs, given as ``failing_for``) is within ``retry_budget``."""

    @staticmethod
    def _fail(core: LimiterCore, error: Exception, retry: int, failing_for: float) -> Decision:
        ticket = core.begin_attempt(0.0)
        return core.on_failure(ticket, error, 0.0, retry, failing_for=failing_for)

    def test_tiny_waits_are_retried_for_the_whole_budget_not_six_times(self) -> None:
        """An agent asking for 20 ms each time: 100 retries within 10 s are all made
        (a count of 6 ended the request 0.12 s after it began)."""
        core = _core(max_retries=None, retry_budget=10.0)
        decisions = [
            self._fail(core, RateLimitedError("429", retry_after=0.02), k, 0.05 * k)
            for k in range(100)
        ]
        assert all(d.retry for d in decisions)
        assert core.retries == 100
        assert core.failed == 0

    def test_no_backoff_ends_past_the_budget(self) -> None:
        """With 9.9 s spent a backoff is cut to the 0.1 s left; at 10 s nothing is left."""
        core = _core(max_retries=None, retry_budget=10.0, rng=TopJitter())
        late = self._fail(core, InfrastructureError("reset", transient=True), 3, 9.9)
        assert late.retry
        assert late.delay == pytest.approx(0.1)
        spent = self._fail(core, InfrastructureError("reset", transient=True), 4, 10.0)
        assert not spent.retry
        assert core.failed == 1

    def test_a_wait_the_agent_asks_for_must_fit_the_budget(self) -> None:
        """Retry-After 2 s with 1.5 s left: the request fails now (it would start late)."""
        core = _core(max_retries=None, retry_budget=10.0)
        decision = self._fail(core, RateLimitedError("429", retry_after=2.0), 5, 8.5)
        assert not decision.retry
        assert core.failed == 1

    def test_max_retries_still_bounds_the_count(self) -> None:
        core = _core(max_retries=2, retry_budget=60.0)
        decisions = [
            self._fail(core, RateLimitedError("429", retry_after=0.01), k, 0.1 * k)
            for k in range(3)
        ]
        assert [d.retry for d in decisions] == [True, True, False]

    def test_a_zero_budget_means_one_attempt(self) -> None:
        core = _core(max_retries=None, retry_budget=0.0)
        assert not self._fail(core, TimeoutError(), 0, 0.0).retry

    def test_a_request_that_cannot_be_repeated_is_not_retried(self) -> None:
        """A streamed body (``may_retry=False``): the refusal still pauses the others."""
        core = _core(max_retries=None)
        ticket = core.begin_attempt(0.0)
        error = RateLimitedError("429", retry_after=2.0)
        decision = core.on_failure(ticket, error, 0.0, 0, may_retry=False)
        assert not decision.retry
        assert core.pause_remaining(0.5) == pytest.approx(1.5)


class TestPauseGate:
    def test_retry_after_pauses_new_attempts(self) -> None:
        """After a 429 with Retry-After, new attempts wait out the rest of the pause."""
        core = _core()
        core.on_failure(core.begin_attempt(10.0), RateLimitedError("x", retry_after=2.0), 10.0, 0)
        assert core.pause_remaining(10.5) == pytest.approx(1.5)
        assert core.pause_remaining(12.0) == 0.0

    def test_without_retry_after_there_is_no_pause(self) -> None:
        """A bare 429 only backs off the request that got it."""
        core = _core()
        core.on_failure(core.begin_attempt(0.0), RateLimitedError("x"), 0.0, 0)
        assert core.pause_remaining(0.0) == 0.0

    def test_the_longest_pause_wins(self) -> None:
        """A shorter Retry-After does not shorten a pause already in force."""
        core = _core()
        core.on_failure(core.begin_attempt(0.0), RateLimitedError("x", retry_after=5.0), 0.0, 0)
        core.on_failure(core.begin_attempt(1.0), RateLimitedError("x", retry_after=1.0), 1.0, 0)
        assert core.pause_remaining(3.0) == pytest.approx(2.0)

    def test_clock_stepping_back_keeps_the_remaining_pause(self) -> None:
        """A clock with another origin (a new trio run) does not turn 2 s into hours."""
        core = _core()
        core.on_failure(
            core.begin_attempt(50_000.0), RateLimitedError("x", retry_after=2.0), 50_000.0, 0
        )
        assert core.pause_remaining(7.0) == pytest.approx(2.0)


class TestMaxRetryAfter:
    def test_a_longer_retry_after_fails_at_once_without_a_pause(self) -> None:
        """Retry-After above max_retry_after: no retry, no pause, a RateLimitedError
        naming both values; counted as rate-limited and failed."""
        core = _core(max_retry_after=60.0)
        original = RateLimitedError("429 slow down", retry_after=86_400.0)
        decision = core.on_failure(core.begin_attempt(0.0), original, 0.0, 0)
        assert not decision.retry
        assert decision.kind is FailureKind.RATE_LIMITED
        assert isinstance(decision.error, RateLimitedError)
        assert decision.error.retry_after == 86_400.0
        message = str(decision.error)
        assert "asked to wait 86400 s" in message
        assert "max_retry_after=60 s" in message
        assert "429 slow down" in message
        assert core.pause_remaining(0.0) == 0.0
        assert (core.rate_limited, core.failed, core.retries) == (1, 1, 0)

    def test_retry_after_up_to_the_maximum_is_honoured(self) -> None:
        """A Retry-After equal to max_retry_after is waited for as usual."""
        core = _core(max_retry_after=5.0)
        decision = core.on_failure(
            core.begin_attempt(0.0), RateLimitedError("x", retry_after=5.0), 0.0, 0
        )
        assert decision.retry
        assert decision.error is None
        assert decision.delay >= 5.0
        assert core.pause_remaining(0.0) == pytest.approx(5.0)

    def test_a_refused_wait_still_cuts_the_adaptive_window_briefly(self) -> None:
        """AIMD sees a rate-limit answer, but its cooldown is not stretched to a day."""
        core = _core(adaptive=True, max_concurrency=64)
        window = core.window
        assert window is not None
        core.on_failure(core.begin_attempt(0.0), RateLimitedError("x", retry_after=3_600.0), 0.0, 0)
        assert core.window is not None
        assert core.window < window
        assert core.episodes == 1
        cut = core.window
        core.on_failure(core.begin_attempt(1.0), RateLimitedError("x"), 1.0, 0)
        assert core.window is not None
        assert core.window < cut  # the next episode was not blocked by a long cooldown


class TestSlots:
    def test_fixed_window(self) -> None:
        """max_concurrency slots can be held at once."""
        core = _core(max_concurrency=2)
        assert [core.try_acquire_slot() for _ in range(3)] == [True, True, False]
        core.release_slot()
        assert core.try_acquire_slot()

    def test_unbounded_without_max_concurrency(self) -> None:
        """No max_concurrency and no adaptation: no slot limit."""
        core = _core()
        assert all(core.try_acquire_slot() for _ in range(1000))
        assert core.window is None

    def test_releasing_an_unheld_slot_is_a_bug(self) -> None:
        """The shell's bookkeeping errors surface instead of corrupting the count."""
        with pytest.raises(RuntimeError, match="no slot"):
            _core().release_slot()

    def test_adaptive_window_defaults_to_the_cap_as_maximum(self) -> None:
        """Without max_concurrency an adaptive window is bounded by 256."""
        core = _core(adaptive=True)
        assert core.aimd is not None
        assert core.aimd.bounds == (1, 256)
        bounded = _core(adaptive=True, max_concurrency=8)
        assert bounded.aimd is not None
        assert bounded.aimd.bounds == (1, 8)


class TestAdaptiveFeedback:
    def test_rate_limit_cuts_transient_does_not(self) -> None:
        """Only rate limits shrink the window; transient failures keep it."""
        core = _core(adaptive=True, max_concurrency=100)
        start = core.window
        core.on_failure(core.begin_attempt(0.0), TimeoutError(), 0.0, 0)
        assert core.window == start
        core.on_failure(core.begin_attempt(0.0), RateLimitedError("x"), 0.0, 0)
        assert core.window == 3
        assert core.episodes == 1

    def test_a_batch_that_fills_the_window_counts_as_clean(self) -> None:
        """Attempts that were in flight when the window filled all count towards growth."""
        core = _core(adaptive=True, max_concurrency=100)
        assert core.window == 4
        tickets = []
        for _ in range(4):
            assert core.try_acquire_slot()
            tickets.append(core.begin_attempt(0.0))
        for ticket in tickets:
            core.on_success(ticket, 1.0)
            core.release_slot()
        assert core.window == 8

    def test_slot_holders_waiting_for_tokens_do_not_fill_the_window(self) -> None:
        """A window held by token waiters, with one attempt in flight at a time, stays."""
        core = _core(adaptive=True, max_concurrency=100)
        for _ in range(4):
            assert core.try_acquire_slot()
        for _ in range(20):
            core.on_success(core.begin_attempt(0.0), 1.0)  # one in flight at a time
        assert core.window == 4

    def test_counters(self) -> None:
        """In-flight and peak counts follow begin/end of attempts."""
        core = _core()
        first = core.begin_attempt(0.0)
        core.begin_attempt(0.0)
        assert (core.in_flight, core.peak_in_flight) == (2, 2)
        core.on_success(first, 1.0)
        core.on_abandoned(1.0)
        assert (core.in_flight, core.peak_in_flight) == (0, 2)
        with pytest.raises(RuntimeError, match="never began"):
            core.on_abandoned(1.0)


class TestLittleWindowCap:
    """A learned rate's window is bounded by Little's law, not by a fixed 256."""

    @pytest.mark.parametrize(
        ("rate", "latency", "cap"),
        [
            (200.0, 1.0, 408),  # 2 x 200 in flight + 8
            (50.0, 0.1, 18),
            (5.0, 0.01, 16),  # never below the floor
            (1e6, 10.0, 10_000),  # nor above the ceiling
            (float("inf"), 1.0, 10_000),
            (float("nan"), 1.0, 10_000),
        ],
    )
    def test_window_cap(self, rate: float, latency: float, cap: int) -> None:
        assert window_cap(rate, latency) == cap

    def test_the_cap_follows_the_learned_rate(self) -> None:
        core = _core(adaptive=True, learned=True)
        assert core.aimd is not None
        assert core.aimd.bounds == (1, 16)  # nothing measured yet
        core.on_learned_rate(200.0, None)
        assert core.aimd.bounds == (1, 16)  # no latency yet: unchanged
        core.on_learned_rate(200.0, 1.0)
        assert core.aimd.bounds == (1, 408)
        core.on_learned_rate(20.0, 1.0)
        assert core.aimd.bounds == (1, 48)

    def test_the_window_is_raised_to_what_the_learned_rate_needs_in_flight(self) -> None:
        # 200/s at 5 s needs 1,000 in flight: slow start from 4, one doubling per
        # clean window (a whole latency), would take 8 latencies to get there.
        core = _core(adaptive=True, learned=True)
        assert core.window == 4
        core.on_learned_rate(200.0, 5.0)
        assert core.window == 4  # the window never bound: the rate did
        for _ in range(4):  # the attempts at the agent fill the window
            core.try_acquire_slot()
            core.begin_attempt(0.0)
        core.on_learned_rate(200.0, None)
        assert core.window == 4  # no latency measured yet: nothing to go by
        core.on_learned_rate(200.0, 5.0)
        assert core.window == window_need(200.0, 5.0) == 1008
        assert core.aimd is not None
        assert core.aimd.bounds == (1, 2008)
        core.on_learned_rate(20.0, 5.0)  # a cut rate: the cap follows, the window
        assert core.window == 208  # shrinks with it and is not raised above
        assert window_need(1.0, 0.01) == 16  # never below the floor

    @pytest.mark.parametrize(
        "options",
        [{"max_concurrency": 8}, {"learned": False}],
        ids=["max_concurrency given", "not learned"],
    )
    def test_a_given_bound_or_a_fixed_rate_keeps_its_cap(self, options: dict[str, object]) -> None:
        core = _core(adaptive=True, **{"learned": True, **options})
        assert core.aimd is not None
        before = core.aimd.bounds
        core.on_learned_rate(200.0, 1.0)
        assert core.aimd.bounds == before
        assert before[1] in (8, 256)


class TestTokensAndSpacing:
    """The decisions the shell used to make itself: is a reserved token still good,
    and when may the next spaced send go."""

    def _core(self) -> LimiterCore:
        import random

        return LimiterCore(
            max_concurrency=None, adaptive=False, max_retries=3, rng=random.Random(0)
        )

    def test_a_token_is_forfeited_after_a_pause_began_or_a_cut(self) -> None:
        from rampart.limits import RateLimitedError

        core = self._core()
        assert core.token_still_good(1.0, generation=None, current=0)
        assert core.token_still_good(1.0, generation=2, current=2)
        assert not core.token_still_good(1.0, generation=1, current=2)  # cut meanwhile
        ticket = core.begin_attempt(1.0)
        core.on_failure(ticket, RateLimitedError("429", retry_after=5.0), 1.0, retry=0)
        assert not core.token_still_good(2.0, generation=None, current=0)  # paused
        assert core.token_still_good(6.5, generation=None, current=0)

    def test_spaced_sends_keep_one_spacing(self) -> None:
        core = self._core()
        assert core.send_not_before(rate=4.0, burst=1) == float("-inf")
        core.sent(10.0, rate=4.0)
        assert core.send_not_before(rate=4.0, burst=1) == 10.25
        core.sent(3.0, rate=4.0)  # the clock stepped back: the spacing is kept
        assert core.send_not_before(rate=4.0, burst=1) == 3.25

    def test_sends_form_a_bucket_of_the_grants_burst(self) -> None:
        """Burst 3 at 10/s: three sends at one instant, the fourth a spacing after
        the schedule's start; a send after a long gap starts the schedule afresh."""
        core = self._core()
        for _ in range(3):
            assert core.send_not_before(rate=10.0, burst=3) <= 5.0
            core.sent(5.0, rate=10.0, burst=3)
        assert core.send_not_before(rate=10.0, burst=3) == pytest.approx(5.1)
        core.sent(9.0, rate=10.0, burst=3)
        assert core.send_not_before(rate=10.0, burst=3) == pytest.approx(8.9)


class TestRetryNote:
    def test_says_why_while_a_request_backs_off(self) -> None:
        import random

        from rampart import register_secret
        from rampart.core.errors import InfrastructureError
        from rampart.limits._policy._limiter_core import Decision, FailureKind

        register_secret("sk-retry-note-secret")
        core = LimiterCore(
            max_concurrency=None, adaptive=False, max_retries=6, rng=random.Random(0)
        )
        assert core.retrying is None
        error = InfrastructureError(
            "refused \x1b[31mwith sk-retry-note-secret\n" + "x" * 10_000, transient=True
        )
        decision = Decision(kind=FailureKind.TRANSIENT, retry=True, delay=1.25)
        note = core.on_retry(error, decision, 0)
        assert note == core.retrying
        assert note.startswith("retrying after InfrastructureError: refused with [REDACTED] x")
        assert note.endswith("(retry 1 of 6, in 1.2 s)")
        assert "\x1b" not in note
        assert "\n" not in note
        assert len(note) < 200
        core.on_retry(error, decision, 1)  # the same request again: still one retrying
        core.on_request_done(retried=False)  # another request, never retried
        assert core.retrying is not None
        core.on_request_done(retried=True)
        assert core.retrying is None

    def test_the_reason_comes_before_the_request_it_failed(self) -> None:
        """A down agent's error starts with the request (``POST <url>: connection
        failed (...)``); the note leaves the request out (the limiter's name says which
        agent), so the reason is what a progress line shows, not a cut-off URL."""
        import random

        from rampart.core.errors import InfrastructureError
        from rampart.limits._policy._limiter_core import Decision, FailureKind

        core = LimiterCore(
            max_concurrency=None, adaptive=False, max_retries=3, rng=random.Random(0)
        )
        decision = Decision(kind=FailureKind.TRANSIENT, retry=True, delay=0.5)
        url = "http://127.0.0.1:9/v1/" + "chat/" * 30 + "completions"
        error = InfrastructureError(
            f"POST {url}: connection failed (ConnectError: [Errno 111] Connection refused)",
            transient=True,
        )
        note = core.on_retry(error, decision, 0)
        assert note.startswith(
            "retrying after InfrastructureError: connection failed (ConnectError: [Errno 111]"
            " Connection refused)"
        )
        other = InfrastructureError("refused: POST is not allowed here", transient=True)
        assert core.on_retry(other, decision, 1).startswith(
            "retrying after InfrastructureError: refused: POST is not allowed here"
        )


@pytest.mark.parametrize(
    ("rate", "burst", "depth"),
    [
        (4.0, 1, 1),  # a tenth of a second at 4/s is less than a token
        (4.0, 10, 10),  # the burst may go at once, so it may be booked
        (200.0, 1, 20),
        (200.0, 10, 20),
        (2000.0, 16, 200),
        (0.0, 1, 1),
        (float("inf"), 3, 3),
    ],
)
def test_booking_depth_is_a_tenth_of_a_second_at_least_the_burst(
    rate: float, burst: int, depth: int
) -> None:
    assert booking_depth(rate, burst) == depth
