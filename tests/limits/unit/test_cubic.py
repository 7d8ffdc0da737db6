"""The CUBIC-style growth law: pure functions of a state and ``now``."""

from __future__ import annotations

import pytest

from rampart.limits._policy import _cubic


def _start(value: float = 4.0) -> _cubic.CubicState:
    return _cubic.restart(value=value, now=10.0, period=4.0, doubling=0.5)


class TestSlowStart:
    def test_doubles_every_doubling_time(self) -> None:
        """From 4 at t=10, doubling every 0.5 s: 8 at 10.5, 32 at 11.5."""
        state = _start()
        assert _cubic.value(state, 10.0) == 4.0
        assert _cubic.value(state, 10.5) == pytest.approx(8.0)
        assert _cubic.value(state, 11.5) == pytest.approx(32.0)

    def test_time_before_the_epoch_does_not_shrink_it(self) -> None:
        assert _cubic.value(_start(), 3.0) == 4.0

    def test_idle_time_does_not_count(self) -> None:
        """Two seconds during which the value did not bind: no growth for them."""
        state = _cubic.idle(_start(), 2.0)
        assert _cubic.value(state, 12.5) == pytest.approx(8.0)
        assert _cubic.idle(state, 0.0) is state


class TestProbe:
    def test_cut_then_climb_back_along_the_cubic(self) -> None:
        """A congestion signal at 100: 90 right after, 100 after one period (flat there),
        then faster and faster above it."""
        state = _cubic.congested(_start(), now=20.0, peak=100.0, beta=0.9, period=4.0)
        assert (state.phase, state.cuts, state.peak, state.origin) == ("probe", 1, 100.0, 90.0)
        assert _cubic.value(state, 20.0) == pytest.approx(90.0)
        assert _cubic.value(state, 22.0) == pytest.approx(100.0 - 10.0 * 0.5**3)
        assert _cubic.value(state, 24.0) == pytest.approx(100.0)
        assert _cubic.value(state, 26.0) == pytest.approx(100.0 + 10.0 * 0.5**3)
        assert _cubic.value(state, 28.0) == pytest.approx(110.0)
        assert _cubic.value(state, 32.0) == pytest.approx(180.0)

    def test_the_shape_does_not_depend_on_the_scale(self) -> None:
        """At 5 and at 500 the climb is the same curve, scaled."""
        small = _cubic.congested(_start(), now=0.0, peak=5.0, beta=0.8, period=2.0)
        large = _cubic.congested(_start(), now=0.0, peak=500.0, beta=0.8, period=2.0)
        for t in (0.0, 0.5, 1.0, 2.0, 3.0, 5.0):
            assert _cubic.value(large, t) == pytest.approx(100 * _cubic.value(small, t))

    def test_floor(self) -> None:
        """A cut never goes below the floor."""
        state = _cubic.congested(_start(), now=0.0, peak=0.001, beta=0.5, period=1.0, floor=0.01)
        assert state.origin == 0.01
        assert _cubic.value(state, 0.0) == pytest.approx(0.01)

    def test_plateau_sits_at_the_stated_value(self) -> None:
        """Told the value, the law jumps to it and stays flat there for a while."""
        state = _cubic.plateau(_start(), now=5.0, peak=50.0, period=2.0)
        assert state.phase == "probe"
        assert state.cuts == 0
        assert _cubic.value(state, 5.0) == pytest.approx(50.0)
        assert _cubic.value(state, 6.0) == pytest.approx(50.0 + 25.0 / 8)
