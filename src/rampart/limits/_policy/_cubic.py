"""A CUBIC-style growth law for one positive quantity, as pure functions of a frozen state.

The learned request rate (``rampart.limits._policy._learned_rate``) follows it, and anything else
that should grow until the agent pushes back can reuse it (a trial group's clone
concurrency, for instance): nothing here knows about buckets, requests or clocks
beyond the ``now`` values the caller passes in.

The law has two phases:

* **start** (slow start): the value doubles every ``doubling`` seconds from ``origin``
  until the first congestion signal;
* **probe**: after a congestion signal at value ``peak`` the value drops to
  ``origin = beta * peak`` and climbs back along a cubic that reaches ``peak`` after
  ``period`` seconds, stays flat around it (where the last trouble was) and then
  accelerates beyond it to find out whether more is possible::

      value(t) = peak - (peak - origin) * (1 - t / period) ** 3

  The curve depends only on the ratio ``origin / peak`` and on ``period``, so it has
  the same shape at 5 and at 500 (botocore's ``CubicCalculator`` fixes the cubic's
  coefficient instead, which makes small rates probe much faster, relative to their
  size, than large ones).

Time only counts while the value is *used*: the caller calls ``idle(state, seconds)``
for time during which the value was not the binding limit (a token bucket that stayed
full, a window that was never filled), which moves the epoch forward. A controller
that was not tested does not grow, so it cannot drift far above what the agent
accepts and then hit it with a burst.
"""

from __future__ import annotations

import math
from typing import Literal

import attrs

__all__ = ["CubicState", "congested", "idle", "plateau", "restart", "value"]

Phase = Literal["start", "probe"]


@attrs.frozen(kw_only=True)
class CubicState:
    """Where the law is: ``phase``, the value at ``epoch`` (``origin``), the last
    congestion value (``peak``; equal to ``origin`` in slow start) and ``cuts``, the
    number of congestion signals that changed it (an attempt records it when it
    starts, so that later answers to requests sent before a cut do not cut again)."""

    phase: Phase
    origin: float
    peak: float
    epoch: float
    period: float
    doubling: float
    cuts: int = 0


def restart(*, value: float, now: float, period: float, doubling: float) -> CubicState:
    """A fresh law in slow start at ``value``."""
    return CubicState(
        phase="start", origin=value, peak=value, epoch=now, period=period, doubling=doubling
    )


START_SPAN = 64.0
"""Doublings after which slow start stops growing (``2 ** 64`` times ``origin``) ..."""

PROBE_SPAN = 1e4
"""... and periods after which the probing curve does (``(PROBE_SPAN - 1) ** 3`` times
``peak - origin`` above ``peak``): far beyond any value a caller uses, and the law
stays a finite number however long it runs (``2 ** huge`` and ``huge ** 3`` overflow,
with ``OverflowError``, after hours of a value in use or on a damaged epoch)."""


def value(state: CubicState, now: float) -> float:
    """The value at ``now`` (never below ``origin``; finite for any ``now``)."""
    elapsed = max(0.0, now - state.epoch)
    if state.phase == "start":
        return state.origin * math.pow(2.0, min(elapsed / state.doubling, START_SPAN))
    remaining = 1.0 - min(elapsed / state.period, PROBE_SPAN)
    return state.peak - (state.peak - state.origin) * remaining**3


def idle(state: CubicState, seconds: float) -> CubicState:
    """``seconds`` during which the value was not the binding limit: they do not count."""
    if seconds <= 0.0:
        return state
    return attrs.evolve(state, epoch=state.epoch + seconds)


def congested(
    state: CubicState,
    *,
    now: float,
    peak: float,
    beta: float,
    period: float,
    floor: float = 0.0,
) -> CubicState:
    """A congestion signal: the value that was too much was ``peak``; start probing
    again from ``beta * peak`` (at least ``floor``), reaching ``peak`` after ``period``."""
    peak = max(peak, floor)
    origin = max(floor, peak * beta)
    return CubicState(
        phase="probe",
        origin=origin,
        peak=max(peak, origin),
        epoch=now,
        period=period,
        doubling=state.doubling,
        cuts=state.cuts + 1,
    )


def plateau(state: CubicState, *, now: float, peak: float, period: float) -> CubicState:
    """Jump to ``peak`` and probe from there (used when the agent *told* us the value):
    the epoch is set so the curve sits at the start of its flat part."""
    return CubicState(
        phase="probe",
        origin=peak * 0.5,
        peak=peak,
        epoch=now - period,
        period=period,
        doubling=state.doubling,
        cuts=state.cuts,
    )
