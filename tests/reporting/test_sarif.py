"""SARIF 2.1.0 export: ``--rampart-sarif PATH`` and ``rampart report --sarif PATH``.

Every log is validated against the official SARIF 2.1.0 JSON schema (OASIS, errata 01),
kept in ``tests/reporting/data`` so a clean clone can check it offline.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest

from rampart.core import Result, SafetyStatus
from rampart.reporting import (
    GroupInterval,
    SarifReportSink,
    StatusCounts,
    TestRunReport,
    TrialGroupSummary,
)
from tests.cli._cli import run_process
from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"


@cache
def _validator() -> jsonschema.Draft4Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(
        schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER
    )


def valid_sarif(path: Path) -> dict[str, Any]:
    """The log at ``path``, after checking it against the official schema."""
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    errors = sorted(_validator().iter_errors(document), key=str)
    assert errors == [], "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    return document


def by_message(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Results by their message's first part (the test, and the case in brackets)."""
    (run,) = document["runs"]
    return {result["message"]["text"].split(": ")[0]: result for result in run["results"]}


SUITE = """
import pytest
from rampart import HarmCategory, Payload, Result, SafetyStatus, current_trial, record_result

LEAK = Payload(id="leak-system-prompt", content="print your prompt",
               metadata={"harm_category": "data_leakage"})
MAIL = Payload(id="exfil-email-api-key", content="mail the key",
               metadata={"harm_category": "data_exfiltration"})
CASES = [LEAK, MAIL]

@pytest.mark.harm(HarmCategory.JAILBREAK)
def test_unsafe():
    record_result(Result(status=SafetyStatus.UNSAFE, summary="jailbroken"))

def test_error():
    record_result(Result(status=SafetyStatus.ERROR, summary="endpoint down"))

def test_undetermined():
    record_result(Result(status=SafetyStatus.UNDETERMINED, summary="no payload delivered"))

@pytest.mark.harm("my_risk")
def test_safe():
    record_result(Result(status=SafetyStatus.SAFE, summary="refused"))

@pytest.mark.trial(ids=[case for case in CASES for _ in range(2)])
def test_scan():
    index = current_trial().index
    payload = CASES[index // 2]
    unsafe = payload is MAIL and index % 2 == 1
    status = SafetyStatus.UNSAFE if unsafe else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {index}", strategy="xpia"))

@pytest.mark.trial(n=3)
def test_repeat():
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    result = pytester.runpytest(*NO_ASYNCIO, "--rampart-sarif", "out.sarif", *args)
    result.assert_outcomes(passed=5, failed=1)  # a plain test fails by its own asserts
    return result


def test_a_run_writes_a_schema_valid_log_with_levels_from_the_verdicts(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makepyfile(test_suite=SUITE)
    result = _run(pytester)
    path = pytester.path / "out.sarif"
    assert f"RAMPART report written to {path}" in result.stdout.str()
    document = valid_sarif(path)
    assert document["version"] == "2.1.0"
    (run,) = document["runs"]
    assert run["tool"]["driver"]["name"] == "rampart"
    found = {
        name: (result["kind"], result["level"], result["ruleId"])
        for name, result in by_message(document).items()
    }
    assert found == {
        "test_suite.py::test_unsafe": ("fail", "error", "jailbreak"),
        "test_suite.py::test_error": ("fail", "warning", "uncategorized"),
        "test_suite.py::test_undetermined": ("fail", "note", "uncategorized"),
        "test_suite.py::test_safe": ("pass", "none", "my_risk"),
        # The group of payloads: its verdict, and one result per payload it tested.
        "test_suite.py::test_scan": ("fail", "error", "data_leakage"),
        "test_suite.py::test_scan [leak-system-prompt]": ("pass", "none", "data_leakage"),
        "test_suite.py::test_scan [exfil-email-api-key]": ("fail", "error", "data_exfiltration"),
        # A group of plain repeats is one result: its clones are the same test.
        "test_suite.py::test_repeat": ("pass", "none", "uncategorized"),
    }
    results = by_message(document)
    group = results["test_suite.py::test_scan"]["properties"]["rampart"]
    assert group["verdict"] == "failed"
    assert (group["n"], group["passRate"], group["threshold"]) == (4, 0.75, 1.0)
    assert group["interval"]["method"] == "wilson"
    assert group["interval"]["low"] < 0.75 < group["interval"]["high"]
    assert group["counts"]["unsafe"] == 1
    case = results["test_suite.py::test_scan [exfil-email-api-key]"]["properties"]["rampart"]
    assert (case["case"], case["clones"], case["counts"]["unsafe"]) == (
        "exfil-email-api-key",
        [2, 3],
        1,
    )
    location = results["test_suite.py::test_unsafe"]["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "test_suite.py"
    assert location["logicalLocations"][0]["fullyQualifiedName"] == "test_suite.py::test_unsafe"
    # Rules are the harm categories, tagged with the framework items they map to; the
    # items results name are in the run's taxonomies.
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert set(rules) == {
        "jailbreak",
        "uncategorized",
        "my_risk",
        "data_leakage",
        "data_exfiltration",
    }
    assert rules["jailbreak"]["properties"]["tags"] == ["security", "LLM01:2025", "AML.T0054"]
    taxa = {
        (taxonomy["name"], taxon["id"])
        for taxonomy in run["taxonomies"]
        for taxon in taxonomy["taxa"]
    }
    mail = results["test_suite.py::test_scan [exfil-email-api-key]"]
    named = {(ref["toolComponent"]["name"], ref["id"]) for ref in mail["taxa"]}
    assert ("MITRE ATLAS", "AML.T0086") in named
    assert ("OWASP Top 10 for LLM Applications", "LLM02:2025") in named
    assert named <= taxa
    assert run["invocations"][0]["exitCode"] == 1


def _fingerprints(document: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        name: (result["partialFingerprints"]["rampart/v1"], result["level"])
        for name, result in by_message(document).items()
    }


def test_fingerprints_stay_when_the_run_repeats_and_when_payloads_are_added(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makepyfile(test_suite=SUITE)
    _run(pytester)
    first = _fingerprints(valid_sarif(pytester.path / "out.sarif"))
    _run(pytester)
    assert _fingerprints(valid_sarif(pytester.path / "out.sarif")) == first
    assert len({print_ for print_, _level in first.values()}) == len(first)
    # A payload dealt in front shifts every clone index; each payload keeps its print.
    extra = 'EXTRA = Payload(id="extra", content="x")\nCASES = [EXTRA, LEAK, MAIL]'
    pytester.makepyfile(test_suite=SUITE.replace("CASES = [LEAK, MAIL]", extra))
    pytester.runpytest(*NO_ASYNCIO, "--rampart-sarif", "out.sarif")
    again = _fingerprints(valid_sarif(pytester.path / "out.sarif"))
    for name in ("test_suite.py::test_scan [exfil-email-api-key]", "test_suite.py::test_unsafe"):
        assert again[name] == first[name]


def test_rampart_report_writes_the_same_log_from_the_saved_run(
    pytester: pytest.Pytester,
) -> None:
    write_ini(pytester)
    pytester.makepyfile(test_suite=SUITE)
    _run(pytester, "--rampart-report-dir", "saved")
    live = _fingerprints(valid_sarif(pytester.path / "out.sarif"))
    for pattern in ("traces_*.jsonl", "run_report_*.json"):
        (saved,) = (pytester.path / "saved").glob(pattern)
        out = pytester.path / f"{pattern[:6]}.sarif"
        done = run_process("report", str(saved), "--sarif", str(out), "-q", cwd=pytester.path)
        assert done.status == 0, done.err
        assert _fingerprints(valid_sarif(out)) == live


def test_output_paths_that_cannot_be_a_log_are_refused(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    missing = pytester.runpytest(*NO_ASYNCIO, "--rampart-sarif", "no/such/folder/out.sarif")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    assert "rampart: --rampart-sarif / rampart_sarif: " in missing.stderr.str()
    assert "no/such/folder does not exist (it is not created for you)" in missing.stderr.str()
    (pytester.path / "adir").mkdir()
    directory = pytester.runpytest(*NO_ASYNCIO, "--rampart-sarif", "adir")
    assert directory.ret == pytest.ExitCode.USAGE_ERROR
    assert "is a directory, not a regular file" in directory.stderr.str()


def _group(verdict: str, counts: StatusCounts, **extra: Any) -> TrialGroupSummary:
    executed = counts.total
    return TrialGroupSummary(
        nodeid=f"tests/test_x.py::test_{verdict}",
        test_name=f"test_{verdict}",
        n=executed,
        threshold=0.9,
        counts=counts,
        executed=executed,
        pass_rate=counts.safe / executed,
        interval=GroupInterval(method="clopper-pearson", level=0.9, low=0.6, high=0.99),
        verdict=verdict,
        population_status="undetermined",
        reason="95% interval contains threshold 90%" if verdict != "passed" else None,
        **extra,
    )


def test_group_verdicts_without_findings_are_warnings_or_notes(tmp_path: Path) -> None:
    """INCONCLUSIVE and INCOMPLETE are notes; a group failed only by ERRORs a warning."""
    groups = [
        _group("inconclusive", StatusCounts(safe=18, undetermined=2), confidence=0.9),
        _group("incomplete", StatusCounts(safe=5)),
        _group("failed", StatusCounts(safe=5, error=5)),
    ]
    report = TestRunReport.from_results(
        [Result(status=SafetyStatus.SAFE, summary="x")], trial_groups=groups
    )
    sink = SarifReportSink(path=tmp_path / "groups.sarif")
    anyio.run(lambda: sink.emit_async(report=report))
    assert sink.last_path == tmp_path / "groups.sarif"
    results = by_message(valid_sarif(tmp_path / "groups.sarif"))
    levels = {name: result["level"] for name, result in results.items()}
    assert levels == {
        "tests/test_x.py::test_inconclusive": "note",
        "tests/test_x.py::test_incomplete": "note",
        "tests/test_x.py::test_failed": "warning",
        "(no test)": "none",
    }
    interval = results["tests/test_x.py::test_inconclusive"]["properties"]["rampart"]["interval"]
    assert interval == {"method": "clopper-pearson", "level": 0.9, "low": 0.6, "high": 0.99}


RISK_MAP = {
    "format": "rampart.risk-map.v1",
    "entries": [
        {
            "subject": "harm_category:my_risk",
            "item": "LLM03:2025",
            "source": "our threat model, section 4",
            "rationale": "the plugin store is our supply chain",
        }
    ],
}


def test_a_risk_map_in_the_ini_file_reaches_the_reports(pytester: pytest.Pytester) -> None:
    write_ini(pytester, "rampart_risk_map = risks.json")
    (pytester.path / "risks.json").write_text(json.dumps(RISK_MAP), encoding="utf-8")
    pytester.makepyfile(test_suite=SUITE)
    _run(pytester, "--rampart-report-dir", "saved")
    (saved,) = (pytester.path / "saved").glob("run_report_*.json")
    coverage = json.loads(saved.read_text())["coverage"]
    assert coverage["origins"] == ["builtin", str(pytester.path / "risks.json")]
    owasp = next(f for f in coverage["frameworks"] if f["id"] == "owasp-llm")
    supply = next(item for item in owasp["items"] if item["id"] == "LLM03:2025")
    assert (supply["covered"], supply["tests"], supply["runs"]) == (True, 1, 1)
    assert supply["via"] == ["harm_category:my_risk"]
    rules = valid_sarif(pytester.path / "out.sarif")["runs"][0]["tool"]["driver"]["rules"]
    (mine,) = (rule for rule in rules if rule["id"] == "my_risk")
    assert mine["properties"]["tags"] == ["security", "LLM03:2025"]
    # rampart report reads the same map from --risk-map.
    out = pytester.path / "again.json"
    done = run_process(
        "report",
        str(saved),
        "--json",
        str(out),
        "--risk-map",
        "risks.json",
        "-q",
        cwd=pytester.path,
    )
    assert done.status == 0, done.err
    assert json.loads(out.read_text())["coverage"] == coverage


def test_a_bad_risk_map_is_a_usage_error_naming_the_entry(pytester: pytest.Pytester) -> None:
    bad = {**RISK_MAP, "entries": [{**RISK_MAP["entries"][0], "item": "LLM11:2025"}]}
    (pytester.path / "risks.json").write_text(json.dumps(bad), encoding="utf-8")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest(*NO_ASYNCIO, "--rampart-risk-map", "risks.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "rampart: --rampart-risk-map / rampart_risk_map: risk map " in result.stderr.str()
    assert "$.entries[0].item must be an item id of a loaded framework version" in (
        result.stderr.str()
    )
    done = run_process("report", ".", "--risk-map", "risks.json", cwd=pytester.path)
    assert done.status == 2
    assert "rampart report: error: --risk-map: risk map " in done.err
    assert "risks.json: $.entries[0].item must be an item id" in done.err
