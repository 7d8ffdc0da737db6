"""The data an HTML report embeds: a projection of the canonical codec and the report.

Every result is the canonical ``rampart.trace.v2`` result body (``canonical_body``, the
codec's own output parsed back), so the page shows exactly what the trace records
hold, attachments, injections and timestamps included. Around them: the run section,
totals and per-category counts, and each trial group with its clone strip (which
result each clone produced). Nothing here encodes a result field a second time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rampart.core._internal import CASE_KEY, owning_test, severity
from rampart.reporting._canonical import canonical_body, check_run_metadata
from rampart.reporting._report import PopulationSummary, category_key, summary_json
from rampart.reporting._stored import confidence_unusable

if TYPE_CHECKING:
    from rampart.core.result import Result
    from rampart.reporting._report import TestRunReport
    from rampart.reporting._run_data import TrialGroupSummary

__all__ = ["STATE_FORMAT", "html_state"]

#: Names the shape of the embedded state, for tools that read it out of a page.
STATE_FORMAT = "rampart.html-state.v1"


def _clone_cells(
    group: TrialGroupSummary,
    by_clone: dict[tuple[str, int, str | None], list[int]],
    results: list[Result],
) -> list[list[Any]]:
    """One ``[status or None, first result index or -1, case or None]`` per clone index.

    ``None`` is a clone that left no result (it recorded nothing, or early stop
    cancelled it before it did); the case is what the clone tested (``ids=``).
    """
    cells: list[list[Any]] = []
    for clone in range(group.n):
        indices = by_clone.get((group.nodeid, clone, group.worker), [])
        if not indices:
            cells.append([None, -1, None])
            continue
        worst = min(indices, key=lambda i: severity(results[i].status))
        case = results[worst].metadata.get(CASE_KEY)
        cells.append([results[worst].status.value, worst, case if isinstance(case, str) else None])
    return cells


def _attribution_index(
    results: list[Result], groups: list[TrialGroupSummary]
) -> dict[tuple[str, int, str | None], list[int]]:
    """Clone result indices by (group nodeid, clone index, worker); the worker only where
    groups need it."""
    workers = {group.worker for group in groups}
    keyed: dict[tuple[str, int, str | None], list[int]] = {}
    for index, result in enumerate(results):
        metadata = result.metadata if isinstance(result.metadata, dict) else {}
        group = owning_test(result)
        if group is None or result.population is None:
            continue
        worker = metadata.get("_rampart_source_worker")
        worker = worker if isinstance(worker, str) and worker in workers else None
        keyed.setdefault((group, result.population.index, worker), []).append(index)
    return keyed


def _null_unusable_confidences(body: dict[str, Any], result: Result) -> dict[str, Any]:
    """``null`` where the live confidence is not a finite number (the record has ``0.0``),
    as the JSON report writes it: the page must not show a confidence nobody gave."""
    final = body.get("final_trace_evaluation")
    if final is not None and confidence_unusable(result.final_trace_evaluation):
        final["confidence"] = None
    for turn, live in zip(body.get("turns", []), result.turns, strict=False):
        if turn.get("eval_result") is not None and confidence_unusable(live.eval_result):
            turn["eval_result"]["confidence"] = None
    return body


def html_state(report: TestRunReport) -> dict[str, Any]:
    """Everything the page shows, as JSON-ready data.

    Raises :class:`ReportError` (as the JSON report does) when a result is rejected by
    the codec or the run metadata is not JSON-safe.
    """
    check_run_metadata(report.metadata)
    # The page embeds every result: read them once (a pytest run's report reads them
    # from its result store on access).
    results = list(report.results)
    bodies = []
    for index, result in enumerate(results):
        body = _null_unusable_confidences(canonical_body(result, index), result)
        body["category"] = category_key(result)
        bodies.append(body)
    by_category: dict[str, list[Result]] = {}
    for result in results:
        by_category.setdefault(category_key(result), []).append(result)
    categories = [
        {"name": name, **summary_json(PopulationSummary.from_results(members))}
        for name, members in by_category.items()
    ]
    keyed = _attribution_index(results, report.trial_groups)
    groups = [
        {**group.to_json(), "clones": _clone_cells(group, keyed, results)}
        for group in report.trial_groups
    ]
    return {
        "format": STATE_FORMAT,
        "run": report.run.to_json(),
        "metadata": report.metadata,
        "totals": summary_json(report.population_summary()),
        "categories": categories,
        "groups": groups,
        "coverage": report.coverage().to_json(),
        "results": bodies,
    }
