"""``LearnedRate``: one process's handle on a learned rate kept in a backend.

The decisions are ``_learned_rate``'s pure functions; this class applies them to the
shared state and keeps what only this process knows: how long its attempts take, the
last state it saw (for ``statistics()`` and for the rate it reserves at), and when it
last wrote what the agent stated, so answers that repeat a known limit do not each
cost a write.

**One atomic operation per request.** A reservation is one backend operation:

* on an ``AtomicRateBackend`` (Redis), ``reserve_rate``: one script books a token at
  the rate this process computed from its last view of the state (``_learned_rate.pacing``)
  and, when that view was stale (another host learned something since), returns the
  current state with the booking, so the next reservation uses it. A token booked on a
  stale view has the old generation, and the limiter reserves again after a cut;
* on any other ``StateBackend`` (memory, files), ``transact`` with ``_learned_rate.reserve``
  under the backend's lock.

**Learning events are rare writes**: a cut, a limit the agent stated, and this
process's latency (reported at most every ``LATENCY_REPORT`` seconds, sooner only when
it changed a lot). On an atomic backend a learning write that loses a compare-and-set
to another host reads again after a jittered backoff; after ``LEARN_ATTEMPTS`` it is
dropped (the other hosts were learning at that moment too): it never fails a request.

**Damaged state restarts.** A stored state this version cannot use (another version
wrote it, it is damaged, or a field is out of its range: ``_learned_rate.load``) is
rewritten from a fresh start, with a ``RuntimeWarning`` naming the key and the field;
it never leaves pacing off. A Redis state the reservation script keeps refusing even
after it was rewritten raises ``InfrastructureError`` naming the key.
"""

from __future__ import annotations

import collections
import itertools
import math
import warnings
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import anyio
import attrs

from rampart.core.errors import InfrastructureError
from rampart.limits._policy import _learned_rate
from rampart.limits._policy._learned_rate import (
    DamagedState,
    Grant,
    LearnedState,
    Pacing,
    RatePolicy,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rampart.limits._backends import StateBackend
    from rampart.limits._signals import RateLimitSignal

__all__ = ["AtomicRateBackend", "Booked", "LearnedRate", "LearnedRateStatistics", "RateSnapshot"]

R = TypeVar("R")

LATENCY_REPORT = 1.0
"""Seconds: this process reports its latency to the shared state at most this often,
when it differs from the shared value by more than ``LATENCY_DRIFT`` of it ..."""

LATENCY_DRIFT = 0.1

LATENCY_CHANGE = 0.5
LATENCY_MATTERS = 0.1
LATENCY_REPORT_MIN = 0.25
"""... and sooner (every ``LATENCY_REPORT_MIN`` s) when it differs by more than
``LATENCY_CHANGE`` of it and more than ``LATENCY_MATTERS`` seconds."""

LEARN_ATTEMPTS = 12
"""Compare-and-set attempts of one learning write on an atomic backend."""

RESERVE_ATTEMPTS = 8
"""Reservations tried while the shared state is missing or damaged (each time it is
written afresh first)."""


@attrs.frozen(kw_only=True)
class RateSnapshot:
    """The learned rate as one atomic read found it: ``version`` (learning writes so
    far; ``0``: no state; ``-1``: not a version), the stored ``document`` and
    ``meter``, ``shift`` (idle seconds not yet in the document's epoch), the backend's
    clock ``now``, and the ``state`` they make (``None``: missing or damaged; then
    ``damage`` says what was wrong with a stored one, naming its key)."""

    version: int
    document: dict[str, Any] | None
    meter: dict[str, float]
    shift: float
    now: float
    state: LearnedState | None
    damage: str | None = None


@attrs.frozen(kw_only=True)
class Booked:
    """A token booked in one atomic step: wait ``wait`` seconds (booked at ``now`` on
    the backend's clock); the idle ``shift`` and the ``meter`` after it (its ``due`` and
    ``stamp`` only, unless the view was stale: then the whole meter, and ``stale``
    holds the current ``(version, document)``)."""

    now: float
    wait: float
    shift: float
    meter: dict[str, float]
    stale: tuple[int, dict[str, Any] | None] | None = None


@runtime_checkable
class AtomicRateBackend(Protocol):
    """A backend that books a learned rate's token in one atomic operation and applies
    learning events as versioned writes (``RedisBackend``)."""

    async def reserve_rate(
        self, key: str, *, version: int, pacing: Pacing, forfeited: int, held: bool = False
    ) -> Booked | None:
        """Book one token at ``pacing`` (``held``: see ``_learned_rate.book``); ``None``
        when there is no usable state."""
        ...

    async def read_rate(self, key: str) -> RateSnapshot: ...

    async def write_rate(
        self, key: str, *, read: RateSnapshot, state: LearnedState, rewrite: bool = False
    ) -> int | None:
        """Store ``state`` (computed from ``read``); the new version, or ``None`` when
        another participant changed the learned part since ``read``. ``rewrite``: store
        all of it afresh (the stored state was refused by a reservation)."""
        ...

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after the ``attempt``-th lost write (jittered)."""
        ...


@attrs.define(kw_only=True)
class _View:
    """This process's last view of the shared state on an atomic backend: ``state`` as
    of the last full read or write (``version``, the stored ``document`` and its
    ``epoch`` before the idle shift), then the ``meter`` and idle ``shift`` of the last
    booking, and the backend's clock ``now`` at it (``local``: this process's clock at
    the same moment). The effective state is built only when something reads it, and
    the ``Pacing`` is reused for ``PACING_REUSE`` seconds: the per-request path stays a
    few attribute reads and one script."""

    version: int
    document: dict[str, Any] | None
    state: LearnedState
    epoch: float
    now: float
    local: float
    meter: dict[str, float] | None = None
    shift: float = 0.0
    pacing: Pacing | None = None
    paced_at: float = -math.inf
    built: LearnedState | None = None

    def current(self) -> LearnedState:
        """The state with the last booking's meter and idle shift."""
        if self.meter is None:
            return self.state
        if self.built is None:
            law = attrs.evolve(self.state.law, epoch=self.epoch + self.shift)
            self.built = attrs.evolve(self.state, law=law, **self.meter)  # type: ignore[arg-type]
        return self.built


