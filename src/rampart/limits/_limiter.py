"""``limit(adapter, ...)``: the async shell that paces a wrapped adapter's sends.

Every ``send_async`` of a session made by the ``LimitedAdapter`` goes through one
limiter, in this order, once per attempt:

1. take a **concurrency slot** (FIFO; at most ``current_window`` held at once);
2. wait out any ``Retry-After`` **pause** the agent asked for;
3. reserve a **token** from the bucket (``rate``/``burst``) in the backend and sleep
   until it is due; if a pause began meanwhile, go back to step 2 (the reserved token
   is forfeited and a fresh one reserved after the pause);
4. call the wrapped ``send_async`` through the engine's adapter contract checks (an
   ``AdapterContractError``, e.g. a ``send_async`` that is not async or does not return
   a ``Response``, is a fatal failure, never a success);
5. release the slot. A failed attempt is classified by ``LimiterCore``; when it is
   retried, the request backs off *without* its slot (others may proceed) and starts
   again at step 1, so retries are paced by the same slots and tokens as first tries.

The slot comes before the token so a request never holds a token while queueing for a
slot (queued requests would otherwise burst when slots free up), and every retry pays
for a new token. All decisions live in the synchronous ``LimiterCore``; this module
only waits. Time comes from ``anyio.current_time`` (so trio's ``MockClock`` drives it).

Process-wide state: ``live_limiters()`` reads a ``weakref.WeakSet`` of the limiters
that are still alive, so the pytest plugin can report every limiter's statistics
without the user registering them. It holds no strong references and no budget; it is
the only module-level state in ``rampart.limits``.
"""

from __future__ import annotations

import itertools
import random
import weakref
from typing import TYPE_CHECKING, Self, final

import anyio
import anyio.lowlevel

from rampart import _slowdown
from rampart._checks import (
    check_bool,
    check_callable,
    check_int,
    check_optional_int,
    check_optional_number,
    check_optional_text,
    check_seconds,
    invalid,
)
from rampart._redact import redact
from rampart.core._contract import (
    check_entered,
    create_session,
    enter_session,
    exit_session,
    send_checked,
)
from rampart.core.adapter import AgentAdapter, Session
from rampart.core.errors import AdapterContractError
from rampart.limits._backends import LimitBackend, StateBackend
from rampart.limits._default import default_backend
from rampart.limits._errors import RateLimitedError, as_refusal
from rampart.limits._fifo import FifoGate, Places
from rampart.limits._policy._learned_rate import Grant, RatePolicy
from rampart.limits._policy._limiter_core import (
    DEFAULT_MAX_RETRY_AFTER,
    Decision,
    LimiterCore,
    booking_depth,
)
from rampart.limits._shared_rate import LearnedRate
from rampart.limits._signals import RateLimitSignal, collect_signals
from rampart.limits._stats import LimiterStatistics

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from rampart.core.manifest import AppManifest
    from rampart.core.types import ObservabilityLevel, Request, Response

__all__ = ["LimitedAdapter", "LimitedSession", "limit", "live_limiters"]

_OWNER = "limit()"
_ADAPTER = "an AgentAdapter (create_session_async, manifest, observability_profile)"
_BACKEND = "a LimitBackend (MemoryBackend, FileBackend, RedisBackend, ...)"
_STATE_BACKEND = (
    "a backend with transact() (MemoryBackend, FileBackend, RedisBackend) for a learned "
    "rate (adaptive=True)"
)
_CLOCK = "a callable returning seconds"
_LIVE: weakref.WeakSet[LimitedAdapter] = weakref.WeakSet()

SPIN_SECONDS = 0.001
"""How long before a send's deadline the spacing turnstile stops sleeping and yields
to the event loop instead (see ``LimitedAdapter._sleep_until``)."""
_SERIALS = itertools.count()


def live_limiters() -> tuple[LimitedAdapter, ...]:
    """Every ``LimitedAdapter`` still alive in this process, in creation order."""
    return tuple(sorted(_LIVE, key=lambda limited: limited._serial))


