"""The limiter's decisions as a synchronous state machine (sans-io).

``LimiterCore`` owns everything a limiter *decides*: whether a concurrency slot is
free, how long new attempts must pause after a ``Retry-After``, whether a reserved
token is still good when its wait is over (``token_still_good``: no pause began and
the learned rate was not cut meanwhile), when a send must keep its spacing from the
previous ones (``send_not_before``/``sent``), how an exception is classified, whether
and when to retry, how the adaptive window moves, and the counters behind
``statistics()``. It never sleeps, never awaits and never reads a
clock: the async shell (``rampart.limits._limiter``) passes ``now`` in and does the
waiting. That keeps every rule testable with plain synchronous tests.

Classification of an exception raised by the wrapped ``send_async`` is
``rampart.core._failures.classify_failure``'s (rampart's own errors, and by duck typing
what agent SDKs and frameworks raise, wrapped or not):

* ``RATE_LIMITED`` (a ``RateLimitedError``; a foreign error carrying HTTP 429, or 503
  with a wait): retried (backoff, never sooner than its ``retry_after``, read from the
  foreign error's ``Retry-After`` by ``rampart.limits._errors.as_refusal``), cuts the
  adaptive window (once per episode), and pauses *new* attempts until ``retry_after``
  has passed. A ``retry_after`` above ``max_retry_after`` is not honoured: the request
  fails at once (with a ``RateLimitedError`` naming both values), no pause begins, and
  the window is cut as for a 429 without ``Retry-After``;
* ``TRANSIENT`` (``InfrastructureError(transient=True)``, ``TimeoutError``,
  ``ConnectionError``; a foreign 5xx, connection or timeout error): retried with
  backoff, the window is kept;
* ``FATAL`` (an ``AdapterContractError``, any other error, a bug): propagates at once.

A request is retried while its **retry budget** lasts: the time it has spent failing
(its failed attempts and the backoffs after them; not its waits for a slot or a token,
which are its turn at the rate) may reach ``retry_budget`` seconds, and a backoff that
would pass it is cut to fit (a ``Retry-After`` that does not fit ends the retrying);
``max_retries``, when given, bounds the count as well. After that the last error
propagates. A budget of time, not a count: an agent that asks for tiny pauses
(``Retry-After: 20 ms``) refuses a request six times within a second when many compete
for its rate, and six was then a budget spent on nothing.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import attrs

from rampart._pacing import AimdWindow
from rampart._redact import redact
from rampart._text import one_line
from rampart.core._internal import FailureKind, classify_failure
from rampart.limits._errors import RateLimitedError, as_refusal
from rampart.limits._policy._backoff import DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_CAP, backoff_delay

if TYPE_CHECKING:
    import random

__all__ = [
    "DEFAULT_MAX_RETRY_AFTER",
    "DEFAULT_RETRY_BUDGET",
    "Decision",
    "FailureKind",
    "LimiterCore",
    "Ticket",
    "classify",
    "window_cap",
    "window_need",
]

RETRY_TEXT_SCAN = 2000
RETRY_TEXT_CHARS = 120
"""A retry note reads at most ``RETRY_TEXT_SCAN`` characters of the error (truncated
before any per-character work) and shows at most ``RETRY_TEXT_CHARS`` of them."""

# An HTTP adapter's error starts with the request it failed ("POST <url>: connection
# failed (...)"). The note leaves it out, so a progress line shows the reason and not a
# cut-off URL (the limiter's name already says which agent). Anchored: one linear pass.
_REQUEST_PREFIX = re.compile(r"\A(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS) \S+?: ")

DEFAULT_MAX_RETRY_AFTER = 60.0
"""Seconds: the longest ``Retry-After`` a limiter waits for by default."""

DEFAULT_RETRY_BUDGET = 60.0
"""Seconds a request may spend failing while it is retried, by default."""

LITTLE_HEADROOM = 2.0
"""A learned rate's window allows this many times ``rate x latency`` in flight ..."""

LITTLE_SLACK = 8
"""... plus this many (attempts holding a slot while they wait for their token) ..."""

LITTLE_MIN = 16
LITTLE_MAX = 10_000
"""... within these bounds (see ``window_cap``)."""


