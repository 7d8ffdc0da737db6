"""Adaptive clone concurrency (``concurrency="auto"``): a synchronous controller and the
channel rate-limit signals reach it through.

**The controller** (``AutoConcurrency``) is rampart's one AIMD window
(``rampart._pacing.AimdWindow``, the limiter's too) fed with finished jobs instead of
requests; this module decides only what counts as a clean or a slow window:

* The limit starts at ``initial`` (10) within ``[minimum, maximum]``.
* Jobs are judged in *windows*: ``limit`` jobs that started under the current
  generation while the jobs running or waiting could fill every slot ("grow only a
  limit in use": the last few jobs of a group teach nothing). At the end
  of a window its median per-unit latency (a job's wall time divided by its units,
  e.g. turns) is compared with the *baseline*, the lowest window median seen so far:

  - at most ``grow_below`` (1.5) times the baseline, and no rate-limit signal in the
    window: **grow**, doubling (slow start) until the first cut, then by one;
  - above ``cut_above`` (2) times the baseline: **cut** (below);
  - in between: hold.
* **Cut**: a rate-limit signal from a job started under the current generation, or a
  slow window, multiplies the limit by ``decrease`` (0.5, at least ``minimum``), ends
  slow start and starts a new generation. Signals and latencies of jobs started
  before a cut describe the old, larger limit, so they never cut again: one cut per
  episode, however many jobs were throttled.

**The channel** is rampart's one "slow down" channel (``rampart._pacing.slowdown``): each
job listens on it (``running_job``) for refusals, which ``rampart.limits`` reports for
a rate-limited answer it passes on (not retried) or, in a fixed limiter, cannot learn
from (an adaptive limiter's retried refusals are its own: its learned rate paces the
requests already), the engine's error boundary for a refusal that ended a request as
an ERROR result (unless a limiter of the job handed that refusal back, and so
reported it already: one refusal counts once), and a custom adapter with
``report_throttle()``. Outside an adaptive fan-out a report is a no-op. The listener
is a context variable inherited by child tasks, so a report from a task the job starts
reaches it.
"""

from __future__ import annotations

import math
import statistics
from contextlib import contextmanager
from typing import TYPE_CHECKING

import attrs

from rampart._checks import check_int, check_number
from rampart._pacing import AimdWindow, slowdown

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "AUTO_CONCURRENCY_CAP",
    "AUTO_INITIAL_CONCURRENCY",
    "AutoConcurrency",
    "ConcurrencyStatistics",
    "JobTicket",
    "report_throttle",
    "running_job",
]


AUTO_INITIAL_CONCURRENCY = 10
"""Where an adaptive limit starts: low enough for an agent that serves few requests at
once (a local model), since the limit doubles per clean window from there."""

AUTO_CONCURRENCY_CAP = 256
"""The highest an adaptive limit goes (and never above the number of jobs)."""

_OWNER = "AutoConcurrency"


@attrs.frozen(kw_only=True)
class ConcurrencyStatistics:
    """What an adaptive fan-out did: the limit it ended at, the highest limit and the
    most jobs actually in flight, how many cuts (and of those, how many for a
    rate-limit signal) and how many signals it received."""

    final: int
    peak: int
    peak_in_flight: int
    cuts: int
    throttle_cuts: int
    throttles: int

    def as_dict(self) -> dict[str, int]:
        return attrs.asdict(self)


@attrs.define
class JobTicket:
    """One running job: the generation it started under and whether the limit was full."""

    generation: int
    full: bool
    throttled: bool = False


