"""A trial group's outcome: the one shape of its counts, rule and verdict.

``TrialGroupOutcome`` is what a finished trial group came to, whoever judged it: the
pytest plugin from its clones (``tally_outcome`` over the run's ``TrialTally``), and
``rampart report`` / ``diff`` / ``validate`` from a saved run's records
(``rebuild_group``, which feeds the same tally). It names each count once
(``StatusCounts``: ``safe``, ``unsafe``, ``undetermined``, ``error``, ``no_result``;
``not_run``, ``not_counted``, ``not_counted_unsafe``), holds the rule, the verdict
(``None`` when the facts do not decide it: INCOMPLETE, with ``missing`` saying why),
and derives the pass rate and the interval the group line prints. The report's group
entry (``rampart.reporting.TrialGroupSummary``) is stated from it in one place
(``rampart.reporting._group_text.group_entry``), so a new group fact is a field here
and a line there.

``StatusCounts`` and ``GroupInterval`` are public through ``rampart.reporting`` (the
report's ``counts`` and ``interval``); they live here because the model computes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from rampart._checks import check_int, check_probability, check_text, invalid
from rampart.core._stats import clopper_pearson_interval, wilson_interval
from rampart.core._trial_rule import TrialRule, TrialTally, TrialVerdict
from rampart.core.types import SafetyStatus

if TYPE_CHECKING:
    from rampart.core._population import CloneOutcome, PopulationRef
    from rampart.core.result import PopulationResult, Result

__all__ = [
    "RULE_NOT_RECORDED",
    "GroupInterval",
    "StatusCounts",
    "TrialGroupOutcome",
    "interrupted_group",
    "interruption",
    "population_outcome",
    "rebuild_group",
    "rebuild_results",
    "tally_outcome",
]


@attrs.frozen(kw_only=True)
class StatusCounts:
    """How many clones of a group ended in each status.

    A clone's status is its worst result (UNSAFE, ERROR, UNDETERMINED, SAFE in that
    order); a clone whose own assertions failed although every result was SAFE counts
    as UNDETERMINED; ``no_result`` counts clones that recorded no result at all.
    """

    safe: int = 0
    unsafe: int = 0
    undetermined: int = 0
    error: int = 0
    no_result: int = 0

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(StatusCounts):
            check_int("StatusCounts", field.name, getattr(self, field.name), minimum=0)

    @property
    def total(self) -> int:
        return self.safe + self.unsafe + self.undetermined + self.error + self.no_result


@attrs.frozen(kw_only=True)
class GroupInterval:
    """A confidence interval for a group's pass rate: ``method`` ``"wilson"`` (95 %) for
    the count rule, ``"clopper-pearson"`` at the group's confidence otherwise."""

    method: str
    level: float
    low: float
    high: float

    def __attrs_post_init__(self) -> None:
        owner = "GroupInterval"
        check_text(owner, "method", self.method)
        check_probability(owner, "level", self.level)
        check_probability(owner, "low", self.low)
        check_probability(owner, "high", self.high)
        if self.low > self.high:
            raise invalid(owner, "low", f"<= high ({self.high!r})", self.low, error=ValueError)


