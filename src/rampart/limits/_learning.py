"""``LearnedRate``: one process's handle on a learned rate kept in a ``StateBackend``.

The decisions are ``_learned``'s pure functions; this class applies them to the shared
document through the backend's ``transact`` and keeps what only this process knows:
how long its attempts take (the feedback delay it reports with every reservation),
the last state it saw (for ``statistics()``), and when it last wrote what the agent
stated, so answers that repeat a known limit do not each cost a write.
"""

from __future__ import annotations

import collections
import itertools
import math
from typing import TYPE_CHECKING, Any

import attrs

from rampart.limits import _learned
from rampart.limits._learned import Grant, LearnedState, RatePolicy

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rampart.limits._backends import StateBackend
    from rampart.limits._signals import RateLimitSignal

__all__ = ["LearnedRate", "LearnedRateStatistics"]

LATENCY_WEIGHT = 0.2
"""Weight of each timed attempt in this process's latency average."""

FLOOR_RISE_SECONDS = 60.0
"""The latency floor (``LearnedRate.latency_floor``) follows a shorter attempt at once
and a longer one at most by a factor ``e`` per this many seconds."""

HINT_REFRESH = 1.0
"""Seconds: a repeated statement of the same limit is written at most this often."""


@attrs.frozen(kw_only=True)
class LearnedRateStatistics:
    """The learned rate as this process last saw it (``LimiterStatistics.learned``).

    ``rate``: requests per second the bucket allows now; ``phase``: ``"start"`` (slow
    start: doubling) or ``"probe"`` (CUBIC: climbing back towards ``peak``, the rate
    that was last refused, then beyond); ``cuts``: how often a rate-limit answer cut
    the rate (``headroom_cuts`` of them because the agent said its quota was nearly
    used up); ``stated_rate``: the lowest rate the agent's headers stated (``None``:
    they stated none); ``latency``: the smoothed feedback delay (seconds); ``sent_rate``
    and ``refused_rate``: smoothed requests and rate-limit answers per second over every
    participant; ``since_cut``: seconds since the last cut (``None``: none yet);
    ``initial`` and ``ceiling``: where it started and the user's ``rate=``;
    ``burst``: the client bucket's capacity now (the user's ``burst=``, or learned from
    the capacity the agent stated, ``stated_capacity``); ``refused_share``: the share of
    about the last 100 reservations that were refused (``None``: fewer yet).
    """

    rate: float
    phase: str
    peak: float
    cuts: int
    headroom_cuts: int
    stated_rate: float | None
    latency: float
    sent_rate: float
    refused_rate: float
    since_cut: float | None
    initial: float
    ceiling: float | None
    burst: int = 1
    stated_capacity: float | None = None
    refused_share: float | None = None