PACING_REUSE = 0.005
"""Seconds a computed ``Pacing`` (the learned rate and burst at a moment) is reused for
the next reservations of this process: the CUBIC law moves far less than that in 5 ms."""


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
        self._atomic = backend if isinstance(backend, AtomicRateBackend) else None
        self._view: _View | None = None
        self._reported: float | None = None
        self._reported_at = -math.inf

    @property
    def policy(self) -> RatePolicy:
        return self._policy

    @property
    def generation(self) -> int:
        """The number of cuts as this process last saw it. (Read on every request: a
        booking's meter and idle shift leave the cuts as they were, so the view's last
        full state has them; building the current state would cost two copies.)"""
        view = self._view
        state = self._state if view is None else view.state
        return 0 if state is None else state.generation

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
        if floor is not None and floor > 0.0:
            # Rises slowly (by e per FLOOR_RISE_SECONDS) towards a longer duration, and
            # stops there (``exp`` overflows after 12 h without an answer).
            rise = max(0.0, now - self._floor_at) / FLOOR_RISE_SECONDS
            if rise >= math.log(max(duration, floor) / floor):
                floor = duration
            else:
                floor *= math.exp(rise)
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

    def _seen(self) -> LearnedState | None:
        """The state as this process last saw it."""
        view = self._view
        return self._state if view is None else view.current()

    def _learned_part(self) -> LearnedState | None:
        """The state as this process last saw it, without the meter of the bookings
        since: enough for what only learning events change (the latency, the stated
        limit and capacity, the phase), and read on every request, where building the
        current state (two copies) cost about a tenth of a learned reservation's CPU."""
        view = self._view
        return self._state if view is None else view.state

    def forfeit(self) -> None:
        """A reservation was not used (the attempt reserves again)."""
        self._forfeited += 1

    async def reserve(self, *, held: bool = False) -> Grant:
        """Reserve a token at the learned rate; the grant says how long to wait.
        ``held``: requests of this process are queued behind the rate (see
        ``_learned_rate.book``)."""
        await self._report_latency()
        forfeited, self._forfeited = self._forfeited, 0
        if self._atomic is not None:
            return await self._reserve_atomic(self._atomic, forfeited, held)
        policy = self._policy

        def update(
            document: dict[str, Any] | None, now: float
        ) -> tuple[dict[str, Any], tuple[LearnedState, Grant, str | None]]:
            loaded, damage = _loaded(document)
            state, grant = _learned_rate.reserve(
                loaded, now=now, policy=policy, forfeited=forfeited, held=held
            )
            return state.to_dict(), (state, grant, damage)

        state, grant, damage = await self._backend.transact(self._key, update)
        self._remember(state)
        self._warn(damage)
        return grant

    def _warn(self, damage: str | None) -> None:
        """Say that a stored state was damaged and has been rewritten from a fresh start."""
        if damage is not None:
            warnings.warn(
                f"the learned rate {self._key!r} ({self._backend.description}): its stored "
                f"state was damaged or written by another version ({damage}); it was "
                "rewritten from a fresh start",
                RuntimeWarning,
                stacklevel=3,
            )

    async def _reserve_atomic(
        self, backend: AtomicRateBackend, forfeited: int, held: bool
    ) -> Grant:
        for _ in range(RESERVE_ATTEMPTS):
            view = self._view
            if view is None:
                await self._learn(lambda state, now: (state, None))
                view = self._view
                assert view is not None
            at = view.now + max(0.0, self._clock() - view.local)
            paced = view.pacing
            if paced is None or not 0.0 <= at - view.paced_at < PACING_REUSE:
                paced = _learned_rate.pacing(view.current(), at, self._policy, held=held)
                view.pacing, view.paced_at = paced, at
            booked = await backend.reserve_rate(
                self._key, version=view.version, pacing=paced, forfeited=forfeited, held=held
            )
            if booked is None:
                # Expired, or a state the script refuses: write it afresh (even if this
                # process's reader finds nothing wrong with it), then book again.
                self._view = None
                await self._learn(lambda state, now: (state, None), rewrite=True)
                continue
            generation = view.state.generation
            self._see_booked(view, booked)
            return Grant(
                wait=booked.wait, generation=generation, rate=paced.rate, burst=paced.burst
            )
        raise InfrastructureError(
            f"the learned rate {self._key!r} ({self._backend.description}) was missing or "
            f"unusable under {RESERVE_ATTEMPTS} reservations in a row, each after writing "
            "it afresh (is something deleting or damaging its key?)"
        )

    def _see_booked(self, view: _View, booked: Booked) -> None:
        local = self._clock()
        if booked.stale is not None:
            version, document = booked.stale
            fresh: LearnedState | None
            shifted: LearnedState | None
            try:
                fresh = _learned_rate.join(document, booked.meter, now=booked.now)
                shifted = _learned_rate.join(
                    document, booked.meter, shift=booked.shift, now=booked.now
                )
            except DamagedState:
                fresh = shifted = None
            if fresh is not None and shifted is not None and version > 0:
                self._view = _View(
                    version=version,
                    document=document,
                    state=shifted,
                    epoch=fresh.law.epoch,
                    now=booked.now,
                    local=local,
                )
                self._remember(shifted)
                return
            # A damaged document: book on the old view now; the next reservation
            # writes the state afresh (``_learn`` from no view).
            self._view = None
            return
        view.meter, view.shift, view.built = booked.meter, booked.shift, None
        view.now, view.local = booked.now, local

    async def _learn(
        self,
        transition: Callable[[LearnedState, float], tuple[LearnedState, R]],
        *,
        attempts: int = LEARN_ATTEMPTS,
        rewrite: bool = False,
    ) -> R | None:
        """Apply a learning event (``transition`` of the state at the backend's ``now``)
        to the shared state; its result, or ``None`` if it was dropped (see the module
        docstring). ``rewrite``: store the state afresh even if the event changes
        nothing (a reservation found the stored one unusable)."""
        backend = self._atomic
        if backend is None:
            policy = self._policy

            def update(
                document: dict[str, Any] | None, now: float
            ) -> tuple[dict[str, Any], tuple[LearnedState, R, str | None]]:
                loaded, damage = _loaded(document)
                state, result = transition(loaded or _learned_rate.fresh(now, policy), now)
                return state.to_dict(), (state, result, damage)

            state, result, damage = await self._backend.transact(self._key, update)
            self._remember(state)
            self._warn(damage)
            return result
        damage = None  # warned of once the state is rewritten (``-W error`` raises)
        for attempt in range(attempts):
            read = await backend.read_rate(self._key)
            local = self._clock()
            damage = damage or read.damage
            current = read.state or _learned_rate.fresh(read.now, self._policy)
            state, result = transition(current, read.now)
            if read.state is not None and state == read.state and not rewrite:
                version: int | None = read.version  # nothing to write
            else:
                version = await backend.write_rate(
                    self._key, read=read, state=state, rewrite=rewrite
                )
            if version is not None:
                document, _ = _learned_rate.split(state)
                kept = read.state is not None and _learned_rate.split(read.state)[0] == document
                self._view = _View(
                    version=version,
                    document=document,
                    state=state,
                    # An unchanged document keeps its stored epoch and the idle shift.
                    epoch=state.law.epoch - (read.shift if kept else 0.0),
                    now=read.now,
                    local=local,
                )
                self._remember(state)
                self._warn(damage)
                return result
            if attempt + 1 < attempts:
                await anyio.sleep(backend.backoff(attempt))
        self._warn(damage)
        return None

    async def _report_latency(self) -> None:
        """Report this process's feedback delay when it is due: a rare learning write.

        Due when none was reported yet; every ``LATENCY_REPORT`` seconds while it
        differs from the shared value by more than ``LATENCY_DRIFT``; and sooner (every
        ``LATENCY_REPORT_MIN`` s) when it differs by more than ``LATENCY_CHANGE`` and at
        least ``LATENCY_MATTERS`` seconds (below that, the slow-start doubling and the
        probing period do not depend on it). One attempt: a report that loses to
        another host's write is dropped (the next one comes soon), so it never holds a
        request back with a backoff.
        """
        now = self._clock()
        delay = self.feedback_delay(now)
        if delay is None or delay <= 0.0:
            return
        since = now - self._reported_at
        seen = self._learned_part()
        shared = None if (seen is None or self._reported is None) else seen.latency
        if shared is not None:
            gap = abs(delay - shared)
            drifted = since >= LATENCY_REPORT and gap > LATENCY_DRIFT * shared
            jumped = since >= LATENCY_REPORT_MIN and gap > max(
                LATENCY_CHANGE * shared, LATENCY_MATTERS
            )
            if not (drifted or jumped):
                return
        self._reported, self._reported_at = delay, now
        policy = self._policy

        def report(state: LearnedState, at: float) -> tuple[LearnedState, None]:
            return _learned_rate.latency_reported(state, now=at, policy=policy, latency=delay), None

        await self._learn(report, attempts=1)

    async def throttled(self, grant: Grant, signals: Sequence[RateLimitSignal]) -> bool:
        """A rate-limit answer to the request ``grant`` let out; True if the rate was cut."""
        policy = self._policy

        def transition(state: LearnedState, now: float) -> tuple[LearnedState, bool]:
            state, cut = _learned_rate.throttled(
                state, now=now, policy=policy, generation=grant.generation, rate=grant.rate
            )
            for signal in signals:
                state, _ = _learned_rate.observed(
                    state, now=now, policy=policy, signal=signal, generation=-1
                )
            return state, cut

        return bool(await self._learn(transition))

    def _worth_writing(self, signal: RateLimitSignal, now: float) -> bool:
        state = self._learned_part()
        headroom = signal.headroom
        if headroom is not None and headroom < _learned_rate.HEADROOM_LOW:
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

        def transition(state: LearnedState, at: float) -> tuple[LearnedState, bool]:
            cut = False
            for signal in worth:
                state, one = _learned_rate.observed(
                    state, now=at, policy=policy, signal=signal, generation=grant.generation
                )
                cut = cut or one
            return state, cut

        return bool(await self._learn(transition))

    # -- statistics ----------------------------------------------------------------

    def statistics(self) -> LearnedRateStatistics:
        """The learned rate as last seen (before any request: where it will start)."""
        policy = self._policy
        state = self._seen()
        if state is None:
            state = _learned_rate.fresh(0.0, policy)
        # As of the last transaction, on the backend's clock.
        at = max(
            state.stamp, state.measured_at, state.stamp if state.hint is None else state.hint_at
        )
        sent, refused = state.smoothed(at)
        rate = _learned_rate.rate_at(state, at, policy)
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
            burst=_learned_rate.burst_at(state, rate, policy),
            stated_capacity=state.capacity,
            refused_share=state.refused_share,
        )


def _loaded(document: dict[str, Any] | None) -> tuple[LearnedState | None, str | None]:
    """A stored document as a state (``None``: none, or unusable) and what was wrong
    with an unusable one."""
    if document is None:
        return None, None
    try:
        return _learned_rate.load(document), None
    except DamagedState as error:
        return None, str(error)