def window_need(rate: float, latency: float) -> int:
    """The attempts in flight a learned ``rate`` needs at an attempt ``latency``:
    Little's law, ``rate x latency``, plus ``LITTLE_SLACK`` attempts waiting for their
    token; within ``[LITTLE_MIN, LITTLE_MAX]``. Half of ``window_cap``'s headroom."""
    if not (math.isfinite(rate) and math.isfinite(latency)):
        return LITTLE_MAX
    wanted = math.ceil(max(0.0, rate) * max(0.0, latency)) + LITTLE_SLACK
    return max(LITTLE_MIN, min(LITTLE_MAX, wanted))


def window_cap(rate: float, latency: float) -> int:
    """The adaptive window's upper bound for a learned ``rate`` (requests/s) and an
    attempt ``latency`` (s), when the user gave no ``max_concurrency``.

    Little's law: ``rate x latency`` attempts are in flight on average when requests go
    at ``rate`` and each takes ``latency``. Twice that leaves room for slow answers and
    retries (a fixed cap of 256 cannot carry 200/s at 1 s plus retries), and the
    bound follows the rate down after a cut.
    """
    if not (math.isfinite(rate) and math.isfinite(latency)):
        return LITTLE_MAX
    wanted = math.ceil(LITTLE_HEADROOM * max(0.0, rate) * max(0.0, latency)) + LITTLE_SLACK
    return max(LITTLE_MIN, min(LITTLE_MAX, wanted))


BOOKED_AHEAD = 0.1
"""Seconds of tokens at a learned rate one process may hold booked and not yet sent
(see ``booking_depth``)."""


def booking_depth(rate: float, burst: int) -> int:
    """How many tokens of a learned ``rate`` one process may hold booked ahead of their
    sends: ``BOOKED_AHEAD`` seconds' worth, at least ``burst`` (and 1).

    A token's wait is fixed when it is booked, at the rate of that moment. Booking a
    whole window ahead (Little's law: a latency's worth of requests, times the hosts of
    a fleet sharing the rate) fixes seconds of sends at an old, lower rate, and the
    bucket looks busy all that time, so the rate keeps growing without being tried: 8
    hosts x 200/s at 1 s latency booked 8 s ahead at slow start's first rates, then
    sent at 600/s and cut four times down to half the rate. Booking a tenth of a second
    ahead keeps the bucket busy and every send on the current rate.
    """
    if not math.isfinite(rate):
        return max(1, burst)
    return max(1, burst, math.ceil(max(0.0, rate) * BOOKED_AHEAD))


def classify(error: BaseException) -> FailureKind:
    """The ``FailureKind`` of ``error`` (see the module docstring)."""
    return classify_failure(error).kind


@attrs.frozen(kw_only=True)
class Ticket:
    """One attempt in flight: the window generation it started under, and how many
    times the window had been filled before it started (see ``LimiterCore.on_success``)."""

    generation: int
    started_at: float
    saturations: int


@attrs.frozen(kw_only=True)
class Decision:
    """What to do after a failed attempt: retry after ``delay`` seconds, or raise.

    ``error``, when set, is raised (chained to the original) instead of the original.
    """

    kind: FailureKind
    retry: bool
    delay: float = 0.0
    error: Exception | None = None