@attrs.frozen(kw_only=True)
class TrialGroupOutcome:
    """What one trial group came to (see the module docstring).

    ``n`` is the group's size; ``counts`` are over the clones the verdict counted
    (``executed`` of them); ``not_run`` clones never finished (cancelled by early
    stop, or missing from a saved run); ``not_counted`` finished after the clone that
    decided and do not count (``not_counted_unsafe`` of them recorded an UNSAFE result:
    shown, never counted). ``verdict`` is ``None`` when the facts do not decide it
    (INCOMPLETE, ``missing`` says why; never a pass); ``status`` is the group's
    ``SafetyStatus``: SAFE exactly when it passed, else UNSAFE if a counted clone was,
    else ERROR if one was, else UNDETERMINED. ``concurrency`` is what an adaptive
    group (``concurrency="auto"``) did (``ConcurrencyStatistics.as_dict()``): speed
    only, never the verdict. ``interrupted`` marks a group a Ctrl-C stopped before it
    finished (``interrupted_group``): INCOMPLETE, ``missing`` gives its counts.
    """

    n: int
    rule: TrialRule
    counts: StatusCounts
    verdict: TrialVerdict | None
    status: SafetyStatus
    not_run: int = 0
    not_counted: int = 0
    not_counted_unsafe: int = 0
    early_stopped: bool = False
    missing: str | None = None
    concurrency: dict[str, int] | None = None
    interrupted: bool = False

    @property
    def executed(self) -> int:
        """The clones the verdict counted (no-result ones included)."""
        return self.counts.total

    @property
    def passed(self) -> bool:
        return self.verdict is TrialVerdict.PASSED

    @property
    def pass_rate(self) -> float:
        """SAFE over executed clones; 0.0 when none was."""
        return self.counts.safe / self.executed if self.executed else 0.0

    @property
    def interval(self) -> GroupInterval:
        """The interval the group line shows: the exact one the verdict reads when the
        group has a confidence, else the 95 % Wilson interval."""
        confidence = self.rule.confidence
        if confidence is None:
            low, high = wilson_interval(self.counts.safe, self.executed)
            return GroupInterval(method="wilson", level=0.95, low=low, high=high)
        low, high = clopper_pearson_interval(self.counts.safe, self.executed, confidence)
        return GroupInterval(method="clopper-pearson", level=confidence, low=low, high=high)


def tally_outcome(
    tally: TrialTally,
    *,
    no_result: int = 0,
    not_run: int = 0,
    not_counted: int = 0,
    not_counted_unsafe: int = 0,
    early_stopped: bool | None = None,
    missing: str | None = None,
    concurrency: dict[str, int] | None = None,
    n: int | None = None,
) -> TrialGroupOutcome:
    """The outcome of the clones fed to ``tally`` (the one way an outcome is made).

    ``no_result`` of the tally's UNDETERMINED clones recorded nothing. With
    ``missing`` the verdict is not decided (INCOMPLETE). ``early_stopped`` defaults to
    "some clone was cancelled or finished after the decision"; ``n`` to the tally's size.
    """
    verdict = None if missing is not None else tally.verdict()
    if early_stopped is None:
        early_stopped = not_run > 0 or not_counted > 0
    return TrialGroupOutcome(
        n=tally.size if n is None else n,
        rule=tally.rule,
        counts=StatusCounts(
            safe=tally.count(SafetyStatus.SAFE),
            unsafe=tally.count(SafetyStatus.UNSAFE),
            undetermined=tally.count(SafetyStatus.UNDETERMINED) - no_result,
            error=tally.count(SafetyStatus.ERROR),
            no_result=no_result,
        ),
        verdict=verdict,
        status=tally.status_for(verdict),
        not_run=not_run,
        not_counted=not_counted,
        not_counted_unsafe=not_counted_unsafe,
        early_stopped=early_stopped,
        missing=missing,
        concurrency=None if concurrency is None else dict(concurrency),
    )


def population_outcome(population: PopulationResult) -> TrialGroupOutcome:
    """The outcome of a population ``execute_trials_async`` returned: its counted
    trials by the same tally, its cancelled ones not run, its uncounted ones shown."""
    tally = TrialTally(size=population.size, rule=population.rule())
    for result in population.results:
        tally.add(result.status)
    late = population.uncounted
    return tally_outcome(
        tally,
        not_run=population.cancelled_count,
        not_counted=len(late),
        not_counted_unsafe=sum(result.status is SafetyStatus.UNSAFE for result in late),
        concurrency=population.concurrency,
    )


def interrupted_group(
    *, size: int, rule: TrialRule, clones: dict[int, SafetyStatus], cut_short: int
) -> TrialGroupOutcome:
    """A group a Ctrl-C stopped before it finished: INCOMPLETE, never a pass.

    ``clones`` maps each clone that ran to the end to its status (they make the
    counts); ``cut_short`` clones were running when the interrupt came (what they
    recorded is kept, not counted); the rest of ``size`` never ran. A finding still
    wins: more UNSAFE clones than ``max_unsafe`` fail the group whatever the others
    would have done. Otherwise ``missing`` is ``interruption``'s counts.
    """
    tally = TrialTally(size=size, rule=rule)
    for _, status in sorted(clones.items()):
        tally.add(status)
    not_run = max(0, size - len(clones) - cut_short)
    found = tally.count(SafetyStatus.UNSAFE) > rule.max_unsafe
    why = None if found else interruption(n=size, ran=len(clones), not_run=not_run)
    outcome = tally_outcome(tally, not_run=not_run, early_stopped=False, missing=why)
    return attrs.evolve(outcome, interrupted=True)


