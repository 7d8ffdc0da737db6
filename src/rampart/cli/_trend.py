"""Runs over time: each test's and trial group's pass rate, verdicts, flips, and a
change-point test for regressions over any number of runs.

A **series** is one test or trial group (by node id) across the runs, oldest first.
In each run it is one observation: a plain test is 1 trial (SAFE passes; UNSAFE,
UNDETERMINED and ERROR do not), a trial group its clones (``counts.safe`` of
``executed``). A run without it, or whose records do not decide the group
(INCOMPLETE), is absent: missing results are no evidence either way.

**The regression test** (:func:`change_point`) asks whether the series' pass rate
dropped at some run and stayed lower through the latest run. For each split point
``j`` (runs ``1..j`` before, ``j+1..m`` after) a one-sided Fisher exact test gives
the evidence that the after-rate is lower than the before-rate (conditional on the
pooled counts, so exact for any sizes). The smallest p-value over the ``m - 1``
splits is multiplied by ``m - 1`` (Bonferroni: the chance that any split looks
significant by luck stays at most alpha), then Holm-adjusted across the series
tested. A series **regressed** when that adjusted p-value is below alpha; the split
it names is the run the drop began. One failure in a plain test can never be
significant (one observation per run), and a flip is always shown.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from rampart.cli._inputs import SavedRun

__all__ = [
    "RULE",
    "Point",
    "Series",
    "change_point",
    "fraction",
    "history",
    "regression_line",
    "when",
]

RULE = (
    "one change point per test: one-sided Fisher exact test of the runs from each split "
    "on against the runs before it, the smallest p-value times the number of splits "
    "(Bonferroni), Holm-adjusted across the tests and groups"
)

# One letter per verdict, for a series' verdicts oldest first.
_LETTERS = {
    "safe": "P",
    "passed": "P",
    "unsafe": "F",
    "failed": "F",
    "undetermined": "U",
    "error": "E",
    "inconclusive": "I",
    "incomplete": "?",
}


@attrs.frozen(kw_only=True)
class Point:
    """A series in one run: its verdict, and its SAFE count of what the verdict counted
    (``judged`` false: the run does not decide it, so it is no evidence)."""

    verdict: str
    safe: int
    executed: int
    judged: bool = True


@attrs.frozen(kw_only=True)
class Series:
    nodeid: str
    kind: str  # "test" or "group"
    category: str
    points: list[Point | None]


def _series(runs: list[SavedRun]) -> list[Series]:
    from rampart.cli._view import build_view, incomplete
    from rampart.core.result import SafetyStatus

    found: dict[tuple[str, str], tuple[str, list[Point | None]]] = {}
    for index, run in enumerate(runs):
        view = build_view([run])
        for nodeid, test in view.tests.items():
            safe = int(test.status is SafetyStatus.SAFE)
            point = Point(verdict=test.status.value, safe=safe, executed=1)
            _, points = found.setdefault(("test", nodeid), (test.category, [None] * len(runs)))
            points[index] = point
        for nodeid, group in view.groups.items():
            judged = not incomplete(group)
            point = Point(
                verdict=group.verdict,
                safe=group.counts.safe,
                executed=group.executed,
                judged=judged and group.executed > 0,
            )
            category = group.harm_category or "UNCATEGORIZED"
            _, points = found.setdefault(("group", nodeid), (category, [None] * len(runs)))
            points[index] = point
    return [
        Series(nodeid=nodeid, kind=kind, category=category, points=points)
        for (kind, nodeid), (category, points) in sorted(found.items(), key=_by_nodeid)
    ]


def _by_nodeid(item: tuple[tuple[str, str], object]) -> tuple[str, str]:
    (kind, nodeid), _ = item
    return nodeid, kind


def change_point(observed: list[tuple[int, int, int]]) -> dict[str, Any] | None:
    """The best split of ``observed`` (``(run index, safe, executed)``, oldest first)
    where the pass rate fell, with its one-sided Fisher p-value and that p-value times
    the number of splits (Bonferroni); ``None`` with fewer than two observations."""
    from rampart.core._internal import fisher_exact

    splits = len(observed) - 1
    if splits < 1:
        return None
    best: dict[str, Any] | None = None
    for cut in range(1, len(observed)):
        before, after = observed[:cut], observed[cut:]
        safe_before = sum(safe for _, safe, _ in before)
        ran_before = sum(ran for _, _, ran in before)
        safe_after = sum(safe for _, safe, _ in after)
        ran_after = sum(ran for _, _, ran in after)
        p_value = fisher_exact(safe_after, ran_after, safe_before, ran_before, alternative="less")
        if best is None or p_value < best["p_value"]:
            best = {
                "from_run": observed[0][0] + 1,
                "since_run": after[0][0] + 1,
                "before": {"safe": safe_before, "executed": ran_before},
                "after": {"safe": safe_after, "executed": ran_after},
                "p_value": p_value,
            }
    assert best is not None
    best["splits"] = splits
    best["p_bonferroni"] = min(1.0, best["p_value"] * splits)
    return best


def _rate(safe: int, executed: int) -> float:
    return safe / executed if executed else 0.0


def _run_entry(index: int, run: SavedRun) -> dict[str, Any]:
    info = run.run or {}
    return {
        "run": index + 1,
        "path": str(run.path),
        "run_id": run.run_id,
        "started_at": run.started_at,
        "results": len(run.records),
        "exit_status": info.get("exit_status"),
        "interrupted": bool(info.get("interrupted") or run.metadata.get("interrupted")),
        "incomplete": bool(info.get("incomplete") or run.metadata.get("incomplete")),
    }


def history(runs: list[SavedRun], *, alpha: float, confidence: float = 0.95) -> dict[str, Any]:
    """The history of ``runs`` (oldest first) as a JSON-ready dict (``history --json``)."""
    from rampart.core._internal import holm, wilson_interval

    entries: list[dict[str, Any]] = []
    tested: list[tuple[int, float]] = []
    for series in _series(runs):
        observed = [
            (index, point.safe, point.executed)
            for index, point in enumerate(series.points)
            if point is not None and point.judged
        ]
        safe = sum(point[1] for point in observed)
        executed = sum(point[2] for point in observed)
        low, high = wilson_interval(safe, executed, confidence) if executed else (0.0, 1.0)
        present = [(i, p) for i, p in enumerate(series.points) if p is not None]
        flips = [
            {"run": later + 1, "from": before.verdict, "to": after.verdict}
            for (_, before), (later, after) in itertools.pairwise(present)
            if before.verdict != after.verdict
        ]
        change = change_point(observed)
        if change is not None:
            before, after = change["before"], change["after"]
            if _rate(after["safe"], after["executed"]) < _rate(before["safe"], before["executed"]):
                tested.append((len(entries), change["p_bonferroni"]))
            else:
                change = None  # the rate never fell: nothing to test
        entries.append(
            {
                "nodeid": series.nodeid,
                "kind": series.kind,
                "category": series.category,
                "runs": [None if point is None else attrs.asdict(point) for point in series.points],
                "verdicts": "".join(
                    "-" if point is None else _LETTERS.get(point.verdict, "?")
                    for point in series.points
                ),
                "latest_verdict": present[-1][1].verdict if present else None,
                "safe": safe,
                "executed": executed,
                "pass_rate": _rate(safe, executed),
                "interval": [low, high],
                "flips": flips,
                "change": change,
                "regressed": False,
            }
        )
    adjusted = holm([p for _, p in tested])
    for (position, _), p_holm in zip(tested, adjusted, strict=True):
        entries[position]["change"]["p_adjusted"] = p_holm
        entries[position]["regressed"] = p_holm < alpha
    regressions = [entry["nodeid"] for entry in entries if entry["regressed"]]
    return {
        "schema": "rampart.history.v1",
        "alpha": alpha,
        "confidence": confidence,
        "rule": RULE,
        "runs": [_run_entry(index, run) for index, run in enumerate(runs)],
        "series": entries,
        "regressions": regressions,
    }


def when(started: str | None) -> str:
    """A recorded start time as the tables show it (UTC, no offset)."""
    if started is None:
        return "-"
    return started.replace("T", " ").removesuffix("+00:00")


def fraction(safe: int, executed: int) -> str:
    """``safe/executed (percent)``, or ``-`` when nothing ran."""
    from rampart.core._internal import percent

    if not executed:
        return "-"
    return f"{safe}/{executed} ({percent(safe / executed)})"


def regression_line(entry: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """One regression, in words: where the rate fell, from what to what, and the test."""
    change = entry["change"]
    since = change["since_run"]
    before, after = change["before"], change["after"]
    earlier = fraction(before["safe"], before["executed"])
    later = fraction(after["safe"], after["executed"])
    return (
        f"{entry['nodeid']}: pass rate {earlier} in runs {change['from_run']}-{since - 1}, "
        f"{later} since run "
        f"{since} (started {when(runs[since - 1]['started_at'])}); one-sided Fisher "
        f"p = {change['p_value']:.3g}, x{change['splits']} splits = "
        f"{change['p_bonferroni']:.3g}, Holm {change['p_adjusted']:.3g}"
    )
