from __future__ import annotations

import pytest

from rampart.limits import AimdWindow


def _clean_window(aimd: AimdWindow, *, now: float = 0.0) -> bool:
    """Feed one window's worth of successes; return whether the last one grew the window."""
    grew = False
    for _ in range(aimd.window):
        grew = aimd.on_success(generation=aimd.generation, now=now)
    return grew


class TestSlowStart:
    def test_starts_at_the_initial_window(self) -> None:
        """A new window starts at ``initial`` in slow start."""
        aimd = AimdWindow(initial=4, maximum=100)
        assert aimd.window == 4
        assert aimd.slow_start

    def test_initial_is_clamped_to_the_bounds(self) -> None:
        """An initial window above the maximum starts at the maximum."""
        assert AimdWindow(initial=10, maximum=3).window == 3

    def test_doubles_per_clean_window(self) -> None:
        """Each clean window doubles the window until the first episode."""
        aimd = AimdWindow(initial=1, maximum=1000)
        sizes = [aimd.window]
        for _ in range(5):
            assert _clean_window(aimd)
            sizes.append(aimd.window)
        assert sizes == [1, 2, 4, 8, 16, 32]

    def test_grows_only_after_a_full_window_of_successes(self) -> None:
        """window - 1 successes are not yet a clean window."""
        aimd = AimdWindow(initial=4, maximum=100)
        for _ in range(3):
            assert not aimd.on_success(generation=0, now=0.0)
        assert aimd.window == 4
        assert aimd.on_success(generation=0, now=0.0)
        assert aimd.window == 8

    def test_growth_stops_at_the_maximum(self) -> None:
        """The window never exceeds its upper bound."""
        aimd = AimdWindow(initial=4, maximum=6)
        assert _clean_window(aimd)
        assert aimd.window == 6
        assert not _clean_window(aimd)
        assert aimd.window == 6

    def test_successes_in_an_unused_window_do_not_grow_it(self) -> None:
        """A window that was not full when the attempt started teaches nothing."""
        aimd = AimdWindow(initial=2, maximum=100)
        for _ in range(10):
            assert not aimd.on_success(generation=0, now=0.0, window_full=False)
        assert aimd.window == 2


class TestDecrease:
    def test_episode_multiplies_by_point_eight(self) -> None:
        """A rate-limit episode cuts the window to floor(0.8 * window) and ends slow start."""
        aimd = AimdWindow(initial=10, maximum=100)
        assert aimd.on_rate_limited(generation=0, now=0.0)
        assert aimd.window == 8
        assert not aimd.slow_start
        assert aimd.episodes == 1

    @pytest.mark.parametrize(("before", "after"), [(1, 1), (2, 1), (3, 2), (4, 3), (5, 4)])
    def test_small_windows_still_shrink_but_not_below_one(self, before: int, after: int) -> None:
        """Flooring guarantees progress down to the lower bound of 1."""
        aimd = AimdWindow(initial=before, maximum=100)
        aimd.on_rate_limited(generation=0, now=0.0)
        assert aimd.window == after

    def test_lower_bound_is_respected(self) -> None:
        """A custom minimum is never undercut."""
        aimd = AimdWindow(initial=5, minimum=5, maximum=10)
        aimd.on_rate_limited(generation=0, now=0.0)
        assert aimd.window == 5

    def test_a_burst_of_429s_is_one_episode(self) -> None:
        """Responses to requests sent before the cut do not cut again."""
        aimd = AimdWindow(initial=20, maximum=100, cooldown=1.0)
        cuts = [aimd.on_rate_limited(generation=0, now=0.0 + i * 0.01) for i in range(10)]
        assert cuts == [True] + [False] * 9
        assert aimd.window == 16

    def test_cooldown_debounces_requests_sent_after_the_cut(self) -> None:
        """Within the cooldown even fresh requests' 429s belong to the same episode."""
        aimd = AimdWindow(initial=20, maximum=100, cooldown=1.0)
        aimd.on_rate_limited(generation=0, now=0.0)
        assert not aimd.on_rate_limited(generation=aimd.generation, now=0.5)
        assert aimd.on_rate_limited(generation=aimd.generation, now=1.0)
        assert aimd.window == 12
        assert aimd.episodes == 2

    def test_retry_after_extends_the_cooldown(self) -> None:
        """A longer Retry-After keeps the episode open for that long."""
        aimd = AimdWindow(initial=20, maximum=100, cooldown=1.0)
        aimd.on_rate_limited(generation=0, now=0.0, retry_after=5.0)
        assert not aimd.on_rate_limited(generation=aimd.generation, now=4.9)
        assert aimd.on_rate_limited(generation=aimd.generation, now=5.0)

    def test_clock_stepping_back_keeps_the_remaining_cooldown(self) -> None:
        """A new event loop's clock (e.g. another trio run) does not stretch the cooldown."""
        aimd = AimdWindow(initial=20, maximum=100, cooldown=2.0)
        aimd.on_rate_limited(generation=0, now=1000.0)
        aimd.on_success(generation=aimd.generation, now=1000.5)  # 1.5 s of cooldown left
        # The clock jumps back to 3.0: the 1.5 s left now end at 4.5, not at 1002.
        assert not aimd.on_rate_limited(generation=aimd.generation, now=3.0)
        assert not aimd.on_rate_limited(generation=aimd.generation, now=4.4)
        assert aimd.on_rate_limited(generation=aimd.generation, now=4.5)


