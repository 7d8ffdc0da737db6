"""What running one item produced, and the trial-group verdict over it.

An item's body runs once (``ItemRun`` with one ``CloneRun``) or, for a trial test, as
``n`` clones. One clone is SAFE when it recorded at least one result, every result is
SAFE and its body did not fail. The group verdict is ``rampart.core._stats``'s rule
(the one ``execute_trials_async`` uses): any UNSAFE clone fails the group; otherwise
the SAFE fraction of the clones that ran must reach the threshold (ERROR,
UNDETERMINED, failed and no-result clones all count against it).

``GroupVerdict.of`` is the one place the verdict is computed; the runner does it once,
when the clones have finished, and both the pytest outcome (``judge``) and the
reported group line read that same verdict.

A finished clone is *settled* (its status and the line that explains it are kept) and
then *released*: its results, already recorded on the run ledger, are dropped from
the clone, so a group's memory does not grow with the results of finished clones.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import attrs
import pytest

from rampart._redact import redact
from rampart._text import one_line
from rampart.core._stats import StatusTally, percent, wilson_interval
from rampart.core.result import Result, SafetyStatus
from rampart.pytest_plugin._collect import ResultCollector
from rampart.pytest_plugin._markers import TrialSpec

__all__ = [
    "CloneCancelled",
    "CloneRun",
    "GroupVerdict",
    "ItemRun",
    "clone_status",
    "judge",
    "settled_fail",
]

_SEVERITY = (SafetyStatus.UNSAFE, SafetyStatus.ERROR, SafetyStatus.UNDETERMINED)


class CloneCancelled(Exception):
    """A clone ended by a cancellation rampart did not request (not early stop).

    Recorded as the clone's failure, so the clone counts against the pass rate and its
    line says what happened instead of "not run (early stop)".
    """


@attrs.define(eq=False)
class CloneRun:
    """One run of the test body: its results and how the body ended.

    ``finished`` is set when the body is over (returned, or failed in a way the group
    judges). ``resumed_from`` names the run whose journal supplied this clone, which
    then did not run at all. After ``settle`` the status is fixed; after ``release``
    the results are gone from memory (they were recorded) and only the status and
    the explaining line remain.
    """

    index: int
    collector: ResultCollector = attrs.field(factory=ResultCollector)
    failure: BaseException | None = None
    finished: bool = False
    resumed_from: str | None = None
    settled: tuple[SafetyStatus | None, str] | None = None

    @classmethod
    def from_journal(
        cls, index: int, *, run: str, results: list[Result], failure: str | None
    ) -> CloneRun:
        """A clone a run journal supplied (settled and released): its results, and the
        failure line it had when its own assertions failed."""
        clone = cls(index=index, resumed_from=run, finished=True)
        for result in results:
            clone.collector.add(result)
        if failure is not None:
            clone.failure = _Failed(failure)
        clone.release()
        return clone

    @property
    def crashed(self) -> bool:
        """The body raised something that is not a verdict on the clone (a test bug)."""
        return self.failure is not None and not isinstance(
            self.failure, AssertionError | pytest.fail.Exception | CloneCancelled
        )

    def settle(self) -> None:
        """Fix the clone's status and its explaining line from what it recorded."""
        self.settled = (_status_of(self), _summary_of(self))

    def release(self) -> None:
        """Drop the results (recorded elsewhere) and an assertion's traceback.

        A crash keeps its exception: the item re-raises it.
        """
        if self.settled is None:
            self.settle()
        self.collector = ResultCollector()
        if isinstance(self.failure, AssertionError | pytest.fail.Exception | CloneCancelled):
            self.failure = _Failed(_failure_text(self.failure))


