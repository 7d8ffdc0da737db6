"""``LearnedRate``'s own measurements (this process's attempt timings)."""

from __future__ import annotations

import math

import pytest

from rampart.limits import MemoryBackend
from rampart.limits._policy._learned_rate import RatePolicy
from rampart.limits._shared_rate import FLOOR_RISE_SECONDS, LearnedRate


def _learner() -> LearnedRate:
    return LearnedRate(backend=MemoryBackend(), key="k", policy=RatePolicy(), clock=lambda: 0.0)


def _attempt(
    learner: LearnedRate,
    start: float,
    duration: float,
    *,
    timed: bool = True,
    answered: bool = True,
) -> None:
    learner.end(learner.begin(start), start + duration, timed=timed, answered=answered)


class TestLatencyFloor:
    def test_none_before_an_attempt_ends(self) -> None:
        learner = _learner()
        learner.begin(0.0)
        assert learner.latency_floor() is None

    def test_follows_a_shorter_attempt_at_once(self) -> None:
        learner = _learner()
        _attempt(learner, 0.0, 2.0)
        _attempt(learner, 2.0, 1.0)
        assert learner.latency_floor() == 1.0

    def test_a_stall_of_a_few_seconds_barely_moves_it(self) -> None:
        """Attempts of 1 s, then 3 s of 6 s attempts (this process stalled): the
        average follows, the floor stays within a few percent of 1 s."""
        learner = _learner()
        _attempt(learner, 0.0, 1.0)
        for start in (1.0, 2.0, 3.0):
            _attempt(learner, start, 6.0)
        floor = learner.latency_floor()
        assert floor == pytest.approx(math.exp(8.0 / FLOOR_RISE_SECONDS))
        assert floor is not None
        assert floor < 1.2

    def test_an_agent_that_slowed_down_is_followed(self) -> None:
        learner = _learner()
        _attempt(learner, 0.0, 1.0)
        start = 1.0
        while start < 10 * FLOOR_RISE_SECONDS:
            _attempt(learner, start, 5.0)
            start += 1.0
        assert learner.latency_floor() == 5.0

    def test_untimed_attempts_and_refusals_do_not_count(self) -> None:
        """A refusal comes at once: counted, it would drop the floor (and the window's
        cap) to nothing."""
        learner = _learner()
        _attempt(learner, 0.0, 0.001, timed=False)
        _attempt(learner, 0.0, 0.001, answered=False)
        assert learner.latency_floor() is None
        _attempt(learner, 0.0, 1.0)
        _attempt(learner, 1.0, 0.001, answered=False)
        assert learner.latency_floor() == 1.0


class TestFeedbackDelay:
    """What slow start and the climb back wait for: a refusal, not an answer."""

    def test_none_until_a_refusal_is_timed(self) -> None:
        """Answers of 5 s say nothing about how soon a rate too high is heard."""
        learner = _learner()
        learner.begin(0.0)
        assert learner.feedback_delay(3.0) is None
        _attempt(learner, 0.0, 5.0)
        assert learner.feedback_delay(5.0) is None

    def test_follows_how_long_refusals_take(self) -> None:
        learner = _learner()
        _attempt(learner, 0.0, 5.0)
        _attempt(learner, 1.0, 0.002, answered=False)
        assert learner.feedback_delay(2.0) == pytest.approx(0.002)
        for start in range(2, 40):  # an agent that refuses only after 2 s
            _attempt(learner, float(start), 2.0, answered=False)
        delay = learner.feedback_delay(50.0)
        assert delay is not None
        assert delay == pytest.approx(2.0, rel=0.01)
        _attempt(learner, 50.0, 0.5, timed=False, answered=False)  # cancelled: not timed
        assert learner.feedback_delay(51.0) == delay