class LearnedRate:
    """The async side of one limiter's learned rate (see the module docstring)."""

    def __init__(
        self,
        *,
        backend: StateBackend,
        key: str,
        policy: RatePolicy,
        clock: Callable[[], float],
    ) -> None:
        self._backend = backend
        self._key = key
        self._policy = policy
        self._clock = clock
        self._state: LearnedState | None = None
        self._latency: float | None = None
        self._floor: float | None = None
        self._floor_at = 0.0
        self._starts: collections.deque[tuple[int, float]] = collections.deque()
        self._finished: set[int] = set()
        self._serials = itertools.count()
        self._hint_written_at = -math.inf
        self._forfeited = 0

    @property
    def policy(self) -> RatePolicy:
        return self._policy

    @property
    def generation(self) -> int:
        """The number of cuts as this process last saw it."""
        return 0 if self._state is None else self._state.generation

    # -- timing --------------------------------------------------------------------

    def begin(self, now: float) -> int:
        """An attempt starts; returns its handle for ``end``."""
        serial = next(self._serials)
        self._starts.append((serial, now))
        return serial

    def end(self, serial: int, now: float, *, timed: bool, answered: bool = False) -> None:
        """The attempt ``serial`` ended; ``timed``: its duration is a feedback delay;
        ``answered``: the agent answered it (a refusal comes at once: it says nothing
        about how long an answer takes, so only answers lower ``latency_floor``)."""
        started = None
        if self._starts and self._starts[0][0] == serial:
            started = self._starts.popleft()[1]
        else:
            for item_serial, item_start in self._starts:
                if item_serial == serial:
                    started = item_start
                    break
            self._finished.add(serial)
        while self._starts and self._starts[0][0] in self._finished:
            self._finished.discard(self._starts.popleft()[0])
        if timed and started is not None:
            duration = max(0.0, now - started)
            if answered:
                self._lower_floor(duration, now)
            if self._latency is None:
                self._latency = duration
            else:
                self._latency += LATENCY_WEIGHT * (duration - self._latency)

    def _lower_floor(self, duration: float, now: float) -> None:
        floor = self._floor
        if floor is not None:
            # Rises slowly (by e per FLOOR_RISE_SECONDS) towards a longer duration.
            floor *= math.exp(max(0.0, now - self._floor_at) / FLOOR_RISE_SECONDS)
        self._floor = duration if floor is None else min(floor, duration)
        self._floor_at = now

    def latency_floor(self) -> float | None:
        """The shortest recent attempt duration (``None``: none ended yet): the agent's
        own latency, without the time attempts spent queued in this process.

        The window's Little's-law cap uses it, not the average: when this process
        stalls (its event loop or its HTTP pool busy), the attempts' measured duration
        grows, and a cap following it would let even more attempts in, which stalls
        the process further. The floor follows a shorter attempt at once and a longer
        one only slowly (``FLOOR_RISE_SECONDS``), so an agent that really slowed down
        is followed within a minute or so, and a stall of a few seconds is not.
        """
        return self._floor

    def feedback_delay(self, now: float) -> float | None:
        """The delay this process reports: its average attempt duration, or before any
        attempt ended, the age of the oldest one in flight (answers take at least that)."""
        if self._latency is not None:
            return self._latency
        if self._starts:
            return max(0.0, now - self._starts[0][1])
        return None

    # -- transactions --------------------------------------------------------------

    def _remember(self, state: LearnedState) -> None:
        self._state = state

    def forfeit(self) -> None:
        """A reservation was not used (the attempt reserves again)."""
        self._forfeited += 1

    async def reserve(self) -> Grant:
        """Reserve a token at the learned rate; the grant says how long to wait."""
        delay = self.feedback_delay(self._clock())
        policy = self._policy
        forfeited, self._forfeited = self._forfeited, 0

        def update(
            document: dict[str, Any] | None, now: float
        ) -> tuple[dict[str, Any], tuple[LearnedState, Grant]]:
            state, grant = _learned.reserve(
                LearnedState.from_dict(document),
                now=now,
                policy=policy,
                latency=delay,
                forfeited=forfeited,
            )
            return state.to_dict(), (state, grant)

        state, grant = await self._backend.transact(self._key, update)
        self._remember(state)
        return grant

    async def throttled(self, grant: Grant, signals: Sequence[RateLimitSignal]) -> bool:
        """A rate-limit answer to the request ``grant`` let out; True if the rate was cut."""
        policy = self._policy

        def update(
            document: dict[str, Any] | None, now: float
        ) -> tuple[dict[str, Any], tuple[LearnedState, bool]]:
            state, cut = _learned.throttled(
                LearnedState.from_dict(document),
                now=now,
                policy=policy,
                generation=grant.generation,
                rate=grant.rate,
            )
            for signal in signals:
                state, _ = _learned.observed(
                    state, now=now, policy=policy, signal=signal, generation=-1
                )
            return state.to_dict(), (state, cut)

        state, cut = await self._backend.transact(self._key, update)
        self._remember(state)
        return cut

    def _worth_writing(self, signal: RateLimitSignal, now: float) -> bool:
        state = self._state
        headroom = signal.headroom
        if headroom is not None and headroom < _learned.HEADROOM_LOW:
            return True
        capacity = signal.request_capacity
        if capacity is not None and (state is None or capacity != state.capacity):
            return True
        stated = signal.request_rate
        if stated is None:
            return False
        if state is None or state.hint is None or state.law.phase == "start":
            return True
        if now - self._hint_written_at >= HINT_REFRESH:
            return True
        return stated < state.hint * 0.999

    async def observed(self, grant: Grant, signals: Sequence[RateLimitSignal]) -> bool:
        """What a successful answer said about the limit; True if the rate was cut."""
        now = self._clock()
        worth = [signal for signal in signals if self._worth_writing(signal, now)]
        if not worth:
            return False
        policy = self._policy
        self._hint_written_at = now

        def update(
            document: dict[str, Any] | None, at: float
        ) -> tuple[dict[str, Any], tuple[LearnedState, bool]]:
            state: LearnedState | None = LearnedState.from_dict(document)
            cut = False
            for signal in worth:
                state, one = _learned.observed(
                    state, now=at, policy=policy, signal=signal, generation=grant.generation
                )
                cut = cut or one
            assert state is not None
            return state.to_dict(), (state, cut)

        state, cut = await self._backend.transact(self._key, update)
        self._remember(state)
        return cut

    # -- statistics ----------------------------------------------------------------

    def statistics(self) -> LearnedRateStatistics:
        """The learned rate as last seen (before any request: where it will start)."""
        policy = self._policy
        state = self._state
        if state is None:
            state = _learned.fresh(0.0, policy)
        # As of the last transaction, on the backend's clock.
        at = max(state.stamp, state.measured_at, state.hint_at)
        sent, refused = state.smoothed(at)
        rate = _learned.rate_at(state, at, policy)
        return LearnedRateStatistics(
            rate=rate,
            phase=state.law.phase,
            peak=state.law.peak,
            cuts=state.generation,
            headroom_cuts=state.headroom_cuts,
            stated_rate=state.hint,
            latency=state.latency,
            sent_rate=sent,
            refused_rate=refused,
            since_cut=None if state.last_cut is None else max(0.0, at - state.last_cut),
            initial=policy.initial if policy.ceiling is None else policy.ceiling,
            ceiling=policy.ceiling,
            burst=_learned.burst_at(state, rate, policy),
            stated_capacity=state.capacity,
            refused_share=state.refused_share,
        )