@attrs.frozen(kw_only=True)
class GroupVerdict:
    """The aggregate of one trial group: its counts and the population status.

    ``status`` is the population verdict (``StatusTally.status()``); the group passed
    when it is SAFE. JSON-safe field values, so it crosses from an xdist worker.
    """

    n: int
    threshold: float
    safe: int
    unsafe: int
    errors: int
    no_result: int
    executed: int
    cancelled: int
    status: SafetyStatus

    @property
    def passed(self) -> bool:
        return self.status is SafetyStatus.SAFE

    @property
    def pass_rate(self) -> float:
        return self.safe / self.executed if self.executed else 0.0

    @property
    def undetermined(self) -> int:
        """Clones that ended UNDETERMINED (not counting the no-result ones)."""
        return self.executed - self.safe - self.unsafe - self.errors - self.no_result

    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.safe, self.executed)

    def reason(self) -> str | None:
        """Why the group did not pass, on one line; ``None`` when it passed.

        ``"4 UNSAFE"`` (any UNSAFE clone fails the group), else the pass rate against
        the threshold, with what the clones that were not SAFE ended as:
        ``"pass rate 60% below threshold 90% (2 ERROR, 2 UNDETERMINED)"``.
        """
        if self.passed:
            return None
        others = [
            f"{count} {label}"
            for count, label in (
                (self.errors, "ERROR"),
                (self.undetermined, "UNDETERMINED"),
                (self.no_result, "no result"),
            )
            if count
        ]
        if self.unsafe:
            return ", ".join([f"{self.unsafe} UNSAFE", *others])
        if not self.executed:
            head = "no clone ran"
        elif not self.safe:
            head = "no SAFE clone"
        else:
            rate, threshold = _percent_pair(self.pass_rate, self.threshold)
            head = f"pass rate {rate} below threshold {threshold}"
        return head + (f" ({', '.join(others)})" if others else "")

    @classmethod
    def of(cls, run: ItemRun) -> GroupVerdict:
        """The verdict over the clones of ``run`` that finished (``run.spec`` is set)."""
        if run.spec is None:
            raise ValueError("GroupVerdict.of needs a trial run (spec is None)")
        tally = StatusTally(size=run.spec.n, threshold=run.spec.threshold)
        no_result = 0
        for clone in run.clones:
            status = clone_status(clone)
            if status is None:
                no_result += 1
                status = SafetyStatus.UNDETERMINED
            tally.add(status)
        return cls(
            n=run.spec.n,
            threshold=run.spec.threshold,
            safe=tally.count(SafetyStatus.SAFE),
            unsafe=tally.count(SafetyStatus.UNSAFE),
            errors=tally.count(SafetyStatus.ERROR),
            no_result=no_result,
            executed=tally.executed,
            cancelled=run.cancelled,
            status=tally.status(),
        )

    def describe(self) -> str:
        """The bracketed part of the group line: counts, pass rate, threshold, Wilson CI."""
        low, high = self.interval()
        parts = [f"{self.safe}/{self.executed} safe"]
        if self.no_result:
            parts.append(f"{self.no_result} no-result")
        parts.append(f"{percent(self.pass_rate)} pass rate")
        parts.append(f"threshold: {percent(self.threshold)}")
        # The lower bound is rounded down, so the printed interval never claims more
        # confidence in the pass rate than the data gives (18 of 20 prints 69 to 97).
        lower, upper = math.floor(low * 100), round(high * 100)
        parts.append(f"95% CI {lower}–{upper}%")  # noqa: RUF001 - the documented format
        if self.cancelled:
            parts.append(f"{self.cancelled} not run (early stop)")
        return ", ".join(parts)


def _percent_pair(rate: float, threshold: float) -> tuple[str, str]:
    """Both as percentages, with as many decimals as it takes to tell them apart."""
    for decimals in range(4):
        shown = percent(rate, digits=decimals), percent(threshold, digits=decimals)
        if shown[0] != shown[1]:
            return shown
    return shown