class AutoConcurrency:
    """The adaptive concurrency limit (see the module docstring); read ``limit``."""

    __slots__ = (
        "_baseline",
        "_clean",
        "_cut_above",
        "_grow_below",
        "_latencies",
        "_window",
        "cuts",
        "peak",
        "peak_in_flight",
        "throttle_cuts",
        "throttles",
    )

    def __init__(
        self,
        *,
        maximum: int = AUTO_CONCURRENCY_CAP,
        minimum: int = 1,
        initial: int = AUTO_INITIAL_CONCURRENCY,
        decrease: float = 0.5,
        grow_below: float = 1.5,
        cut_above: float = 2.0,
    ) -> None:
        minimum = check_int(_OWNER, "minimum", minimum, minimum=1)
        maximum = check_int(_OWNER, "maximum", maximum, minimum=minimum)
        initial = check_int(_OWNER, "initial", initial, minimum=1)
        decrease = check_number(_OWNER, "decrease", decrease, above=0, below=1)
        self._grow_below = check_number(_OWNER, "grow_below", grow_below, minimum=1)
        self._cut_above = check_number(_OWNER, "cut_above", cut_above, minimum=self._grow_below)
        # No cooldown: the generation rule alone makes one cut per episode here.
        self._window = AimdWindow(
            maximum=maximum, minimum=minimum, initial=initial, decrease=decrease, cooldown=0.0
        )
        self._clean = True  # no rate-limit signal in the current window
        self._latencies: list[float] = []
        self._baseline = math.inf
        self.peak = self._window.window
        """The highest limit so far."""
        self.peak_in_flight = 0
        """The most jobs in flight at once so far (``started`` reports it)."""
        self.cuts = 0
        """How many times the limit was cut."""
        self.throttle_cuts = 0
        """How many of the cuts a rate-limit signal caused."""
        self.throttles = 0
        """How many rate-limit signals arrived."""

    @property
    def limit(self) -> int:
        """How many jobs may run at once now."""
        return self._window.window

    @property
    def bounds(self) -> tuple[int, int]:
        return self._window.bounds

    @property
    def baseline(self) -> float:
        """The lowest window median latency seen (``inf`` before the first window)."""
        return self._baseline

    @property
    def slow_start(self) -> bool:
        """True until the first cut."""
        return self._window.slow_start

    def started(self, *, in_flight: int, demand: int | None = None) -> JobTicket:
        """A job starts with ``in_flight`` jobs (itself included) running.

        ``demand``: the jobs running or waiting to start (default ``in_flight``); the
        limit is in use when it is at least the limit (the jobs of a first wave,
        started one by one, count, as do those of the last ``limit`` jobs, not).
        """
        self.peak_in_flight = max(self.peak_in_flight, in_flight)
        wanted = in_flight if demand is None else max(in_flight, demand)
        return JobTicket(generation=self._window.generation, full=wanted >= self.limit)

    def throttled(self, ticket: JobTicket) -> bool:
        """The agent refused one of ``ticket``'s requests for its rate; True if it cut."""
        self.throttles += 1
        ticket.throttled = True
        self._clean = False
        if ticket.generation != self._window.generation:
            return False
        self.throttle_cuts += 1
        self._cut()
        return True

    def finished(self, ticket: JobTicket, *, latency: float | None) -> None:
        """``ticket``'s job finished; ``latency`` is its seconds per unit of work, or
        None when it says nothing (it did no work, or failed before any)."""
        if ticket.generation != self._window.generation or not ticket.full:
            return
        if latency is None or not math.isfinite(latency) or latency < 0:
            return
        self._latencies.append(latency)
        if len(self._latencies) < self.limit:
            return
        median = statistics.median(self._latencies)
        clean = self._clean
        self._latencies = []
        self._clean = True
        if median > self._cut_above * self._baseline:
            self._cut()
            return
        self._baseline = min(self._baseline, median)
        if clean and median <= self._grow_below * self._baseline:
            self._window.grow()
            self.peak = max(self.peak, self.limit)

    def _cut(self) -> None:
        self.cuts += 1
        self._latencies = []
        self._clean = True
        self._window.cut(now=0.0)  # no cooldown, so the clock does not matter

    def statistics(self) -> ConcurrencyStatistics:
        return ConcurrencyStatistics(
            final=self.limit,
            peak=self.peak,
            peak_in_flight=self.peak_in_flight,
            cuts=self.cuts,
            throttle_cuts=self.throttle_cuts,
            throttles=self.throttles,
        )


@contextmanager
def running_job(controller: AutoConcurrency, ticket: JobTicket) -> Iterator[None]:
    """Route the refusals reported in this context to ``controller`` (see the module
    docstring)."""

    handed_back = 0  # refusals a limiter passed on that no ended run has matched yet

    def hear(event: slowdown.SlowDown) -> None:
        nonlocal handed_back
        if not event.refused:
            return
        if event.ended_run and handed_back:
            # The refusal a limiter handed back ended the run: heard (and counted) once
            # already, when it was handed back.
            handed_back -= 1
            return
        handed_back += event.handed_back
        controller.throttled(ticket)

    with slowdown.listen(hear):
        yield


def report_throttle() -> None:
    """Tell the adaptive fan-out running this job that the agent said "slow down".

    A no-op outside a ``concurrency="auto"`` trial group, so adapters may always call it.
    """
    slowdown.report(slowdown.SlowDown(refused=True))
