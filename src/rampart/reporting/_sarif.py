"""SARIF 2.1.0: a run's findings for code-scanning UIs (``--rampart-sarif PATH``,
``rampart report --sarif PATH``).

One SARIF **result** per unit a verdict is given for, each with a fingerprint that
stays the same from run to run (``partialFingerprints["rampart/v1"]``, a SHA-256 of
what identifies the unit, never of a clone index that a changed selection would
shift):

- each **trial group** (``group`` + its node id): its verdict, with the pass rate, its
  interval, the threshold and the counts in ``properties.rampart``;
- each **case** of a group whose ``trial`` marker named its clones (``ids=``: a
  payload, an AgentDojo pair; ``case`` + node id + case id): the worst status of the
  clones that tested it, and their counts;
- each **result** that is not a trial clone's (``result`` + node id + its index
  within the test; a parametrized test's node id holds its parameter ids).

The **level** follows the verdict: UNSAFE (a failed group with UNSAFE clones) is an
``error``; ERROR (or a group failed without UNSAFE, by errors) a ``warning``: the agent
was not tested, which is not a finding but not a pass either; UNDETERMINED and an
INCONCLUSIVE or INCOMPLETE group a ``note``. SAFE results and passed groups are written
too, as ``kind: "pass"`` (level ``none``), so a code-scanning UI can see a finding go
away; their number is bounded by tests and cases, not by clones.

The **rules** are the harm categories (one rule per category met: its id is the
category, ``uncategorized`` for none); each lists the framework items the risk map
maps its category to (``properties.tags`` and ``relationships``), and each result
names the items its own subjects reach (``taxa``: a payload or an AgentDojo task maps
more precisely than its category), from the run's ``taxonomies``: the framework
versions of the risk map (``rampart.risk``).
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

import attrs

from rampart._redact import redact_data
from rampart._text import one_line
from rampart.core._internal import CASE_KEY, owning_test, severity, worst
from rampart.core.result import SafetyStatus
from rampart.reporting._group_text import group_description
from rampart.reporting._report import UNCATEGORIZED, category_key
from rampart.risk import RiskMap, risk_subjects

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from rampart.core.result import Result
    from rampart.reporting._report import TestRunReport
    from rampart.reporting._run_data import TrialGroupSummary
    from rampart.risk import Framework

__all__ = ["SARIF_SCHEMA", "SarifReportSink", "render_sarif", "sarif_document"]

SARIF_VERSION = "2.1.0"
#: The schema ``$schema`` names (OASIS's, errata 01).
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
FINGERPRINT = "rampart/v1"

# (kind, level) of a result by status.
_BY_STATUS = {
    SafetyStatus.UNSAFE: ("fail", "error"),
    SafetyStatus.ERROR: ("fail", "warning"),
    SafetyStatus.UNDETERMINED: ("fail", "note"),
    SafetyStatus.SAFE: ("pass", "none"),
}


def _fingerprint(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def _group_level(group: TrialGroupSummary) -> tuple[str, str]:
    """A group's (kind, level): its verdict, read with what its clones ended as."""
    if group.verdict == "passed":
        return "pass", "none"
    if group.verdict == "failed":
        if group.counts.unsafe:
            return "fail", "error"
        if group.counts.error:
            return "fail", "warning"
    return "fail", "note"


def _location(nodeid: str | None) -> list[dict[str, Any]]:
    """The test as a location: its file (relative to the rootdir) and its node id."""
    if nodeid is None:
        return []
    location: dict[str, Any] = {
        "logicalLocations": [{"fullyQualifiedName": nodeid, "kind": "function"}]
    }
    path = nodeid.split("::", 1)[0]
    if path and "::" in nodeid:
        location["physicalLocation"] = {
            "artifactLocation": {"uri": path.replace("\\", "/"), "uriBaseId": "%SRCROOT%"}
        }
    return [location]


def _uri(source: str, fallback: str) -> str:
    """``source`` when it is a bare URL, else ``fallback`` (a source may say more)."""
    return source if source.startswith("https://") and " " not in source else fallback