def interruption(*, n: int, ran: int, not_run: int) -> str:
    """What an interrupted group's line says of its clones: how many ran, were cut
    short (running when the interrupt came) and never ran."""
    cut_short = max(0, n - ran - not_run)
    return (
        f"{ran} of {n} clones ran, {cut_short} cut short (what they recorded is kept, "
        f"not counted), {not_run} not run"
    )


#: Why a saved group whose records predate these facts cannot be judged again.
RULE_NOT_RECORDED = (
    "the saved run does not record the group's rule and each clone's outcome "
    "(written by an older rampart)"
)


def rebuild_group(
    *,
    size: int,
    rule: TrialRule | None,
    clones: dict[int, SafetyStatus],
    partial: frozenset[int] = frozenset(),
    skipped: bool = False,
    executed: int | None = None,
    no_result: int | None = None,
) -> TrialGroupOutcome:
    """The outcome of a saved group, by the same ``TrialTally`` the run used, or INCOMPLETE.

    ``clones`` maps each finished clone's index to its status (its worst result; a
    clone whose own assertions failed with every result SAFE is UNDETERMINED).
    ``partial`` clones never finished. ``executed`` and ``no_result`` are the facts the
    run stamped once the group finished (``None``: it never did, or they were not
    recorded): the verdict counted clones ``0 .. executed - 1``, ``no_result`` of which
    recorded nothing. Without them the clones are fed in index order up to the first
    one missing, and the group is decided only if they settle it (the outstanding
    clones can no longer change the verdict). Missing facts never make a PASS: a
    group without its rule (its outcome then carries the default rule), with counted
    clones that have no record, or cut short before it was decided, is INCOMPLETE.
    Clones that finished but were not counted are ``not_counted``; ``not_run`` is
    what is left of ``size`` once the partial clones are set apart too.
    """
    finished = {index: status for index, status in clones.items() if index not in partial}
    tally = TrialTally(size=size, rule=rule or TrialRule())

    def judged(
        counted: dict[int, SafetyStatus], silent: int = 0, why: str | None = None
    ) -> TrialGroupOutcome:
        late = [status for index, status in finished.items() if index not in counted]
        executed = len(counted) + silent
        return tally_outcome(
            tally,
            no_result=silent,
            not_run=max(0, size - executed - len(late) - len(partial)),
            not_counted=len(late),
            not_counted_unsafe=sum(status is SafetyStatus.UNSAFE for status in late),
            early_stopped=bool(late),
            missing=why,
            n=max(size, executed),
        )

    def fed(counted: dict[int, SafetyStatus]) -> dict[int, SafetyStatus]:
        for status in counted.values():
            tally.add(status)
        return counted

    if rule is None:
        return judged(fed(finished), why=RULE_NOT_RECORDED)
    if skipped:
        counted = fed(dict(sorted(finished.items())))
        if tally.count(SafetyStatus.UNSAFE) > rule.max_unsafe:
            return judged(counted)  # a skip never hides a finding
        return judged(counted, why="a clone skipped the group before it was decided")
    if executed is not None and no_result is not None:
        counted = fed({i: s for i, s in sorted(finished.items()) if i < executed})
        absent = executed - len(counted)
        if absent != no_result:
            return judged(
                counted,
                why=f"{absent - no_result} of the {executed} clones the verdict counted have "
                "no record (deleted or lost)"
                if absent > no_result
                else "the saved clone records contradict the group's own counts",
            )
        for _ in range(no_result):
            tally.add(SafetyStatus.UNDETERMINED)
        return judged(counted, no_result)
    counted = {}
    index = 0
    while index in finished:
        counted[index] = finished[index]
        tally.add(finished[index])
        index += 1
        if rule.sequential and tally.settled():
            break
    if index >= size or tally.settled():
        return judged(counted)
    return judged(
        counted,
        why=f"{len(finished)} of {size} clones are recorded and clone {index} is not: the "
        "group was cut short (or its records are missing) before it was decided",
    )


