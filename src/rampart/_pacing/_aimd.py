"""rampart's one AIMD controller: a concurrency window with slow start, as a synchronous
state machine. Both adaptive bounds use it: a limiter's window of requests in flight
(``rampart.limits``, fed request by request through ``on_success`` and
``on_rate_limited``) and an adaptive trial group's clone limit
(``rampart.engine._auto_concurrency``, which judges windows of finished jobs by their
latency and calls ``grow`` and ``cut``). Only what counts as a clean window differs;
the increase, the decrease and the one-cut-per-episode rule are written here once.

Rules (the clock is whatever the caller passes as ``now``):

* The window starts at ``initial`` (clamped to ``[minimum, maximum]``).
* **Slow start**: until the first rate-limit episode, every *clean window* (``window``
  successful attempts, counted since the last change) doubles the window.
* **Additive increase**: after the first episode, every clean window adds 1.
* **Multiplicative decrease**: a rate-limit *episode* sets the window to
  ``floor(window * decrease)`` (at least ``minimum``), resets the clean count and starts
  a cooldown of ``max(cooldown, retry_after)`` seconds.
* **One cut per episode**: a rate-limit response is a new episode only when the
  cooldown has passed *and* the attempt started after the last cut (its ticket's
  generation is current). Responses to requests sent under the old, larger window
  describe the old window, so they do not cut again. Likewise only successes of
  attempts started under the current generation count towards growth.
* **Grow only a window in use**: a success counts towards growth only if the window
  was full while its attempt was in flight (``window_full``). A caller that never has more
  than three requests in flight (few callers, or a token bucket that binds first)
  learns nothing about whether thirty would be safe, so its window does not climb to
  the cap meanwhile.
* Every rate-limit response restarts the clean count, even one that does not cut:
  growth needs a whole window of successes without a refusal.
* Transient failures change nothing (neither clean nor a cut).
"""

from __future__ import annotations

import math

from rampart._checks import check_int, check_number, check_seconds

__all__ = ["DEFAULT_ADAPTIVE_CAP", "DEFAULT_COOLDOWN", "DEFAULT_INITIAL_WINDOW", "AimdWindow"]

DEFAULT_ADAPTIVE_CAP = 256
"""Upper bound of an adaptive window when ``max_concurrency`` is not given."""

DEFAULT_INITIAL_WINDOW = 4
"""Where an adaptive window starts (clamped to its bounds)."""

DEFAULT_COOLDOWN = 0.1
"""Seconds after a cut during which further rate-limit responses belong to the same episode.

Short on purpose: the generation rule already merges the 429s of requests sent before a
cut, however slow the agent is; the cooldown only debounces fast agents, and a long one
would let additive growth outpace the cuts when requests take milliseconds.
"""

DEFAULT_DECREASE = 0.8
"""Factor applied to the window on a rate-limit episode."""

_OWNER = "AimdWindow"


class AimdWindow:
    """An AIMD concurrency window; feed it outcomes, read ``window``."""

    __slots__ = (
        "_clean",
        "_cooldown",
        "_cooldown_until",
        "_decrease",
        "_generation",
        "_last_now",
        "_maximum",
        "_minimum",
        "_slow_start",
        "_window",
        "episodes",
    )

    def __init__(
        self,
        *,
        maximum: int = DEFAULT_ADAPTIVE_CAP,
        minimum: int = 1,
        initial: int = DEFAULT_INITIAL_WINDOW,
        decrease: float = DEFAULT_DECREASE,
        cooldown: float = DEFAULT_COOLDOWN,
    ) -> None:
        self._minimum = check_int(_OWNER, "minimum", minimum, minimum=1)
        self._maximum = check_int(_OWNER, "maximum", maximum, minimum=self._minimum)
        initial = check_int(_OWNER, "initial", initial, minimum=1)
        self._decrease = check_number(
            _OWNER, "decrease", decrease, above=0, below=1, noun="a number"
        )
        self._cooldown = check_seconds(_OWNER, "cooldown", cooldown)
        self._window = min(self._maximum, max(self._minimum, initial))
        self._slow_start = True
        self._clean = 0
        self._generation = 0
        self._cooldown_until = -math.inf
        self._last_now: float | None = None
        self.episodes = 0
        """How many rate-limit episodes cut the window."""

    @property
    def window(self) -> int:
        """How many attempts may be in flight now."""
        return self._window

    @property
    def generation(self) -> int:
        """Number of cuts so far; an attempt records it when it starts."""
        return self._generation

    @property
    def slow_start(self) -> bool:
        """True until the first rate-limit episode."""
        return self._slow_start

    @property
    def bounds(self) -> tuple[int, int]:
        return (self._minimum, self._maximum)

    def set_maximum(self, maximum: int) -> None:
        """Move the upper bound (at least ``minimum``); a window above it shrinks to it.

        For a caller that derives the bound from what it measures (a learned rate times
        the observed latency, for instance) instead of fixing it once.
        """
        self._maximum = check_int(_OWNER, "maximum", maximum, minimum=self._minimum)
        self._window = min(self._window, self._maximum)

    def raise_to(self, window: int) -> None:
        """Raise the window to at least ``window`` (within its bounds); never lowers it.

        For a caller that knows from elsewhere how many attempts in flight are safe (a
        limiter whose learned rate already paces its requests needs ``rate x latency``
        of them): slow start would take one clean window, a whole latency, per doubling.
        """
        self._window = max(self._window, min(self._maximum, window))

    def grow(self) -> bool:
        """A clean window passed: double in slow start, else add one (up to ``maximum``).
        True if the window grew."""
        if self._window >= self._maximum:
            return False
        grown = self._window * 2 if self._slow_start else self._window + 1
        self._window = min(self._maximum, grown)
        return True

    def cut(self, *, now: float, retry_after: float | None = None) -> None:
        """A new episode: multiply the window by ``decrease`` (at least ``minimum``), end
        slow start, start a new generation and a cooldown of ``max(cooldown,
        retry_after)`` seconds."""
        self._observe(now)
        self._slow_start = False
        self._generation += 1
        self.episodes += 1
        self._clean = 0
        self._window = max(self._minimum, math.floor(self._window * self._decrease))
        self._cooldown_until = now + max(self._cooldown, retry_after or 0.0)

    def _observe(self, now: float) -> None:
        # A clock that steps back (a new event loop with another clock) moves the
        # cooldown deadline with it, so the remaining cooldown is kept, not stretched.
        last = self._last_now
        if last is not None and now < last and math.isfinite(self._cooldown_until):
            self._cooldown_until -= last - now
        self._last_now = now

    def on_success(self, *, generation: int, now: float, window_full: bool = True) -> bool:
        """Record a successful attempt started under ``generation``; True if the window grew.

        ``window_full``: every slot of the window was taken when the attempt started.
        """
        self._observe(now)
        if generation != self._generation or not window_full:
            return False
        self._clean += 1
        if self._clean < self._window:
            return False
        self._clean = 0
        return self.grow()

    def on_rate_limited(
        self, *, generation: int, now: float, retry_after: float | None = None
    ) -> bool:
        """Record a rate-limit response; True if it started a new episode (the window was cut)."""
        self._observe(now)
        # Any rate-limit answer spoils the current clean window, even one that does not
        # start a new episode: growth needs a whole window without a refusal.
        self._clean = 0
        if generation != self._generation or now < self._cooldown_until:
            return False
        self.cut(now=now, retry_after=retry_after)
        return True