class _Taxa:
    """The framework items results and rules reference, per framework (a taxonomy)."""

    def __init__(self, risk_map: RiskMap) -> None:
        self.risk_map = risk_map
        self.frameworks: list[Framework] = list(risk_map.frameworks)
        self.used: dict[str, dict[str, None]] = {f.id: {} for f in self.frameworks}

    def refs(self, subjects: Sequence[str]) -> list[dict[str, Any]]:
        """``reportingDescriptorReference`` objects of the items ``subjects`` reach."""
        refs: dict[tuple[str, str], dict[str, Any]] = {}
        for entry in self.risk_map.entries_for(subjects):
            index = next(i for i, f in enumerate(self.frameworks) if f.id == entry.framework)
            self.used[entry.framework][entry.item] = None
            refs[(entry.framework, entry.item)] = {
                "id": entry.item,
                "toolComponent": {"name": self.frameworks[index].name, "index": index},
            }
        return list(refs.values())

    def taxonomies(self) -> list[dict[str, Any]]:
        found = []
        for framework in self.frameworks:
            taxa = []
            for item in framework.items:
                if item.id in self.used[framework.id]:
                    taxa.append(
                        {
                            "id": item.id,
                            "name": item.name,
                            "shortDescription": {"text": item.name},
                            "helpUri": _uri(item.source, framework.url),
                        }
                    )
            found.append(
                {
                    "name": framework.name,
                    "version": framework.version,
                    "informationUri": framework.url,
                    "shortDescription": {"text": framework.title},
                    "taxa": taxa,
                }
            )
        return found


class _Builder:
    def __init__(self, report: TestRunReport) -> None:
        self.report = report
        self.taxa = _Taxa(RiskMap.builtin() if report.risk_map is None else report.risk_map)
        self.rules: dict[str, dict[str, Any]] = {}
        self.results: list[dict[str, Any]] = []

    def rule(self, category: str) -> int:
        """The index of ``category``'s rule, made on first use."""
        if category not in self.rules:
            subjects = [] if category == UNCATEGORIZED else [f"harm_category:{category}"]
            refs = self.taxa.refs(subjects)
            self.rules[category] = {
                "id": category,
                "name": "".join(part.title() for part in category.split("_")) or category,
                "shortDescription": {"text": f"rampart harm category {category}"},
                "fullDescription": {
                    "text": f"Results of tests whose primary harm category is {category}."
                },
                "properties": {"tags": ["security", *(ref["id"] for ref in refs)]},
                "relationships": [{"target": ref, "kinds": ["relevant"]} for ref in refs],
            }
        return list(self.rules).index(category)

    def add(
        self,
        *,
        category: str,
        kind: str,
        level: str,
        text: str,
        nodeid: str | None,
        fingerprint: str,
        subjects: Sequence[str],
        properties: dict[str, Any],
    ) -> None:
        result: dict[str, Any] = {
            "ruleId": category,
            "ruleIndex": self.rule(category),
            "kind": kind,
            "level": level,
            "message": {"text": one_line(text, limit=2000)},
            "locations": _location(nodeid),
            "partialFingerprints": {FINGERPRINT: fingerprint},
            "properties": {"rampart": properties},
        }
        refs = self.taxa.refs(subjects)
        if refs:
            result["taxa"] = refs
        self.results.append(result)

    def build(self) -> dict[str, Any]:
        from rampart._version import __version__

        report = self.report
        groups = {group.nodeid: group for group in report.trial_groups}
        clones: dict[str, list[Result]] = {}
        cases: dict[tuple[str, str], list[Result]] = {}
        for index, result in enumerate(_slim(report.results)):
            test = owning_test(result)
            if result.population is not None and test in groups:
                clones.setdefault(test, []).append(result)
                case = result.metadata.get(CASE_KEY)
                if isinstance(case, str) and case:
                    cases.setdefault((test, case), []).append(result)
                continue
            self._plain(result, index)
        for group in report.trial_groups:
            self._group(group, clones.get(group.nodeid, []))
        for (test, case), members in cases.items():
            self._case(groups[test], case, members)
        run = report.run
        invocation: dict[str, Any] = {
            "executionSuccessful": not (run.interrupted or run.incomplete),
        }
        if run.exit_status is not None:
            invocation["exitCode"] = run.exit_status
        notes = [*run.incomplete_reasons] + (["the run was interrupted"] if run.interrupted else [])
        if notes:
            invocation["toolExecutionNotifications"] = [
                {"level": "error", "message": {"text": one_line(note, limit=2000)}}
                for note in notes
            ]
        return {
            "$schema": SARIF_SCHEMA,
            "version": SARIF_VERSION,
            "runs": [
                {
                    "tool": {
                        "driver": {
                            "name": "rampart",
                            "version": __version__,
                            "rules": list(self.rules.values()),
                        }
                    },
                    "invocations": [invocation],
                    "taxonomies": self.taxa.taxonomies(),
                    "results": self.results,
                    "properties": {"rampart": {"riskMap": list(self.taxa.risk_map.origins)}},
                }
            ],
        }

    def _plain(self, result: Result, index: int) -> None:
        kind, level = _BY_STATUS[result.status]
        nodeid = owning_test(result)
        position = result.metadata.get("_rampart_result_index", index)
        self.add(
            category=category_key(result),
            kind=kind,
            level=level,
            text=f"{nodeid or '(no test)'}: {result.status.name}: {result.summary}",
            nodeid=nodeid,
            fingerprint=_fingerprint("result", nodeid or "", str(position)),
            subjects=risk_subjects(result),
            properties={"status": result.status.value, "resultIndex": position},
        )

    def _group(self, group: TrialGroupSummary, members: list[Result]) -> None:
        kind, level = _group_level(group)
        category = group.harm_category or (category_key(members[0]) if members else UNCATEGORIZED)
        verdict = group.verdict.upper() + (f": {group.reason}" if group.reason else "")
        subjects: dict[str, None] = {}
        for result in members:
            subjects.update(dict.fromkeys(risk_subjects(result)))
        interval = group.interval
        self.add(
            category=category,
            kind=kind,
            level=level,
            text=f"{group.nodeid}: trial group {verdict} [{group_description(group)}]",
            nodeid=group.nodeid,
            fingerprint=_fingerprint("group", group.nodeid),
            subjects=list(subjects),
            properties={
                "verdict": group.verdict,
                "n": group.n,
                "executed": group.executed,
                "threshold": group.threshold,
                "passRate": group.pass_rate,
                "interval": {
                    "method": interval.method,
                    "level": interval.level,
                    "low": interval.low,
                    "high": interval.high,
                },
                "counts": attrs.asdict(group.counts),
            },
        )

    def _case(self, group: TrialGroupSummary, case: str, members: list[Result]) -> None:
        status = worst(result.status for result in members)
        kind, level = _BY_STATUS[status]
        shown = min(members, key=lambda result: severity(result.status))
        counts = {member.value: 0 for member in SafetyStatus}
        for result in members:
            counts[result.status.value] += 1
        subjects: dict[str, None] = {}
        for result in members:
            subjects.update(dict.fromkeys(risk_subjects(result)))
        clones = sorted({result.population.index for result in members if result.population})
        self.add(
            category=category_key(shown),
            kind=kind,
            level=level,
            text=f"{group.nodeid} [{case}]: {status.name}: {shown.summary}",
            nodeid=group.nodeid,
            fingerprint=_fingerprint("case", group.nodeid, case),
            subjects=list(subjects),
            properties={"case": case, "status": status.value, "counts": counts, "clones": clones},
        )