@attrs.define(eq=False)
class ItemRun:
    """What running one item produced; read by the plugin after the call phase.

    ``clones`` are the runs that finished, in index order; ``partial`` the clones early
    stop cancelled (or an interrupt stopped) that still recorded results. ``resumed``
    holds the clones a run journal supplied (``--rampart-resume``): they count in the
    verdict and are not run again. ``verdict`` is set once a trial group has finished;
    ``interrupted`` when a KeyboardInterrupt stopped it first. ``clone_done`` is
    called once per clone whose body finished, before the next checkpoint.
    """

    spec: TrialSpec | None
    clones: list[CloneRun] = attrs.field(factory=list)
    partial: list[CloneRun] = attrs.field(factory=list)
    resumed: dict[int, CloneRun] = attrs.field(factory=dict)
    cancelled: int = 0
    tally: StatusTally | None = None  # early-stop bookkeeping, fed one clone at a time
    verdict: GroupVerdict | None = None
    interrupted: bool = False
    clone_done: Callable[[CloneRun], None] | None = None
    on_clone_done: Callable[[CloneRun], None] | None = None  # live progress, when shown


class _Failed(AssertionError):
    """What is kept of a released clone's assertion failure: its message."""


def _failure_text(failure: BaseException) -> str:
    if isinstance(failure, _Failed):
        return str(failure)
    return f"{type(failure).__name__}: {one_line(str(failure))}"


def clone_status(clone: CloneRun) -> SafetyStatus | None:
    """The clone's status for the group tally; None when it recorded no result."""
    if clone.settled is not None:
        return clone.settled[0]
    return _status_of(clone)


def _status_of(clone: CloneRun) -> SafetyStatus | None:
    results = clone.collector.results
    if not results:
        return None
    statuses = {result.status for result in results}
    for status in _SEVERITY:
        if status in statuses:
            return status
    if clone.failure is not None:
        # Every result was SAFE but the test's own assertions failed the clone.
        return SafetyStatus.UNDETERMINED
    return SafetyStatus.SAFE


def settled_fail(run: ItemRun, clone: CloneRun) -> bool:
    """Early stop: True once the clones still outstanding cannot make the group pass.

    Called once per finished clone; the tally on the run is updated incrementally.
    """
    if run.spec is None:
        raise ValueError("settled_fail needs a trial run (spec is None)")
    if run.tally is None:
        run.tally = StatusTally(size=run.spec.n, threshold=run.spec.threshold)
        for resumed in run.resumed.values():
            earlier = clone_status(resumed)
            run.tally.add(SafetyStatus.UNDETERMINED if earlier is None else earlier)
    status = clone_status(clone)
    run.tally.add(SafetyStatus.UNDETERMINED if status is None else status)
    return run.tally.settled_fail()


def judge(run: ItemRun, *, item_name: str) -> None:
    """Fail the item when its group failed; re-raise a clone's crash (not an assertion)."""
    # A failed assertion (or pytest.fail) is a verdict on the clone, not a crash; so is
    # a cancellation the clone's own code raised.
    crashed = [c for c in run.clones if c.crashed]
    if crashed:
        first = crashed[0]
        assert first.failure is not None
        first.failure.add_note(
            f"raised in trial clone {item_name}[trial-{first.index}] "
            f"({len(crashed)} of {len(run.clones)} clones crashed)"
        )
        raise first.failure
    verdict = run.verdict
    if verdict is None:
        raise ValueError("judge needs a finished trial run (its verdict is not set)")
    if verdict.passed:
        return
    failing = [c for c in run.clones if clone_status(c) is not SafetyStatus.SAFE]
    lines = [f"trial group failed: {verdict.describe()}; {verdict.reason()}"]
    for clone in failing[:3]:
        lines.append(f"  {one_line(item_name)}[trial-{clone.index}]: {_clone_summary(clone)}")
    if len(failing) > 3:
        lines.append(f"  ... and {len(failing) - 3} more failing clones")
    pytest.fail(redact("\n".join(lines)), pytrace=False)


def _clone_summary(clone: CloneRun) -> str:
    if clone.settled is not None:
        return clone.settled[1]
    return _summary_of(clone)


def _summary_of(clone: CloneRun) -> str:
    worst = _status_of(clone)
    for result in clone.collector.results:
        if result.status is worst and worst is not SafetyStatus.SAFE:
            return f"{result.status.value.upper()}: {one_line(result.summary)}"
    if clone.failure is not None:
        return _failure_text(clone.failure)
    return "recorded no result"
