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
        delay = learner.feedback_delay(9.0)
        assert delay is not None
        assert delay > 3.0

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