def _slim(results: Sequence[Result]) -> Sequence[Result]:
    from rampart.reporting._stored import StoredResults

    return results.slim_results if isinstance(results, StoredResults) else results


def sarif_document(report: TestRunReport) -> dict[str, Any]:
    """The SARIF 2.1.0 log of ``report`` (one run), redacted as the other reports are."""
    document: dict[str, Any] = redact_data(_Builder(report).build())
    return document


def render_sarif(report: TestRunReport) -> bytes:
    """The SARIF log as UTF-8 JSON text."""
    text = json.dumps(sarif_document(report), indent=2, ensure_ascii=False, allow_nan=False)
    return (text + "\n").encode("utf-8")


class SarifReportSink:
    """Writes each report as a SARIF 2.1.0 log to ``path``, replacing the file there
    atomically (a temporary file renamed over it), as ``--junitxml`` does: CI uploads
    one file of a fixed name. ``path`` must be new or a regular file, in a folder that
    exists."""

    def __init__(self, *, path: Path | str) -> None:
        from rampart._checks import check_path

        self._path = check_path("SarifReportSink", "path", path)
        self._last_path: Path | None = None

    @property
    def path(self) -> Path:
        return self._path

    @property
    def last_path(self) -> Path | None:
        """The file the most recent completed write produced, or ``None``."""
        return self._last_path

    def __repr__(self) -> str:
        return f"SarifReportSink(path={str(self._path)!r})"

    async def emit_async(self, *, report: TestRunReport) -> None:
        """:class:`ReportSink` entry point: write the SARIF log (in a worker thread)."""
        import anyio.to_thread

        from rampart.reporting._files import replace_file

        def write() -> Path:
            return replace_file(self._path, render_sarif(report))

        self._last_path = await anyio.to_thread.run_sync(write)
