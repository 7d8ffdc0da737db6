"""``--rampart-resume``: reuse what a run journal holds, run only the rest.

The plan (``ResumePlan``) reads the journal once and indexes its *complete* units by
``(nodeid, clone)``: a unit is complete when the journal holds all ``of`` of its
results and its outcome is not ``partial`` (an interrupted clone runs again). Lines
of the running session's own run id are ignored (it appends to the same journal).

An UNSAFE result in the journal is a finding that no resumed run erases (DESIGN 17):
a ``partial`` unit (a clone or test an interrupt stopped) that recorded UNSAFE is
reused like a complete one -- the clone counts UNSAFE in its group and is not run
again, a plain test fails again with a line that says why -- and among a clone's
units the one holding an UNSAFE result is the one reused.

Per item (``ResumePlan.for_item``): only units whose test hash matches the item's
current hash are reused. The hash (``test_hash``) covers the test function's source,
every marker's arguments and the effective trial settings, so changed test code
invalidates the test's entries -- with a message naming the test -- and it runs
again; so does changed code of any fixture the test requests, directly or through
other fixtures. A plain test is resumed when its unit is there; a trial test runs only the
clone indices the journal lacks, and is not run at all when it has every one.

A test that ran populations (``execute_trials_async`` in its body, e.g. RAMPART's
``trial_config`` form) is resumed whole or not at all: a test body cannot be resumed
halfway, so its trials are journaled with the test when it ends, each unit carrying
the test's outcome. When one run's journal holds the finished test (no unit of it
partial), every unit of it is reused (``ItemResume.trials``) and the test does not run;
when the test was interrupted, it runs again in full, unless a trial it had finished
recorded UNSAFE (a finding, kept: the test fails again, saying so).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections import Counter, defaultdict
from typing import TYPE_CHECKING

import attrs

from rampart._text import one_line
from rampart.pytest_plugin._journal import JOURNAL_KEY, JournalLine, read_journal
from rampart.pytest_plugin._ledger import Attribution, RecordedResult, UnitOutcome

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from rampart.pytest_plugin._markers import TrialSpec

__all__ = [
    "ItemResume",
    "ResumePlan",
    "ResumedUnit",
    "changed_message",
    "count_by_run",
    "test_hash",
]

#: A journal unit's place in its test: (trial group, clone index or None).
_Key = tuple[int, "int | None"]

test_hash_version = "2"  # 2: the fixtures' source is hashed too


def test_hash(item: pytest.Item, spec: TrialSpec | None) -> str:
    """A digest of what makes the test's results reusable: its code and its markers.

    The source of the test function (its bytecode when the source is unavailable),
    the source of every fixture it requests, transitively (so changing the agent
    fixture invalidates the tests that use it),
    each marker's name and arguments (``repr``), the parametrization, and the
    effective trial settings (``n`` after ``--rampart-trials``, threshold, early stop, and
    the verdict extensions when in use: a default ``--rampart-confidence`` changes the
    group as its marker would). Concurrency is left out: it does not change what a
    clone records.
    """
    digest = hashlib.sha256(test_hash_version.encode())
    function = getattr(item, "function", None)
    source = _source(function) if function is not None else item.nodeid
    digest.update(source.encode("utf-8", "surrogatepass"))
    for name, fixture_source in _fixture_sources(item):
        digest.update(f"\0fixture {name}\0".encode())
        digest.update(fixture_source.encode("utf-8", "surrogatepass"))
    for marker in item.iter_markers():
        digest.update(repr((marker.name, marker.args, sorted(marker.kwargs.items()))).encode())
    callspec = getattr(item, "callspec", None)
    if callspec is not None:
        digest.update(repr(sorted(callspec.params.items())).encode())
    if spec is not None:
        digest.update(repr((spec.n, spec.threshold, spec.early_stop)).encode())
        if not spec.rule.is_count_rule or spec.sequential:
            digest.update(repr((spec.confidence, spec.sequential, spec.max_unsafe)).encode())
    return digest.hexdigest()[:32]


def _fixture_sources(item: pytest.Item) -> list[tuple[str, str]]:
    """The source of every fixture the test requests, directly or through other
    fixtures (pytest's closure of fixture names), overridden definitions included."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    sources = []
    for name in sorted(info.names_closure):
        for definition in info.name2fixturedefs.get(name, ()):
            function = getattr(definition, "func", None)
            if function is not None:
                sources.append((name, _source(function)))
    return sources


@functools.lru_cache(maxsize=4096)
def _source(function: object) -> str:
    """The function's source (once per function: parametrized items share it), or its
    bytecode when the source is unavailable."""
    try:
        return inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        return repr((code.co_code, code.co_consts)) if code is not None else repr(function)


@attrs.frozen(kw_only=True)
class ResumedUnit:
    """A complete unit from the journal: its lines, run and outcome; ``interrupted``
    when it was journaled partial and is kept for its UNSAFE finding."""

    run: str
    clone: int | None
    outcome: UnitOutcome
    detail: str
    lines: tuple[JournalLine, ...]
    group: int = 0
    interrupted: bool = False

    @property
    def unsafe(self) -> bool:
        """The unit recorded an UNSAFE result: a finding that is always kept."""
        return any(line.unsafe for line in self.lines)


@attrs.frozen(kw_only=True)
class ItemResume:
    """What the journal supplies for one item; with no units, ``stale_runs`` names the
    runs whose entries for it its changed code invalidated. ``units`` are keyed by
    clone (None: the test's own results); ``trials`` by ``(group, index)``: the trials
    of the populations a test ran (then ``complete``: the test is reused whole)."""

    units: dict[int | None, ResumedUnit]
    complete: bool  # the item need not run at all
    stale_runs: tuple[str, ...] = ()
    trials: dict[tuple[int, int], ResumedUnit] = attrs.field(factory=dict)

    @property
    def runs(self) -> tuple[str, ...]:
        found = [*self.units.values(), *self.trials.values()]
        return tuple(sorted({unit.run for unit in found}))


class ResumePlan:
    """The journal's complete units, ready to be matched to items (module docstring)."""

    def __init__(self, journal: Path, *, current_run: str) -> None:
        self.journal = journal
        contents = read_journal(journal)
        self.skipped_lines = contents.skipped + int(contents.torn_tail)
        self.problems = _problem_messages(journal, contents.problems, contents.skipped)
        groups: dict[tuple[str, str, int, int | None], list[JournalLine]] = defaultdict(list)
        for line in contents.lines:
            if line.run != current_run:
                groups[(line.run, line.nodeid, line.group, line.clone)].append(line)
        # nodeid -> (group, clone) -> candidate (hash, unit) pairs, earliest run first.
        self._units: dict[str, dict[_Key, list[tuple[str, ResumedUnit]]]] = {}
        for (run, nodeid, group, clone), lines in groups.items():
            unit = _complete_unit(run, clone, lines, group=group)
            if unit is not None:
                per_clone = self._units.setdefault(nodeid, {})
                per_clone.setdefault((group, clone), []).append((lines[0].test_hash, unit))

    @property
    def unit_count(self) -> int:
        return sum(len(per_clone) for per_clone in self._units.values())

    def for_item(self, nodeid: str, current_hash: str, spec: TrialSpec | None) -> ItemResume | None:
        """What the journal supplies for the item, or None when it has nothing for it.

        When the journal's entries for it are all invalidated by changed code, the
        answer has no units and names the runs (``changed_message`` says it).
        """
        per_key = self._units.get(nodeid)
        if per_key is None:
            return None
        chosen: dict[int | None, ResumedUnit] = {}
        stale_runs: set[str] = set()
        trials: dict[_Key, list[ResumedUnit]] = {}
        for (group, clone), candidates in per_key.items():
            matching = [unit for unit_hash, unit in candidates if unit_hash == current_hash]
            if not matching:
                stale_runs.update(unit.run for _, unit in candidates)
            elif spec is None and clone is not None:
                trials[(group, clone)] = matching  # a trial of a population the test ran
            elif group == 0:
                # The earliest run's unit, unless a later one holds a finding.
                chosen[clone] = next((unit for unit in matching if unit.unsafe), matching[0])
        if trials:
            return _whole_test(chosen.get(None), trials, stale_runs)
        if spec is not None:
            chosen = {
                clone: unit for clone, unit in chosen.items() if clone is None or clone < spec.n
            }
        if not chosen:
            if stale_runs:
                return ItemResume(units={}, complete=False, stale_runs=tuple(sorted(stale_runs)))
            return None
        if spec is None:
            complete = None in chosen
            chosen = {None: chosen[None]} if complete else {}
            if not chosen:
                return None
        else:
            complete = all(index in chosen for index in range(spec.n))
            fixtures = chosen.get(None)
            if not complete and (fixtures is None or not fixtures.unsafe):
                # The test runs, so its fixtures record afresh: reuse only clones (and
                # a finding its fixtures recorded, which is kept whatever they record).
                chosen.pop(None, None)
                if not chosen:
                    return None
        return ItemResume(units=chosen, complete=complete)

    def load(self, unit: ResumedUnit, *, nodeid: str) -> list[RecordedResult]:
        """The unit's results, decoded by the strict codec, marked as resumed.

        Raises ``SchemaError`` when a line does not decode (the unit then runs again).
        """
        from rampart.codec import deserialize_record

        loaded = []
        with self.journal.open("rb") as handle:
            for line in unit.lines:
                handle.seek(line.offset)
                text = handle.read(line.length).decode("utf-8")
                result = deserialize_record(data=text).result
                metadata = dict(result.metadata)
                metadata.pop(JOURNAL_KEY, None)
                result = attrs.evolve(result, metadata=metadata)
                loaded.append(
                    RecordedResult(
                        result=result,
                        attribution=Attribution.of(
                            result,
                            nodeid=nodeid,
                            name=line.name,
                            clone=line.clone,
                            index=line.index,
                            worker=line.worker,
                            group=line.group,
                        ),
                        resumed_from=line.run,
                    )
                )
        return loaded


def _problem_messages(journal: Path, problems: tuple[str, ...], skipped: int) -> tuple[str, ...]:
    """One warning per journal line that is not used (the units on it run again)."""
    where = one_line(str(journal))
    messages = [
        f"rampart resume: {where} {problem}; not used (what it held runs again)"
        for problem in problems
    ]
    if skipped > len(problems):
        messages.append(f"rampart resume: {where}: {skipped - len(problems)} more lines not used")
    return tuple(messages)


def changed_message(nodeid: str, runs: tuple[str, ...]) -> str:
    """What to say about a test whose journaled results its changed code invalidates."""
    return (
        f"{nodeid} changed since run {', '.join(run[:12] for run in runs)} (its source, its "
        "fixtures' source or its marker arguments differ); its journaled results are not "
        "reused and it runs again"
    )


def finding_detail(run: str) -> str:
    """The failure line of a plain test kept for an UNSAFE result an interrupt cut short."""
    return (
        f"recorded UNSAFE before run {run[:12]} was interrupted; an UNSAFE result is a "
        "finding that no rerun erases"
    )


def _whole_test(
    body: ResumedUnit | None, trials: dict[_Key, list[ResumedUnit]], stale_runs: set[str]
) -> ItemResume | None:
    """A test that ran populations: every unit of the first run that finished it, else
    the findings an interrupted run kept (the test fails again), else nothing (it runs
    again). See the module docstring."""
    by_run: dict[str, dict[tuple[int, int], ResumedUnit]] = {}
    for (group, clone), candidates in trials.items():
        assert clone is not None
        for unit in candidates:
            by_run.setdefault(unit.run, {})[(group, clone)] = unit
    own: dict[int | None, ResumedUnit] = {}
    for run, units in by_run.items():  # earliest run first
        if not any(unit.interrupted for unit in units.values()):
            if body is not None and body.run == run:
                own[None] = body
            return ItemResume(units=own, complete=True, trials=units)
    findings = {key: unit for units in by_run.values() for key, unit in units.items()}
    if findings:
        if body is not None and body.interrupted:
            own[None] = body
        return ItemResume(units=own, complete=True, trials=findings)
    if stale_runs:
        return ItemResume(units={}, complete=False, stale_runs=tuple(sorted(stale_runs)))
    return None


def _complete_unit(
    run: str, clone: int | None, lines: list[JournalLine], *, group: int = 0
) -> ResumedUnit | None:
    first = lines[0]
    detail = first.detail
    interrupted = False
    if first.outcome == UnitOutcome.PARTIAL.value:
        if not any(line.unsafe for line in lines):
            return None  # it runs again
        # A finding: kept as it was recorded (a clone's UNSAFE result fails its group;
        # a plain test fails again, saying why).
        outcome = UnitOutcome.PASSED if clone is not None else UnitOutcome.FAILED
        detail = finding_detail(run) if clone is None else ""
        interrupted = True
    else:
        try:
            outcome = UnitOutcome(first.outcome)
        except ValueError:
            return None
    by_index: dict[int, JournalLine] = {}
    for line in lines:
        if (line.of, line.test_hash, line.outcome) != (first.of, first.test_hash, first.outcome):
            return None
        by_index.setdefault(line.index, line)
    if sorted(by_index) != list(range(first.of)):
        return None
    ordered = tuple(by_index[index] for index in range(first.of))
    return ResumedUnit(
        run=run,
        clone=clone,
        outcome=outcome,
        detail=detail,
        lines=ordered,
        group=group,
        interrupted=interrupted,
    )


def count_by_run(results: list[RecordedResult]) -> dict[str, int]:
    """How many of ``results`` each journaled run supplied."""
    return dict(Counter(r.resumed_from for r in results if r.resumed_from is not None))