@final
class LimitedAdapter:
    """An ``AgentAdapter`` whose sessions send through a limiter; build it with ``limit()``.

    ``manifest`` and ``observability_profile`` are the wrapped adapter's. One limiter
    (slots, window, counters) serves every session this adapter creates.
    """

    _adapter: AgentAdapter
    _name: str
    _rate: float | None
    _burst: int | None
    _max_concurrency: int | None
    _max_retries: int
    _max_retry_after: float
    _backend: LimitBackend | None
    _clock: Callable[[], float]
    _core: LimiterCore
    _learner: LearnedRate | None
    _booked: Places
    _booking: FifoGate
    _turnstile: FifoGate
    _slots: FifoGate
    _serial: int

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("LimitedAdapter is built by rampart.limits.limit(adapter, ...)")

    @classmethod
    def _create(
        cls,
        *,
        adapter: AgentAdapter,
        name: str,
        rate: float | None,
        burst: int | None,
        max_concurrency: int | None,
        adaptive: bool,
        max_retries: int,
        max_retry_after: float,
        backend: LimitBackend | None,
        clock: Callable[[], float],
        rng: random.Random,
    ) -> LimitedAdapter:
        self = object.__new__(cls)
        self._adapter = adapter
        self._name = name
        self._rate = rate
        self._burst = burst
        self._max_concurrency = max_concurrency
        self._max_retries = max_retries
        self._max_retry_after = max_retry_after
        self._backend = backend
        self._clock = clock
        self._learner = None
        # A learned rate's tokens booked and not yet sent, at most ``booking_depth``.
        self._booked = Places(1)
        self._booking = FifoGate(take=self._booked.take, give=self._booked.give)
        head = Places(1)  # the send turnstile's head (``_keep_spacing``)
        self._turnstile = FifoGate(take=head.take, give=head.give)
        if adaptive:
            assert isinstance(backend, StateBackend)
            self._learner = LearnedRate(
                backend=backend,
                key=name,
                policy=RatePolicy(burst=burst, ceiling=rate),
                clock=clock,
            )
        self._core = LimiterCore(
            max_concurrency=max_concurrency,
            adaptive=adaptive,
            max_retries=max_retries,
            max_retry_after=max_retry_after,
            rng=rng,
            learned=self._learner is not None,
        )
        self._slots = FifoGate(take=self._core.try_acquire_slot, give=self._core.release_slot)
        self._serial = next(_SERIALS)
        _LIVE.add(self)
        return self

    def __repr__(self) -> str:
        return (
            f"LimitedAdapter({self._adapter!r}, name={self._name!r}, rate={self._rate!r}, "
            f"burst={self._burst!r}, max_concurrency={self._max_concurrency!r}, "
            f"adaptive={self.adaptive!r})"
        )

    # -- AgentAdapter ----------------------------------------------------------------

    @property
    def manifest(self) -> AppManifest:
        return self._adapter.manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return self._adapter.observability_profile

    async def create_session_async(self) -> LimitedSession:
        # The engine checks only this wrapper; the wrapped adapter gets the same checks here.
        inner = await create_session(self._adapter)
        return LimitedSession._create(limiter=self, inner=inner)

    # -- configuration ---------------------------------------------------------------

    @property
    def adapter(self) -> AgentAdapter:
        """The wrapped adapter."""
        return self._adapter

    @property
    def name(self) -> str:
        """The bucket key (shared across processes that use the same backend)."""
        return self._name

    @property
    def rate(self) -> float | None:
        """The ``rate=`` given: the fixed rate, or with ``adaptive=True`` the learned
        rate's starting point and ceiling (``None``: not given)."""
        return self._rate

    @property
    def burst(self) -> int | None:
        """The bucket's capacity (``None``: no bucket, or with ``adaptive=True`` and no
        ``burst=`` given, learned: see ``statistics().learned.burst``)."""
        return self._burst

    @property
    def max_concurrency(self) -> int | None:
        return self._max_concurrency

    @property
    def adaptive(self) -> bool:
        return self._core.adaptive

    @property
    def max_retries(self) -> int:
        return self._max_retries

    @property
    def max_retry_after(self) -> float:
        """The longest ``Retry-After`` honoured; a longer one fails the request at once."""
        return self._max_retry_after

    @property
    def backend(self) -> LimitBackend | None:
        """Where the token bucket lives (``None`` without one: no ``rate`` and not
        ``adaptive``)."""
        return self._backend

    def statistics(self) -> LimiterStatistics:
        """A snapshot of this limiter's counters (this process only).

        Its text (the name, the backend's description) passes the redaction policy:
        statistics go to the report's metadata.
        """
        core = self._core
        return LimiterStatistics(
            name=redact(self._name),
            backend="none" if self._backend is None else redact(self._backend.description),
            adaptive=core.adaptive,
            max_concurrency=self._max_concurrency,
            rate=self._rate,
            burst=self._burst,
            in_flight=core.in_flight,
            peak_in_flight=core.peak_in_flight,
            requests=core.requests,
            retries=core.retries,
            rate_limited=core.rate_limited,
            transient_failures=core.transient_failures,
            failed=core.failed,
            current_window=core.window,
            rate_limit_episodes=core.episodes,
            wait_seconds=core.wait_seconds,
            learned=None if self._learner is None else self._learner.statistics(),
            retrying=core.retrying,
            window_cap=self._max_concurrency if core.aimd is None else core.aimd.bounds[1],
        )

    # -- the shell -------------------------------------------------------------------

    async def _wait_until_ready(self) -> Grant | None:
        """Steps 2 and 3: the ``Retry-After`` pause, then a token.

        Returns the learned rate's grant (``None`` for a fixed bucket or none).

        A pause may begin while the attempt sleeps on its token (another request's 429).
        Then the attempt waits the pause out and reserves a *fresh* token: the forfeited
        one only delays (the budget still holds), and the fresh reservations space the
        waiters at ``1/rate`` after the pause instead of letting them all go at once.
        Likewise when a learned rate was cut while the attempt slept: its token was
        reserved at the old rate, so it reserves again at the new one. A learned rate's
        attempts book at most ``booking_depth`` tokens ahead of their sends (the rest
        wait their turn here, first come first served): see that function.
        """
        core = self._core
        clock = self._clock
        backend = self._backend
        learner = self._learner
        while True:
            pause = core.pause_remaining(clock())
            while pause > 0.0:
                await anyio.sleep(pause)
                pause = core.pause_remaining(clock())
            if learner is not None:
                await self._booking.enter()  # see booking_depth
                try:
                    # Requests queued behind the booked tokens: the rate holds them back.
                    grant = await learner.reserve(held=self._booking.queued > 0)
                    core.on_learned_rate(grant.rate, learner.latency_floor())
                    depth = booking_depth(grant.rate, grant.burst)
                    if depth != self._booked.limit:
                        self._booked.limit = depth
                        self._booking.wake()
                    if grant.wait > 0.0:
                        await anyio.sleep(grant.wait)
                    if not core.token_still_good(
                        clock(), generation=grant.generation, current=learner.generation
                    ):
                        learner.forfeit()
                        continue
                    await self._keep_spacing(grant)
                    return grant
                finally:
                    self._booking.leave()
            if backend is None or self._rate is None or self._burst is None:
                return None
            wait = await backend.acquire(self._name, rate=self._rate, burst=self._burst)
            if wait > 0.0:
                await anyio.sleep(wait)
            if core.token_still_good(clock(), generation=None, current=0):
                return None

    async def _keep_spacing(self, grant: Grant) -> None:
        """A learned rate: this process's sends keep the schedule their tokens had,
        measured on the *actual* send times: at most ``grant.burst`` at once, then one
        ``1 / grant.rate`` apart.

        The bucket already spaces the tokens, but an event loop that wakes attempts
        late and together (a busy CPU, a garbage collection of a few hundred
        milliseconds) would send every token that came due meanwhile back to back, and
        an agent whose own bucket is smaller answers the surplus with 429s, each a cut
        of the learned rate (measured at 200/s: one 450 ms stall, 61 refusals, the rate
        cut from 194/s to 62/s). So the attempts whose tokens are due pass a
        first-come-first-served turnstile (only its head waits on the clock), which
        lets ``burst`` through at once and the rest at the rate. A late wake-up
        therefore delays later sends instead of bunching them; with a burst of 1 each
        delay is capacity lost for good, which is why the head waits with
        ``_sleep_until`` (precise to well under a millisecond).
        """
        await self._turnstile.enter()
        try:
            core = self._core
            await self._sleep_until(core.send_not_before(rate=grant.rate, burst=grant.burst))
            core.sent(self._clock(), rate=grant.rate, burst=grant.burst)
        finally:
            self._turnstile.leave()

    async def _sleep_until(self, deadline: float) -> None:
        """Sleep until ``deadline`` on this limiter's clock, without the event loop's
        timer lateness: an event loop wakes a sleeper up to a millisecond late (epoll
        counts milliseconds), a fifth of the spacing at 200/s. So sleep until
        ``SPIN_SECONDS`` before it, then yield to the loop until the clock reaches it.
        A clock that does not move while a task yields (a virtual clock, which only
        jumps while every task sleeps) gets a plain sleep instead."""
        clock = self._clock
        ahead = deadline - clock()
        if ahead <= 0.0:
            return
        if ahead > SPIN_SECONDS:
            await anyio.sleep(ahead - SPIN_SECONDS)
        last = None
        while (now := clock()) < deadline:
            if now == last:
                await anyio.sleep(deadline - now)
            else:
                last = now
                await anyio.lowlevel.checkpoint()

    async def _send(self, session: Session, request: Request) -> Response:
        """Send ``request`` on ``session`` through this limiter (with retries)."""
        core = self._core
        clock = self._clock
        learner = self._learner
        core.on_request()
        retry = 0
        try:
            while True:
                queued_at = clock()
                await self._slots.enter()
                decision: Decision
                try:
                    try:
                        grant = await self._wait_until_ready()
                    except Exception:
                        core.on_request_failed()  # the backend failed; the agent was not asked
                        raise
                    now = clock()
                    core.add_wait(now - queued_at)
                    ticket = core.begin_attempt(now)
                    serial = None if learner is None else learner.begin(now)
                    signals: list[RateLimitSignal] = []
                    try:
                        with collect_signals(signals.append):
                            response = await send_checked(session, request)
                    except Exception as error:
                        ended = clock()
                        failure = error
                        # rampart's RateLimitedError, or a foreign 429 read as one.
                        refusal = as_refusal(error)
                        if refusal is not None:
                            # An adaptive trial group around us backs off too.
                            _slowdown.report(_slowdown.SlowDown(refused=True))
                        decision = core.on_failure(ticket, error, ended, retry)
                        if learner is not None and serial is not None:
                            learner.end(serial, ended, timed=True)
                            try:
                                await self._learn_refusal(grant, refusal or error, signals)
                            except Exception:
                                if decision.retry:  # else the request is already counted
                                    core.on_request_failed()
                                raise
                        if not decision.retry:
                            if decision.error is not None:
                                raise decision.error from error
                            raise
                    except BaseException:
                        core.on_abandoned(clock())
                        if learner is not None and serial is not None:
                            learner.end(serial, clock(), timed=False)
                        raise
                    else:
                        ended = clock()
                        core.on_success(ticket, ended)
                        if learner is not None and serial is not None:
                            learner.end(serial, ended, timed=True, answered=True)
                            if signals and grant is not None:
                                await learner.observed(grant, signals)
                        return response
                finally:
                    self._slots.leave()
                # Say why we wait (the progress line shows it): a down agent is retried for
                # a while, and without a word the run looks stuck.
                note = core.on_retry(failure, decision, retry)
                _slowdown.report(_slowdown.SlowDown(retrying=f"{self._name}: {note}"))
                backoff_from = clock()
                await anyio.sleep(decision.delay)
                core.add_wait(clock() - backoff_from)
                retry += 1
        finally:
            core.on_request_done(retried=retry > 0)

    async def _learn_refusal(
        self,
        grant: Grant | None,
        error: Exception,
        signals: list[RateLimitSignal],
    ) -> None:
        """Tell the learned rate about a failed attempt (only rate-limit answers count)."""
        learner = self._learner
        if learner is None or grant is None:
            return
        if not isinstance(error, RateLimitedError):
            if signals:
                await learner.observed(grant, signals)
            return
        if error.signal is not None and error.signal not in signals:
            signals = [*signals, error.signal]
        await learner.throttled(grant, signals)