class TestAdditiveIncrease:
    def test_after_an_episode_growth_is_plus_one_per_clean_window(self) -> None:
        """Congestion avoidance adds one slot per clean window."""
        aimd = AimdWindow(initial=10, maximum=100)
        aimd.on_rate_limited(generation=0, now=0.0)
        sizes = [aimd.window]
        for _ in range(3):
            _clean_window(aimd, now=10.0)
            sizes.append(aimd.window)
        assert sizes == [8, 9, 10, 11]

    def test_successes_from_before_the_cut_do_not_count(self) -> None:
        """Only attempts started under the current window count towards growth."""
        aimd = AimdWindow(initial=5, maximum=100)
        aimd.on_rate_limited(generation=0, now=0.0)
        for _ in range(50):
            assert not aimd.on_success(generation=0, now=0.1)
        assert aimd.window == 4

    def test_cut_resets_the_clean_count(self) -> None:
        """Successes before an episode do not carry over into the next window."""
        aimd = AimdWindow(initial=10, maximum=100, cooldown=0.0)
        aimd.on_rate_limited(generation=0, now=0.0)  # window 8
        for _ in range(7):
            aimd.on_success(generation=aimd.generation, now=1.0)
        aimd.on_rate_limited(generation=aimd.generation, now=1.0)  # window 6, count reset
        for _ in range(5):
            assert not aimd.on_success(generation=aimd.generation, now=2.0)
        assert aimd.on_success(generation=aimd.generation, now=2.0)
        assert aimd.window == 7


class TestRefusalsWithoutCuts:
    def test_any_refusal_restarts_the_clean_count(self) -> None:
        """A 429 inside the cooldown does not cut, but the window is no longer clean."""
        aimd = AimdWindow(initial=10, maximum=100, cooldown=5.0)
        aimd.on_rate_limited(generation=0, now=0.0)  # window 8
        for _ in range(7):
            aimd.on_success(generation=aimd.generation, now=1.0)
        assert not aimd.on_rate_limited(generation=aimd.generation, now=1.0)
        for _ in range(7):
            assert not aimd.on_success(generation=aimd.generation, now=2.0)
        assert aimd.on_success(generation=aimd.generation, now=2.0)
        assert aimd.window == 9


class TestArguments:
    @pytest.mark.parametrize(
        ("kwargs", "error", "name"),
        [
            ({"maximum": 0}, ValueError, "maximum"),
            ({"minimum": 0}, ValueError, "minimum"),
            ({"minimum": 5, "maximum": 4}, ValueError, "maximum"),
            ({"initial": 0}, ValueError, "initial"),
            ({"initial": True}, TypeError, "initial"),
            ({"decrease": 1.0}, ValueError, "decrease"),
            ({"decrease": 0}, ValueError, "decrease"),
            ({"decrease": "0.5"}, TypeError, "decrease"),
            ({"cooldown": -1}, ValueError, "cooldown"),
        ],
    )
    def test_bad_arguments_name_the_argument(
        self, kwargs: dict[str, object], error: type[Exception], name: str
    ) -> None:
        """Every bad bound or factor is rejected with its name."""
        with pytest.raises(error, match=name):
            AimdWindow(**kwargs)  # type: ignore[arg-type]


class TestSetMaximum:
    def test_a_lower_bound_shrinks_the_window_and_a_higher_one_lets_it_grow(self) -> None:
        window = AimdWindow(maximum=64, initial=32)
        window.set_maximum(10)
        assert (window.bounds, window.window) == ((1, 10), 10)
        window.set_maximum(40)
        assert window.window == 10  # not raised at once: it grows on clean windows
        for _ in range(10):
            window.on_success(generation=0, now=0.0)
        assert window.window == 20

    def test_below_the_minimum_is_refused(self) -> None:
        window = AimdWindow(minimum=4)
        with pytest.raises(ValueError, match="maximum"):
            window.set_maximum(3)


class TestRaiseTo:
    def test_raises_within_the_bounds_and_never_lowers(self) -> None:
        window = AimdWindow(maximum=64, initial=4)
        window.raise_to(20)
        assert window.window == 20
        window.raise_to(8)
        assert window.window == 20  # never lowered
        window.raise_to(1000)
        assert window.window == 64  # not above the maximum

    def test_growth_goes_on_from_the_raised_window(self) -> None:
        window = AimdWindow(maximum=64, initial=4)
        window.raise_to(16)
        assert _clean_window(window)
        assert window.window == 32  # still slow start: doubling from 16
