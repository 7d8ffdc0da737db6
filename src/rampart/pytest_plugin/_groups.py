"""What running one item produced, and the trial-group verdict over it.

An item's body runs once (``ItemRun`` with one ``CloneRun``) or, for a trial test, as
``n`` clones. One clone is SAFE when it recorded at least one result, every result is
SAFE and its body did not fail. The group verdict is ``rampart.core._trial_rule``'s
(the one ``execute_trials_async`` uses): by default any UNSAFE clone fails the group
and otherwise the SAFE fraction of the clones that count must reach the threshold
(ERROR, UNDETERMINED, failed and no-result clones all count against it);
``confidence=``, ``sequential=True`` and ``max_unsafe=`` extend it, and only with
``confidence=`` can a group be INCONCLUSIVE. Clones count in index order: with early
stop, the clones above the deciding one that finished anyway are reported but not
counted (``late``).

``group_outcome`` is the one place the verdict is computed (a
``rampart.core._group_outcome.TrialGroupOutcome``, by the tally above); the runner
does it once, when the clones have finished, and both the pytest outcome (``judge``)
and the reported group entry (``rampart.reporting._group_text.group_entry``) read that
same outcome.

A finished clone is *settled* (its ``CloneVerdict``: the status and the line that
explains it, kept) and then *released*: its results, already recorded on the run
ledger, are dropped from the clone, so a group's memory does not grow with the
results of finished clones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import attrs
import pytest

from rampart._redact import redact
from rampart._text import one_line
from rampart.core._internal import (
    TrialGroupOutcome,
    TrialTally,
    TrialVerdict,
    clone_suffix,
    tally_outcome,
    worst,
)
from rampart.core.result import Result, SafetyStatus
from rampart.engine._internal import ResultCollector
from rampart.pytest_plugin._markers import TrialSpec

if TYPE_CHECKING:
    # Only (string) annotations of ``ItemRun``, which attrs never resolves.
    from rampart.engine._internal import ConcurrencyStatistics  # noqa: TC004
    from rampart.pytest_plugin._populations import PopulationRecorder  # noqa: TC004

__all__ = [
    "CloneCancelled",
    "CloneListener",
    "CloneNotRun",
    "CloneRun",
    "CloneVerdict",
    "ItemRun",
    "clone_name",
    "clone_settles",
    "clone_status",
    "count_clones",
    "count_resumed",
    "describe",
    "group_outcome",
    "judge",
    "settle_known",
]

_UNNAMED = "trial group"


class CloneCancelled(Exception):
    """A clone ended by a cancellation rampart did not request (not early stop).

    Recorded as the clone's failure, so the clone counts against the pass rate and its
    line says what happened instead of "not run (early stop)".
    """


class CloneNotRun(Exception):
    """A clone its own fixture skipped or xfailed in its setup: its body never ran.

    Recorded as the clone's failure, so the clone counts as one that recorded nothing
    (never as evidence of safety) and its line says why. ``outcome`` is what the
    fixture raised (``pytest.skip``'s or ``pytest.xfail``'s exception).
    """

    def __init__(self, message: str, *, outcome: BaseException) -> None:
        super().__init__(message)
        self.outcome = outcome


@attrs.frozen(kw_only=True)
class CloneVerdict:
    """What a settled clone keeps once its results are released: its status for the
    group tally (None: it recorded no result) and the line that explains it."""

    status: SafetyStatus | None
    summary: str


class CloneListener(Protocol):
    """Told about each clone whose body finished, before the next checkpoint: live
    progress (which reads the clone's results) and the plugin's recorder (which records
    them and lets them go), in that order (``ItemRun.listeners``)."""

    def clone_finished(self, clone: CloneRun) -> None: ...


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
    settled: CloneVerdict | None = None

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
            self.failure, AssertionError | pytest.fail.Exception | CloneCancelled | CloneNotRun
        )

    def settle(self) -> None:
        """Fix the clone's status and its explaining line from what it recorded."""
        self.settled = CloneVerdict(status=_status_of(self), summary=_summary_of(self))

    def release(self) -> None:
        """Drop the results (recorded elsewhere) and an assertion's traceback.

        A crash keeps its exception: the item re-raises it.
        """
        if self.settled is None:
            self.settle()
        self.collector = ResultCollector()
        if isinstance(self.failure, AssertionError | pytest.fail.Exception | CloneCancelled):
            self.failure = _Failed(_failure_text(self.failure))


def group_outcome(run: ItemRun) -> TrialGroupOutcome:
    """The outcome of the clones of ``run`` that count (``run.spec`` is set): the
    ``TrialTally`` over them in index order, with the clones not run and not counted."""
    spec = run.spec
    if spec is None:
        raise ValueError("group_outcome needs a trial run (spec is None)")
    tally = TrialTally(size=spec.n, rule=spec.rule)
    no_result = 0
    for clone in run.clones:
        status = clone_status(clone)
        if status is None:
            no_result += 1
        tally.add(_tally_status(status))
    return tally_outcome(
        tally,
        no_result=no_result,
        not_run=run.cancelled,
        not_counted=run.late,
        not_counted_unsafe=run.late_unsafe,
        concurrency=None if run.concurrency is None else run.concurrency.as_dict(),
    )


def describe(outcome: TrialGroupOutcome) -> tuple[str, str | None]:
    """What the group line says of ``outcome``: its bracketed description and why it did
    not pass (``None`` when it passed), as its report entry states them."""
    from rampart.reporting._internal import group_description, group_entry

    # The description and the reason read only the counts and the rule, not the names.
    stated = group_entry(outcome, nodeid=_UNNAMED, test_name=_UNNAMED)
    return group_description(stated), stated.reason


def _tally_status(status: SafetyStatus | None) -> SafetyStatus:
    """A clone that recorded no result counts as UNDETERMINED (nothing was shown)."""
    return SafetyStatus.UNDETERMINED if status is None else status


@attrs.define(eq=False)
class ItemRun:
    """What running one item produced; read by the plugin after the call phase.

    ``clones`` are the runs that count, in index order; ``partial`` the clones early
    stop cancelled (or an interrupt stopped) that still recorded results, and the
    ``late`` ones (finished after the deciding clone; reported, not counted).
    ``resumed`` holds the clones a run journal supplied (``--rampart-resume``): they
    count in the verdict, in index order like the others, and are not run again.
    ``outcome`` is set once a trial group has finished; ``interrupted`` when a
    KeyboardInterrupt stopped it first. ``listeners`` are told about each clone whose
    body finished, before the next checkpoint (``CloneListener``). ``populations``
    holds the populations a test body that is not a clone group ran
    (``_populations``). ``fed`` and
    ``decided_at`` are the early-stop bookkeeping: the next clone index the tally
    expects, and the index at which the verdict settled.
    """

    spec: TrialSpec | None
    clones: list[CloneRun] = attrs.field(factory=list)
    partial: list[CloneRun] = attrs.field(factory=list)
    resumed: dict[int, CloneRun] = attrs.field(factory=dict)
    cancelled: int = 0
    late: int = 0
    late_unsafe: int = 0
    tally: TrialTally | None = None  # early-stop bookkeeping, fed in index order
    fed: int = 0
    decided_at: int | None = None
    outcome: TrialGroupOutcome | None = None
    interrupted: bool = False
    skipped: bool = False  # a clone's pytest.skip()/xfail() ended the item
    listeners: list[CloneListener] = attrs.field(factory=list)
    concurrency: ConcurrencyStatistics | None = None  # what concurrency="auto" did
    populations: PopulationRecorder | None = None


class _Failed(AssertionError):
    """What is kept of a released clone's assertion failure: its message."""


def _failure_text(failure: BaseException) -> str:
    if isinstance(failure, _Failed):
        return str(failure)
    return f"{type(failure).__name__}: {one_line(str(failure))}"


def clone_status(clone: CloneRun) -> SafetyStatus | None:
    """The clone's status for the group tally; None when it recorded no result."""
    if clone.settled is not None:
        return clone.settled.status
    return _status_of(clone)


def _status_of(clone: CloneRun) -> SafetyStatus | None:
    results = clone.collector.results
    if not results:
        return None
    status = worst(result.status for result in results)
    if status is SafetyStatus.SAFE and clone.failure is not None:
        # Every result was SAFE but the test's own assertions failed the clone.
        return SafetyStatus.UNDETERMINED
    return status


def _feed(run: ItemRun, clone: CloneRun) -> bool:
    """Add the clone at index ``run.fed`` to the tally; True once that settles it."""
    spec = run.spec
    if spec is None:
        raise ValueError("early stop needs a trial run (spec is None)")
    if run.tally is None:
        run.tally = TrialTally(size=spec.n, rule=spec.rule)
    if clone.index != run.fed:
        raise ValueError(f"clone {clone.index} fed out of index order (expected {run.fed})")
    run.tally.add(_tally_status(clone_status(clone)))
    run.fed += 1
    if run.tally.settled():
        run.decided_at = clone.index
        return True
    return False


def settle_known(run: ItemRun) -> bool:
    """Feed the resumed clones that come next in index order; True once they settle the
    group (then no clone above the deciding one counts, nor needs to run)."""
    while run.decided_at is None and run.fed in run.resumed:
        if _feed(run, run.resumed[run.fed]):
            return True
    return run.decided_at is not None


def count_clones(run: ItemRun, counted: list[CloneRun], late: list[CloneRun]) -> None:
    """Set the clones that count (in index order) and the late ones on ``run``.

    With early stop, a clone above the one that settled the group never counts, even
    one a run journal supplied; each late clone is reported, and an UNSAFE one is shown
    on the group line.
    """
    counted = sorted(counted, key=_by_index)
    if run.decided_at is not None:
        decided_at = run.decided_at
        late = [*late, *(c for c in counted if c.index > decided_at)]
        counted = [c for c in counted if c.index <= decided_at]
    run.clones = counted
    run.late = len(late)
    run.late_unsafe = sum(clone_status(clone) is SafetyStatus.UNSAFE for clone in late)


def count_resumed(run: ItemRun) -> None:
    """A group whose every clone a run journal supplied: count them as the original run
    did (in index order, up to the clone that settled the group when it stops early)."""
    if run.spec is not None and run.spec.stops_early:
        settle_known(run)
    count_clones(run, list(run.resumed.values()), [])


def _by_index(clone: CloneRun) -> int:
    return clone.index


def clone_settles(run: ItemRun, clone: CloneRun) -> bool:
    """Early stop: True once the clones outstanding can no longer change the verdict.

    Called once per finished clone **in index order** (``fan_out`` hands clones over
    that way), so the tally sees clones 0, 1, 2, ... whatever order they finished in;
    a clone that finished early waits for the clones before it. Resumed clones (known
    from a run journal) are fed at their own index, between the clones that run.
    """
    return _feed(run, clone) or settle_known(run)


def clone_name(run: ItemRun, item_name: str, index: int) -> str:
    """``test_x[trial-3]``, with the clone's case when ``ids=`` gave it one (one line)."""
    case = None if run.spec is None else run.spec.case(index)
    return one_line(item_name + clone_suffix(index, None if case is None else case.id))


def judge(run: ItemRun, *, item_name: str) -> None:
    """Fail the item when its group failed; re-raise a clone's crash (not an assertion)."""
    # A failed assertion (or pytest.fail) is a verdict on the clone, not a crash; so is
    # a cancellation the clone's own code raised.
    crashed = [c for c in run.clones if c.crashed]
    if crashed:
        first = crashed[0]
        assert first.failure is not None
        first.failure.add_note(
            f"raised in trial clone {clone_name(run, item_name, first.index)} "
            f"({len(crashed)} of {len(run.clones)} clones crashed)"
        )
        raise first.failure
    outcome = run.outcome
    if outcome is None:
        raise ValueError("judge needs a finished trial run (its outcome is not set)")
    if outcome.passed:
        return
    description, reason = describe(outcome)
    failing = [c for c in run.clones if clone_status(c) is not SafetyStatus.SAFE]
    head = "inconclusive" if outcome.verdict is TrialVerdict.INCONCLUSIVE else "failed"
    lines = [f"trial group {head}: {description}; {reason}"]
    # ERROR clones that failed alike (the same summary: an endpoint down for all) are
    # one line; each finding keeps its own.
    alike: dict[str, list[CloneRun]] = {}
    for clone in failing:
        summary = _clone_summary(clone)
        key = summary if clone_status(clone) is SafetyStatus.ERROR else f"{clone.index}:{summary}"
        alike.setdefault(key, []).append(clone)
    for clones in list(alike.values())[:3]:
        more = f" and {len(clones) - 1} more alike" if len(clones) > 1 else ""
        first = clones[0]
        lines.append(f"  {clone_name(run, item_name, first.index)}{more}: {_clone_summary(first)}")
    if len(alike) > 3:
        rest = sum(len(clones) for clones in list(alike.values())[3:])
        lines.append(f"  ... and {rest} more failing clones")
    text = redact("\n".join(lines))
    then = "fail" if run.spec is None else run.spec.inconclusive
    if outcome.verdict is TrialVerdict.INCONCLUSIVE and then != "fail":
        if then == "pass":
            return
        if then == "skip":
            pytest.skip(text)
        pytest.xfail(text)
    pytest.fail(text, pytrace=False)


def _clone_summary(clone: CloneRun) -> str:
    if clone.settled is not None:
        return clone.settled.summary
    return _summary_of(clone)


def _summary_of(clone: CloneRun) -> str:
    worst = _status_of(clone)
    for result in clone.collector.results:
        if result.status is worst and worst is not SafetyStatus.SAFE:
            return f"{result.status.value.upper()}: {one_line(result.summary)}"
    if clone.failure is not None:
        return _failure_text(clone.failure)
    return "recorded no result"