@final
class LimitedSession:
    """A wrapped session whose ``send_async`` goes through its adapter's limiter."""

    __slots__ = ("_active", "_inner", "_limiter")

    _limiter: LimitedAdapter
    _inner: Session
    _active: Session | None

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("LimitedSession is created by LimitedAdapter.create_session_async()")

    @classmethod
    def _create(cls, *, limiter: LimitedAdapter, inner: Session) -> LimitedSession:
        self = object.__new__(cls)
        self._limiter = limiter
        self._inner = inner
        self._active = None
        return self

    def __repr__(self) -> str:
        return f"LimitedSession({self._inner!r}, limiter={self._limiter.name!r})"

    @property
    def inner(self) -> Session:
        """The wrapped adapter's session."""
        return self._inner

    async def __aenter__(self) -> Self:
        inner = self._inner
        entered = await enter_session(inner)
        try:
            self._active = check_entered(inner, entered)
        except AdapterContractError:
            with anyio.CancelScope(shield=True):
                await exit_session(inner, None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await exit_session(self._inner, exc_type, exc, tb)

    async def send_async(self, request: Request) -> Response:
        target = self._active if self._active is not None else self._inner
        return await self._limiter._send(target, request)


def limit(
    adapter: AgentAdapter,
    *,
    max_concurrency: int | None = None,
    rate: float | None = None,
    burst: int | None = None,
    adaptive: bool = False,
    max_retries: int = 6,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    name: str | None = None,
    backend: LimitBackend | None = None,
) -> LimitedAdapter:
    """Wrap ``adapter`` so its sessions' sends are paced, bounded and retried.

    * ``max_concurrency``: at most this many attempts in flight in this process
      (``None``: unbounded; with ``adaptive``, the window's cap is derived from the
      learned rate times the attempts' latency, Little's law).
    * ``rate`` / ``burst``: a token bucket of ``rate`` requests per second holding up
      to ``burst`` tokens (default ``1``: evenly spaced, no bursts; with ``adaptive``,
      learned from the bucket size the agent states, else ``1``). ``burst`` and
      ``backend`` need ``rate`` or ``adaptive``.
    * ``adaptive``: learn the rate (a bucket whose rate follows a CUBIC-style
      controller on the agent's rate-limit answers and headers; ``rate``, if given, is
      where it starts and its ceiling) and a window in ``[1, max_concurrency]``
      (default: ``2 x rate x latency + 8``, 16 to 10,000) that grows on clean windows.
    * ``max_retries``: retries per request for rate-limited and transient failures.
    * ``max_retry_after``: the longest ``Retry-After`` (seconds) the limiter waits for;
      a rate-limit answer asking for longer fails the request at once, unretried.
    * ``name``: the bucket key, shared by every process using the same backend
      (default: the adapter's class name).
    * ``backend``: where the bucket lives (default: ``default_backend()``, from the
      environment).

    See ``docs/limits.md``.
    """
    return _build(
        adapter,
        max_concurrency=max_concurrency,
        rate=rate,
        burst=burst,
        adaptive=adaptive,
        max_retries=max_retries,
        max_retry_after=max_retry_after,
        name=name,
        backend=backend,
    )


def _build(
    adapter: AgentAdapter,
    *,
    max_concurrency: int | None = None,
    rate: float | None = None,
    burst: int | None = None,
    adaptive: bool = False,
    max_retries: int = 6,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    name: str | None = None,
    backend: LimitBackend | None = None,
    clock: Callable[[], float] | None = None,
    rng: random.Random | None = None,
) -> LimitedAdapter:
    """``limit()`` with an injectable clock and jitter source (for tests)."""
    if isinstance(adapter, type) or not isinstance(adapter, AgentAdapter):
        raise invalid(_OWNER, "adapter", _ADAPTER, adapter)
    max_concurrency = check_optional_int(_OWNER, "max_concurrency", max_concurrency, minimum=1)
    checked_rate = check_optional_number(_OWNER, "rate", rate, above=0)
    checked_burst = check_optional_int(_OWNER, "burst", burst, minimum=1)
    adaptive = check_bool(_OWNER, "adaptive", adaptive)
    max_retries = check_int(_OWNER, "max_retries", max_retries, minimum=0)
    max_retry_after = check_seconds(_OWNER, "max_retry_after", max_retry_after, positive=True)
    name = check_optional_text(_OWNER, "name", name)
    if name is None:
        name = type(adapter).__qualname__
    if backend is not None and not isinstance(backend, LimitBackend):
        raise invalid(_OWNER, "backend", f"{_BACKEND} or None", backend)
    if checked_rate is None and not adaptive:
        if checked_burst is not None:
            raise ValueError(
                f"{_OWNER}: burst={burst!r} needs rate (or adaptive=True); pass rate= as well"
            )
        if backend is not None:
            raise ValueError(
                f"{_OWNER}: backend holds the token bucket and needs rate (or adaptive=True); "
                "pass rate= as well"
            )
    else:
        if checked_burst is None and not adaptive:
            checked_burst = 1
        if backend is None:
            backend = default_backend()
        if adaptive and not isinstance(backend, StateBackend):
            raise invalid(_OWNER, "backend", _STATE_BACKEND, backend)
    check_callable(_OWNER, "clock", clock, expected=_CLOCK, optional=True)
    return LimitedAdapter._create(
        adapter=adapter,
        name=name,
        rate=checked_rate,
        burst=checked_burst,
        max_concurrency=max_concurrency,
        adaptive=adaptive,
        max_retries=max_retries,
        max_retry_after=max_retry_after,
        backend=backend,
        clock=clock or anyio.current_time,
        rng=rng or random.Random(),
    )