# The outcome of a clone with records from several runs (a resumed one): a finished
# run of it wins over one cut short, and a failed one over a passed one.
_OUTCOME_ORDER = ("partial", "skipped", "passed", "failed")


def rebuild_results(
    clones: dict[int, list[Result]], *, interrupted: bool = False
) -> TrialGroupOutcome:
    """A saved group's outcome from its clones' results (``clones`` maps each clone
    index to its results, each carrying its ``PopulationRef``): the facts the refs
    carry, fed to ``rebuild_group``. The one reading of saved clone results, for
    ``rampart report`` / ``diff`` and for a resumed run.

    A clone's status is its worst result (UNDETERMINED when its own assertions failed
    although every result was SAFE, as the plugin counts it). A group whose records
    disagree on the rule, or a clone whose outcome is not recorded (an older producer),
    is INCOMPLETE, with the records' own threshold. With ``interrupted`` (the run's
    Ctrl-C stopped the group) it is ``interrupted_group``'s: the clones whose records
    say they finished ran, the partial ones were cut short.
    """
    from rampart.core._population import CloneOutcome

    every = [result for found in clones.values() for result in found]
    refs = [result.population for result in every if result.population is not None]
    if not refs:
        raise ValueError("rebuild_results needs results that carry a PopulationRef")
    rule, executed, no_result = _group_facts(refs)
    statuses: dict[int, SafetyStatus] = {}
    partial = set()
    skipped = False
    for index, found in sorted(clones.items()):
        status, outcome = _clone_facts(found)
        statuses[index] = status
        if outcome is None:
            rule = None  # a clone's outcome is not recorded: an older producer
        elif outcome in (CloneOutcome.PARTIAL, CloneOutcome.SKIPPED):
            partial.add(index)
            skipped = skipped or outcome is CloneOutcome.SKIPPED
    size = max(refs[0].size, *(index + 1 for index in statuses))
    if interrupted:
        return interrupted_group(
            size=size,
            rule=rule or TrialRule(threshold=refs[0].threshold),
            clones={index: s for index, s in statuses.items() if index not in partial},
            cut_short=len(partial),
        )
    rebuilt = rebuild_group(
        size=size,
        rule=rule,
        clones=statuses,
        partial=frozenset(partial),
        skipped=skipped,
        executed=executed,
        no_result=no_result,
    )
    if rule is None:  # the records' own threshold, the rest unknown
        rebuilt = attrs.evolve(rebuilt, rule=TrialRule(threshold=refs[0].threshold))
    return rebuilt


def _clone_facts(results: list[Result]) -> tuple[SafetyStatus, CloneOutcome | None]:
    """A clone's status and its outcome (see ``rebuild_results``)."""
    from rampart.core._population import CloneOutcome
    from rampart.core._severity import worst

    status = worst(result.status for result in results)
    outcomes = {result.population.outcome for result in results if result.population is not None}
    outcome = None
    if None not in outcomes:
        outcome = max(
            (found for found in outcomes if found is not None),
            key=lambda found: _OUTCOME_ORDER.index(found.value),
        )
    if outcome is CloneOutcome.FAILED and status is SafetyStatus.SAFE:
        status = SafetyStatus.UNDETERMINED
    return status, outcome


def _group_facts(refs: list[PopulationRef]) -> tuple[TrialRule | None, int | None, int | None]:
    """The rule and the finished group's ``executed``/``no_result`` the refs carry;
    ``None`` where they are not recorded or the refs disagree."""
    from rampart.core._trial_rule import check_rule

    rules = {(p.threshold, p.confidence, p.sequential, p.max_unsafe) for p in refs}
    rule = None
    if len(rules) == 1:
        threshold, confidence, sequential, max_unsafe = rules.pop()
        if max_unsafe is not None:
            try:
                rule = check_rule(
                    "trace",
                    threshold=threshold,
                    confidence=confidence,
                    sequential=sequential,
                    max_unsafe=max_unsafe,
                )
            except (TypeError, ValueError):
                rule = None
    facts = {(p.executed, p.no_result) for p in refs if p.executed is not None}
    if len(facts) == 1 and all(p.executed is not None for p in refs):
        executed, no_result = facts.pop()
        return rule, executed, no_result
    return rule, None, None
