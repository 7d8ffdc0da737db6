"""``Limiter``: one limiter, the one a name stands for in a run; the async shell that waits.

Every ``limit(...)`` and every ``LimitedTransport`` of one name in a run is this one
object (``rampart.limits._registry``): one token bucket, one learned rate and its
controller, one concurrency window, one ``Retry-After`` pause, one set of statistics.
What it limits is an *attempt*: a coroutine function (an adapter session's
``send_async``, a transport's HTTP exchange) that it calls once per try, in this order:

1. take a **concurrency slot** (FIFO; at most ``current_window`` held at once);
2. wait out any ``Retry-After`` **pause** the agent asked for;
3. reserve a **token** from the bucket (``rate``/``burst``) in the backend and sleep
   until it is due; if a pause began meanwhile, go back to step 2 (the reserved token
   is forfeited and a fresh one reserved after the pause);
4. call the attempt;
5. release the slot. A failed attempt is classified by ``LimiterCore``; when it is
   retried, the request backs off *without* its slot (others may proceed) and starts
   again at step 1, so retries are paced by the same slots and tokens as first tries.

The slot comes before the token so a request never holds a token while queueing for a
slot (queued requests would otherwise burst when slots free up), and every retry pays
for a new token. All decisions live in the synchronous ``LimiterCore``; this module
only waits. Time comes from ``RUN_CLOCK`` (the running loop's clock, continued across
the event loops of a run, so trio's ``MockClock`` drives it).

**One event loop at a time.** A run's tests may each have an event loop; the limiter
serves them one after the other (its queues hold a loop's events only while a request
waits). A request from a second event loop while the first one's are still inside
raises ``RuntimeError``: its queues would hand one loop's tasks to another.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, TypeVar, final

import anyio
import anyio.lowlevel

from rampart._pacing import slowdown
from rampart._redact import redact
from rampart.limits._backends import StateBackend
from rampart.limits._clock import RUN_CLOCK
from rampart.limits._errors import RateLimitedError, as_refusal
from rampart.limits._fifo import FifoGate, Places
from rampart.limits._policy._learned_rate import Grant, RatePolicy
from rampart.limits._policy._limiter_core import Decision, LimiterCore, booking_depth
from rampart.limits._shared_rate import LearnedRate
from rampart.limits._signals import RateLimitSignal, collect_signals
from rampart.limits._stats import LimiterStatistics

if TYPE_CHECKING:
    import random
    from collections.abc import Awaitable, Callable

    from rampart.limits._backends import LimitBackend
    from rampart.limits._settings import LimitSettings

__all__ = ["SPIN_SECONDS", "Limiter"]

T = TypeVar("T")

SPIN_SECONDS = 0.001
"""How long before a send's deadline the spacing turnstile stops sleeping and yields
to the event loop instead (see ``Limiter._sleep_until``)."""


@final
class Limiter:
    """One limiter: what every ``limit()`` and transport of its ``name`` shares in a run.

    Built by ``limit()`` and the transports (never directly); ``live_limiters()`` lists
    the run's. Its properties are the settings it was made with; ``statistics()`` is
    what it did in this process.
    """

    _settings: LimitSettings
    _backend: LimitBackend | None
    _clock: Callable[[], float]
    _core: LimiterCore
    _learner: LearnedRate | None
    _booked: Places
    _booking: FifoGate
    _turnstile: FifoGate
    _slots: FifoGate
    _loop: weakref.ref[object] | None
    _active: int

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a Limiter is made by rampart.limits.limit() or a LimitedTransport")

    @classmethod
    def _create(
        cls,
        *,
        settings: LimitSettings,
        backend: LimitBackend | None,
        clock: Callable[[], float] | None,
        rng: random.Random,
    ) -> Limiter:
        self = object.__new__(cls)
        self._settings = settings
        self._backend = backend
        self._clock = RUN_CLOCK if clock is None else clock
        self._learner = None
        self._loop = None
        self._active = 0
        # A learned rate's tokens booked and not yet sent, at most ``booking_depth``.
        self._booked = Places(1)
        self._booking = FifoGate(take=self._booked.take, give=self._booked.give)
        head = Places(1)  # the send turnstile's head (``_keep_spacing``)
        self._turnstile = FifoGate(take=head.take, give=head.give)
        if settings.adaptive:
            assert isinstance(backend, StateBackend)
            self._learner = LearnedRate(
                backend=backend,
                key=settings.name,
                policy=RatePolicy(burst=settings.burst, ceiling=settings.rate),
                clock=self._clock,
            )
        self._core = LimiterCore(
            max_concurrency=settings.max_concurrency,
            adaptive=settings.adaptive,
            max_retries=settings.max_retries,
            retry_budget=settings.retry_budget,
            max_retry_after=settings.max_retry_after,
            rng=rng,
            learned=self._learner is not None,
        )
        self._slots = FifoGate(take=self._core.try_acquire_slot, give=self._core.release_slot)
        return self

    def __repr__(self) -> str:
        settings = self._settings
        return (
            f"Limiter(name={settings.name!r}, rate={settings.rate!r}, "
            f"burst={settings.burst!r}, max_concurrency={settings.max_concurrency!r}, "
            f"adaptive={settings.adaptive!r})"
        )

    # -- configuration ---------------------------------------------------------------

    @property
    def name(self) -> str:
        """The bucket key (shared across processes that use the same backend)."""
        return self._settings.name

    @property
    def rate(self) -> float | None:
        """The ``rate=`` given: the fixed rate, or with ``adaptive=True`` the learned
        rate's starting point and ceiling (``None``: not given)."""
        return self._settings.rate

    @property
    def burst(self) -> int | None:
        """The bucket's capacity (``None``: no bucket, or with ``adaptive=True`` and no
        ``burst=`` given, learned: see ``statistics().learned.burst``)."""
        return self._settings.burst

    @property
    def max_concurrency(self) -> int | None:
        return self._settings.max_concurrency

    @property
    def adaptive(self) -> bool:
        return self._settings.adaptive

    @property
    def max_retries(self) -> int | None:
        """The most retries of one request (``None``: as many as the budget allows)."""
        return self._settings.max_retries

    @property
    def retry_budget(self) -> float:
        """Seconds a request may spend failing while it is retried (see ``limit()``)."""
        return self._settings.retry_budget

    @property
    def max_retry_after(self) -> float:
        """The longest ``Retry-After`` honoured; a longer one fails the request at once."""
        return self._settings.max_retry_after

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
        settings = self._settings
        return LimiterStatistics(
            name=redact(settings.name),
            backend="none" if self._backend is None else redact(self._backend.description),
            adaptive=core.adaptive,
            max_concurrency=settings.max_concurrency,
            rate=settings.rate,
            burst=settings.burst,
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
            window_cap=settings.max_concurrency if core.aimd is None else core.aimd.bounds[1],
        )

    # -- the event loop ------------------------------------------------------------------

    def _enter(self) -> None:
        """A request enters: check it comes from the event loop the limiter serves now
        (see the module docstring), and follow a new one."""
        loop = anyio.lowlevel.current_token().native_token
        known = self._loop
        if known is None or known() is not loop:
            if self._active:
                raise RuntimeError(
                    f"limiter {self._settings.name!r}: used from a second event loop while "
                    f"{self._active} request(s) of another are inside it; a limiter serves "
                    "one event loop at a time (use another name, or one event loop)"
                )
            self._loop = weakref.ref(loop)
            if self._clock is RUN_CLOCK:
                RUN_CLOCK.sync()
        self._active += 1

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
                    # A window the rate raised lets the requests waiting for a slot in
                    # now, not when the next attempt ends (a latency later).
                    self._slots.wake()
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
            settings = self._settings
            if backend is None or settings.rate is None or settings.burst is None:
                return None
            wait = await backend.acquire(settings.name, rate=settings.rate, burst=settings.burst)
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

    async def call(self, attempt: Callable[[], Awaitable[T]], *, retry: bool = True) -> T:
        """Call ``attempt`` through this limiter: paced, bounded and retried (see the
        module docstring); its result, or the error that ended the retrying.
        ``retry=False``: one attempt only (it cannot be repeated), still paced."""
        self._enter()
        try:
            return await self._call(attempt, may_retry=retry)
        finally:
            self._active -= 1

    async def _call(self, attempt: Callable[[], Awaitable[T]], *, may_retry: bool) -> T:
        core = self._core
        clock = self._clock
        learner = self._learner
        core.on_request()
        retry = 0
        failing = 0.0  # seconds this request spent failing: see LimiterCore.on_failure
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
                            response = await attempt()
                    except Exception as error:
                        ended = clock()
                        failure = error
                        failing += max(0.0, ended - now)
                        # rampart's RateLimitedError, or a foreign 429 read as one.
                        refusal = as_refusal(error)
                        decision = core.on_failure(
                            ticket,
                            error,
                            ended,
                            retry,
                            failing_for=failing,
                            may_retry=may_retry,
                        )
                        if refusal is not None and core.passes_on(decision):
                            # An adaptive trial group around us backs off too.
                            slowdown.report(
                                slowdown.SlowDown(refused=True, handed_back=not decision.retry)
                            )
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
                slowdown.report(slowdown.SlowDown(retrying=f"{self._settings.name}: {note}"))
                backoff_from = clock()
                await anyio.sleep(decision.delay)
                backed_off = clock() - backoff_from
                core.add_wait(backed_off)
                failing += max(0.0, backed_off)
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
