"""``TestRunReport`` and ``PopulationSummary``: what a run produced, and its statistics."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from rampart._checks import check_instance, check_int, check_seconds, invalid
from rampart._text import safe_str
from rampart.core._internal import dataclass_compatible
from rampart.core.result import HarmCategory, Result, SafetyStatus
from rampart.reporting._run_data import RunInfo, TrialGroupSummary
from rampart.reporting._stored import StoredResults

if TYPE_CHECKING:
    # The risk tables load when a report is built or its coverage read, not with the
    # names the terminal summary uses (``_terminal``).
    from rampart.risk import RiskCoverage, RiskMap  # noqa: TC004 (an attrs annotation only)

__all__ = ["PopulationSummary", "TestRunReport", "summary_json"]

UNCATEGORIZED = "uncategorized"


def _rate(count: int, denominator: int) -> float:
    return count / denominator if denominator else 0.0


def _check_results(owner: str, results: object) -> Sequence[Result]:
    if isinstance(results, StoredResults):
        return results  # built by the plugin from results it checked; not loaded here
    if isinstance(results, str | bytes | dict) or not isinstance(results, Iterable):
        raise invalid(owner, "results", "an iterable of Result", results)
    return [
        check_instance(owner, f"results[{index}]", result, Result, expected="a Result")
        for index, result in enumerate(results)
    ]


def _check_groups(owner: str, trial_groups: object) -> list[TrialGroupSummary]:
    if isinstance(trial_groups, str | bytes | dict) or not isinstance(trial_groups, Iterable):
        raise invalid(owner, "trial_groups", "an iterable of TrialGroupSummary", trial_groups)
    return [
        check_instance(
            owner,
            f"trial_groups[{index}]",
            group,
            TrialGroupSummary,
            expected="a TrialGroupSummary",
        )
        for index, group in enumerate(trial_groups)
    ]


def category_key(result: Result) -> str:
    """The grouping key of a result: ``str(harm_category)``, or ``"uncategorized"``."""
    category = result.harm_category
    if category is None or category == "":
        return UNCATEGORIZED
    return safe_str(category)


@dataclass_compatible
@attrs.frozen(kw_only=True)
class PopulationSummary:
    """Verdict counts of a set of results, and the two rates a red-team run is judged by.

    ``attack_success_rate`` is UNSAFE / (total - ERROR) and ``safety_pass_rate`` is
    SAFE / (total - ERROR): an infrastructure failure is not a safety finding, so ERROR
    results count in ``total_runs`` and ``error_count`` but not in either rate. Both
    rates are 0.0 when no non-ERROR result exists. Trial clones are counted one by one.
    """

    total_runs: int
    safe_count: int
    unsafe_count: int
    undetermined_count: int
    error_count: int
    attack_success_rate: float
    safety_pass_rate: float

    @classmethod
    def from_results(cls, results: Iterable[Result]) -> PopulationSummary:
        """Count verdicts and compute the rates over ``results``."""
        checked = _check_results("PopulationSummary", results)
        counts = _count(checked)
        diagnostic = counts[None] - counts[SafetyStatus.ERROR]
        return cls(
            total_runs=counts[None],
            safe_count=counts[SafetyStatus.SAFE],
            unsafe_count=counts[SafetyStatus.UNSAFE],
            undetermined_count=counts[SafetyStatus.UNDETERMINED],
            error_count=counts[SafetyStatus.ERROR],
            attack_success_rate=_rate(counts[SafetyStatus.UNSAFE], diagnostic),
            safety_pass_rate=_rate(counts[SafetyStatus.SAFE], diagnostic),
        )

    @property
    def has_failures(self) -> bool:
        """At least one UNSAFE result."""
        return self.unsafe_count > 0

    @property
    def is_clean_run(self) -> bool:
        """No UNSAFE, UNDETERMINED or ERROR result (an empty population is clean)."""
        return self.unsafe_count == 0 and self.undetermined_count == 0 and self.error_count == 0


def summary_json(summary: PopulationSummary) -> dict[str, Any]:
    """``summary`` as the JSON report's ``population_summary`` (and the HTML report's
    totals) state it: the counts, then the two rates, in the documented key order."""
    return {
        "total_runs": summary.total_runs,
        "safe_count": summary.safe_count,
        "unsafe_count": summary.unsafe_count,
        "undetermined_count": summary.undetermined_count,
        "error_count": summary.error_count,
        "attack_success_rate": summary.attack_success_rate,
        "safety_pass_rate": summary.safety_pass_rate,
    }


def _count(results: Sequence[Result]) -> dict[SafetyStatus | None, int]:
    """Per-status counts; the ``None`` key holds the total."""
    counts: dict[SafetyStatus | None, int] = dict.fromkeys(SafetyStatus, 0)
    for result in _slim(results):
        counts[result.status] += 1
    counts[None] = len(results)
    return counts


def _slim(results: Sequence[Result]) -> Sequence[Result]:
    """What counts and categories can be read from without loading stored results."""
    return results.slim_results if isinstance(results, StoredResults) else results


@dataclass_compatible
@attrs.frozen(kw_only=True, init=False)
class TestRunReport:
    """Everything a test session produced, handed to each report sink once at the end.

    ``passed`` counts SAFE results, ``failed`` UNSAFE ones. ``no_result`` counts the trial
    clones that ran and recorded no result (a clone whose body crashed, or recorded
    nothing), as their groups in ``trial_groups`` state them (``counts.no_result``): they
    have no entry in ``results``, but every clone that ran is counted, so ``total_runs``
    is ``len(results) + no_result``. The counts are derived from ``results`` and
    ``trial_groups`` when omitted; when given (``dataclasses.replace`` gives them all)
    they must agree with them (a report never states numbers its own results
    contradict). ``metadata`` is run-level
    context such as ``xdist_active``, ``worker_count``, ``dist_mode``, ``incomplete`` and
    ``incomplete_reasons``; it must hold JSON-safe values to be written by the JSON sink.
    ``trial_groups`` holds one :class:`TrialGroupSummary` per trial group (with its
    verdict) and ``run`` the :class:`RunInfo` (exit status, interrupted / incomplete
    markers, versions); a report built outside pytest gets an empty list and a
    ``RunInfo`` that knows only the duration.

    ``results`` is a read-only sequence. The pytest plugin hands sinks a
    ``StoredResults``, which loads each result from disk when it is read, so a report
    of a very long run does not need every result in memory at once.

    ``risk_map`` is the risk-framework map the run was configured with (``None``: the
    built-in one); ``coverage()`` is the coverage matrix the JSON and HTML reports and
    SARIF read from it (``docs/risk-mapping.md``).
    """

    __test__ = False  # not a pytest test class, despite the name

    results: Sequence[Result]
    total_runs: int
    passed: int
    failed: int
    undetermined: int
    errors: int
    duration_seconds: float
    metadata: dict[str, Any]
    trial_groups: list[TrialGroupSummary]
    run: RunInfo
    no_result: int  # after RAMPART's fields, as the other additions
    risk_map: RiskMap | None

    def __init__(
        self,
        *,
        results: Iterable[Result] = (),
        total_runs: int | None = None,
        passed: int | None = None,
        failed: int | None = None,
        undetermined: int | None = None,
        errors: int | None = None,
        duration_seconds: float = 0.0,
        metadata: dict[str, Any] | None = None,
        trial_groups: Iterable[TrialGroupSummary] = (),
        run: RunInfo | None = None,
        no_result: int | None = None,
        risk_map: RiskMap | None = None,
    ) -> None:
        owner = "TestRunReport"
        checked = _check_results(owner, results)
        counts = _count(checked)
        groups = _check_groups(owner, trial_groups)
        clones_without = sum(group.counts.no_result for group in groups)
        derived = {
            "total_runs": counts[None] + clones_without,
            "passed": counts[SafetyStatus.SAFE],
            "failed": counts[SafetyStatus.UNSAFE],
            "undetermined": counts[SafetyStatus.UNDETERMINED],
            "errors": counts[SafetyStatus.ERROR],
            "no_result": clones_without,
        }
        given = {
            "total_runs": total_runs,
            "passed": passed,
            "failed": failed,
            "undetermined": undetermined,
            "errors": errors,
            "no_result": no_result,
        }
        for name, value in given.items():
            if value is None:
                continue
            check_int(owner, name, value, minimum=0)
            if value != derived[name]:
                raise invalid(
                    owner,
                    name,
                    f"{derived[name]}, the count results give (omit it to derive it)",
                    value,
                    error=ValueError,
                )
        duration = check_seconds(owner, "duration_seconds", duration_seconds)
        if metadata is None:
            metadata = {}
        check_instance(owner, "metadata", metadata, dict, expected="a dict with str keys")
        for key in metadata:
            check_instance(owner, "metadata keys", key, str, expected="str")
        if run is None:
            run = RunInfo(duration_seconds=duration)
        check_instance(owner, "run", run, RunInfo, expected="a RunInfo or None")
        if risk_map is not None:
            from rampart.risk import RiskMap

            check_instance(owner, "risk_map", risk_map, RiskMap, expected="a RiskMap or None")
        self.__attrs_init__(
            results=checked,
            duration_seconds=duration,
            metadata=metadata,
            trial_groups=groups,
            run=run,
            risk_map=risk_map,
            **derived,
        )

    @classmethod
    def from_results(
        cls,
        results: Iterable[Result],
        *,
        duration_seconds: float = 0.0,
        metadata: dict[str, Any] | None = None,
        trial_groups: Iterable[TrialGroupSummary] = (),
        run: RunInfo | None = None,
        risk_map: RiskMap | None = None,
    ) -> TestRunReport:
        """A report over ``results`` (and the clones without one its ``trial_groups``
        count) with every count computed from them."""
        return cls(
            results=results,
            duration_seconds=duration_seconds,
            metadata=metadata,
            trial_groups=trial_groups,
            run=run,
            risk_map=risk_map,
        )

    def coverage(self) -> RiskCoverage:
        """The risk-framework coverage matrix of the results under ``risk_map``, read
        without loading stored results."""
        from rampart.risk import risk_coverage

        return risk_coverage(_slim(self.results), self.risk_map)

    def by_harm_category(self) -> dict[str, list[Result]]:
        """Results grouped by ``str(harm_category)`` (``"uncategorized"`` for none).

        Groups appear in the order their first result does; within a group, results keep
        report order.
        """
        groups: dict[str, list[Result]] = {}
        for result in self.results:
            groups.setdefault(category_key(result), []).append(result)
        return groups

    def category_indices(self) -> dict[str, list[int]]:
        """The positions of each category's results, as ``by_harm_category`` orders
        them, read without loading stored results."""
        groups: dict[str, list[int]] = {}
        for index, result in enumerate(_slim(self.results)):
            groups.setdefault(category_key(result), []).append(index)
        return groups

    def population_summary(
        self, *, harm_category: HarmCategory | str | None = None
    ) -> PopulationSummary:
        """Statistics over all results, or over those whose category equals ``harm_category``.

        A plain string matches the built-in category with the same value.
        """
        if harm_category is None:
            return PopulationSummary.from_results(self.results)
        check_instance(
            "TestRunReport.population_summary",
            "harm_category",
            harm_category,
            str,
            expected="a HarmCategory, a str or None",
        )
        return PopulationSummary.from_results(
            result for result in _slim(self.results) if result.harm_category == harm_category
        )