class LimiterCore:
    """Slots, pause gate, classification, retry schedule, AIMD and counters for one limiter.

    ``max_concurrency`` ``None`` with ``adaptive=False`` means no concurrency bound.
    With ``adaptive=True`` the window is an ``AimdWindow`` bounded by
    ``[1, max_concurrency or adaptive_cap]``.

    ``learned``: a learned rate paces the attempts too. Then the rate takes every
    rate-limit answer and the window is never cut: a concurrency limit shows up as
    refusals as well, and cutting the rate cuts the attempts in flight (rate x
    latency), while a window cut would recover by one slot per clean window, far too
    slowly when many requests are in flight. The window still grows only while it is
    full, up to its cap: it bounds the attempts in flight and holds back the first burst.
    """

    def __init__(
        self,
        *,
        max_concurrency: int | None,
        adaptive: bool,
        max_retries: int | None,
        rng: random.Random,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        backoff_base: float = DEFAULT_BACKOFF_BASE,
        backoff_cap: float = DEFAULT_BACKOFF_CAP,
        aimd: AimdWindow | None = None,
        learned: bool = False,
    ) -> None:
        self._learned = learned
        # A learned rate bounds the window by Little's law unless the user bounded it.
        self._little = learned and adaptive and aimd is None and max_concurrency is None
        self._max_concurrency = max_concurrency
        self._max_retries = max_retries
        self._retry_budget = retry_budget
        self._max_retry_after = max_retry_after
        self._rng = rng
        self._backoff_base = backoff_base
        self._backoff_cap = backoff_cap
        if adaptive:
            maximum = max_concurrency
            if maximum is None and self._little:
                maximum = LITTLE_MIN
            self._aimd: AimdWindow | None = aimd or AimdWindow(
                **({} if maximum is None else {"maximum": maximum})
            )
        else:
            self._aimd = None
        self._slots = 0
        self._saturations = 0
        self._raised_at = 0  # ``_saturations`` when the window was last raised to the rate
        self._resume_at = -math.inf
        self._next_send = -math.inf
        self._last_now: float | None = None
        self._retrying = 0
        self._retry_note: str | None = None
        self.in_flight = 0
        self.peak_in_flight = 0
        self.requests = 0
        self.retries = 0
        self.rate_limited = 0
        self.transient_failures = 0
        self.failed = 0
        self.wait_seconds = 0.0

    # -- configuration -------------------------------------------------------------

    @property
    def adaptive(self) -> bool:
        return self._aimd is not None

    @property
    def aimd(self) -> AimdWindow | None:
        return self._aimd

    @property
    def window(self) -> int | None:
        """How many slots may be held at once (``None``: unbounded)."""
        if self._aimd is not None:
            return self._aimd.window
        return self._max_concurrency

    @property
    def episodes(self) -> int:
        return 0 if self._aimd is None else self._aimd.episodes

    def on_learned_rate(self, rate: float, latency: float | None) -> None:
        """The learned rate is ``rate`` and attempts take ``latency`` seconds (``None``:
        not measured yet): with no ``max_concurrency`` given, the window's upper bound
        follows (``window_cap``). A window that was full since the last such raise (the
        attempts at the agent filled it: it binds, not the rate) is raised at once to
        what the rate needs in flight (``window_need``): the rate paces the attempts
        already, and doubling once per clean window (a whole latency each) would hold a
        200/s agent answering in 5 s below its rate for 40 s."""
        if self._little and self._aimd is not None and latency is not None:
            cap = window_cap(rate, latency)
            if cap != self._aimd.bounds[1]:
                self._aimd.set_maximum(cap)
            if self._saturations > self._raised_at:
                self._raised_at = self._saturations
                self._aimd.raise_to(window_need(rate, latency))

    # -- clock ---------------------------------------------------------------------

    def _observe(self, now: float) -> None:
        # See AimdWindow._observe: keep the remaining pause when the clock steps back.
        last = self._last_now
        if last is not None and now < last:
            if math.isfinite(self._resume_at):
                self._resume_at -= last - now
            if math.isfinite(self._next_send):
                self._next_send -= last - now
        self._last_now = now

    # -- slots ---------------------------------------------------------------------

    @property
    def slots_held(self) -> int:
        return self._slots

    def slot_available(self) -> bool:
        window = self.window
        return window is None or self._slots < window

    def try_acquire_slot(self) -> bool:
        """Take a concurrency slot if the window has room."""
        if not self.slot_available():
            return False
        self._slots += 1
        return True

    def release_slot(self) -> None:
        if self._slots <= 0:
            raise RuntimeError("LimiterCore.release_slot: no slot is held")
        self._slots -= 1

    # -- pause gate ----------------------------------------------------------------

    def pause_remaining(self, now: float) -> float:
        """Seconds new attempts must still wait because the agent asked for a pause."""
        self._observe(now)
        return max(0.0, self._resume_at - now)

    # -- tokens and spacing ----------------------------------------------------------

    def token_still_good(self, now: float, *, generation: int | None, current: int) -> bool:
        """A token reserved under the learned rate's ``generation`` (``None``: a fixed
        bucket) is still good at ``now``, when the rate has had ``current`` cuts: no
        ``Retry-After`` pause began while it waited (its holder must wait the pause out)
        and no cut happened (it was reserved at the old rate). Otherwise the attempt
        forfeits it and reserves again."""
        if self.pause_remaining(now) > 0.0:
            return False
        return generation is None or current <= generation

    def send_not_before(self, *, rate: float, burst: int) -> float:
        """The earliest time the next send at a learned ``rate`` may go: the sends
        themselves form a bucket of ``burst`` (GCRA on the actual send times), so
        attempts that an event loop woke late and together (a stall, a garbage
        collection) leave at most ``burst`` at once and then one spacing apart, as
        their tokens did. With ``burst`` 1, one spacing from the previous send."""
        return self._next_send - (burst - 1) / rate

    def sent(self, now: float, *, rate: float, burst: int = 1) -> None:
        """A send went at ``now``: the send schedule moves on by ``1 / rate`` (with a
        burst of 1, from this send)."""
        self._observe(now)
        start = now if burst == 1 else max(self._next_send, now)
        self._next_send = start + 1.0 / rate

    # -- requests and attempts -----------------------------------------------------

    def on_request(self) -> None:
        """A ``send_async`` call entered the limiter."""
        self.requests += 1

    def on_retry(self, error: BaseException, decision: Decision, retry: int) -> str:
        """A request is about to back off ``decision.delay`` seconds after ``error``
        before its retry ``retry + 1``; returns what it is doing, as one short line
        (redacted, terminal-safe), which ``retrying`` shows until it ends."""
        if retry == 0:
            self._retrying += 1
        message = _REQUEST_PREFIX.sub("", str(error)[:RETRY_TEXT_SCAN], count=1)
        raw = redact(f"{type(error).__name__}: {message}")
        text = one_line(raw)
        if len(text) > RETRY_TEXT_CHARS:
            text = text[: RETRY_TEXT_CHARS - 1] + "…"
        of = "" if self._max_retries is None else f" of {self._max_retries}"
        self._retry_note = (
            f"retrying after {text} (retry {retry + 1}{of}, in {decision.delay:.1f} s)"
        )
        return self._retry_note

    def on_request_done(self, *, retried: bool) -> None:
        """A request left the limiter (answered, or its error propagated); ``retried``:
        it had backed off at least once."""
        if retried and self._retrying > 0:
            self._retrying -= 1
        if self._retrying == 0:
            self._retry_note = None

    @property
    def retrying(self) -> str | None:
        """What the limiter is retrying now (the latest reason), or ``None``."""
        return self._retry_note if self._retrying > 0 else None

    def on_request_failed(self) -> None:
        """The request failed before reaching the agent (its backend raised)."""
        self.failed += 1

    def add_wait(self, seconds: float) -> None:
        """Account time spent waiting for a slot, the pause gate, a token or a backoff."""
        if seconds > 0.0:
            self.wait_seconds += seconds

    def begin_attempt(self, now: float) -> Ticket:
        """An attempt (holding a slot and a token) is handed to the wrapped session."""
        self._observe(now)
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        generation = 0 if self._aimd is None else self._aimd.generation
        ticket = Ticket(generation=generation, started_at=now, saturations=self._saturations)
        window = self.window
        if window is not None and self.in_flight >= window:
            self._saturations += 1
        return ticket

    def _window_takes(self) -> bool:
        # With a learned rate, the rate takes every rate-limit answer (see the class
        # docstring); the window only grows.
        return not self._learned

    def _end_attempt(self, now: float) -> None:
        self._observe(now)
        if self.in_flight <= 0:
            raise RuntimeError("LimiterCore: an attempt ended that never began")
        self.in_flight -= 1

    def on_success(self, ticket: Ticket, now: float) -> bool:
        """The attempt returned a response; True if the window grew.

        The success counts towards growth only if the attempts *in flight* filled the
        window at some moment while this one was in flight (including its own start).
        Slot holders that are only waiting for a token do not count: when the bucket is
        what binds, the window has not been tested and must not grow.
        """
        self._end_attempt(now)
        if self._aimd is None:
            return False
        return self._aimd.on_success(
            generation=ticket.generation,
            now=now,
            window_full=self._saturations > ticket.saturations,
        )

    def on_abandoned(self, now: float) -> None:
        """The attempt was cancelled (not a failure of the agent): only bookkeeping."""
        self._end_attempt(now)

    def passes_on(self, decision: Decision) -> bool:
        """Whether a refusal that led to ``decision`` concerns an adaptive trial group
        around the limiter (``concurrency="auto"``): when it leaves the limiter (not
        retried: the agent, or the run, sees it), or when the limiter does not learn
        from refusals (a fixed rate or concurrency, or retries alone, cannot slow itself
        down, so only fewer trials in flight can). A refusal an adaptive limiter
        retries is its own business: its learned rate (or window) already paces the
        requests, and the group cutting its trials in flight as well only idles the
        rate the limiter learned."""
        return not decision.retry or not (self.adaptive or self._learned)

    def on_failure(
        self,
        ticket: Ticket,
        error: BaseException,
        now: float,
        retry: int,
        *,
        failing_for: float = 0.0,
        may_retry: bool = True,
    ) -> Decision:
        """The attempt raised ``error``; ``retry`` retries of this request came before it,
        and it has spent ``failing_for`` seconds failing (its failed attempts, this one
        included, and its backoffs so far).

        Returns whether to retry and after how long: not when the backoff would end past
        the retry budget or the retry exceed ``max_retries`` (see the module docstring),
        nor when the request cannot be sent again (``may_retry=False``: a body that was
        streamed). A non-retried failure counts the request as failed.
        """
        self._end_attempt(now)
        kind = classify(error)
        retry_after: float | None = None
        refusal = as_refusal(error) if kind is FailureKind.RATE_LIMITED else None
        if refusal is not None:
            retry_after = refusal.retry_after
            self.rate_limited += 1
            if retry_after is not None and retry_after > self._max_retry_after:
                return self._refuse_wait(ticket, error, retry_after, now)
            if retry_after is not None:
                self._resume_at = max(self._resume_at, now + retry_after)
            if self._aimd is not None and self._window_takes():
                self._aimd.on_rate_limited(
                    generation=ticket.generation, now=now, retry_after=retry_after
                )
        elif kind is FailureKind.TRANSIENT:
            self.transient_failures += 1
        spent = self._max_retries is not None and retry >= self._max_retries
        if kind is FailureKind.FATAL or spent or not may_retry:
            self.failed += 1
            return Decision(kind=kind, retry=False)
        # With a learned rate, a refused request's retry takes a token like any attempt,
        # so the bucket (which the refusal just cut) spaces retries already: the backoff
        # stays at its first step instead of growing with every refusal, or a request
        # refused a few times in a row (jitter against an agent without burst) would
        # wait tens of seconds and straggle far behind the others.
        step = 0 if self._learned and kind is FailureKind.RATE_LIMITED else retry
        delay = backoff_delay(
            step,
            rng=self._rng,
            retry_after=retry_after,
            base=self._backoff_base,
            cap=self._backoff_cap,
        )
        # The budget: the backoff must end within it (a jittered one is cut to fit; a
        # wait the agent asked for that does not fit ends the retrying now).
        left = self._retry_budget - failing_for
        if left <= 0.0 or (retry_after or 0.0) > left:
            self.failed += 1
            return Decision(kind=kind, retry=False)
        delay = min(delay, left)
        self.retries += 1
        return Decision(kind=kind, retry=True, delay=delay)

    def _refuse_wait(
        self, ticket: Ticket, error: BaseException, retry_after: float, now: float
    ) -> Decision:
        # Waiting longer than max_retry_after would park the request (and, through the
        # pause, every request of this process) for as long as the agent likes: fail it
        # instead. Still a rate-limit signal for AIMD, without the long cooldown.
        if self._aimd is not None and self._window_takes():
            self._aimd.on_rate_limited(generation=ticket.generation, now=now, retry_after=None)
        self.failed += 1
        refusal = RateLimitedError(
            f"the agent asked to wait {retry_after:.12g} s, more than "
            f"max_retry_after={self._max_retry_after:.12g} s, so the request was not retried "
            f"({error})",
            retry_after=retry_after,
        )
        return Decision(kind=FailureKind.RATE_LIMITED, retry=False, error=refusal)
