"""Issue 21 §6 H1/H3: a bidi override (U+202E) or an 8-bit CSI (U+009B) in agent text or a
node id is never written raw into the HTML report, ``diff --json``, ``rescore --json`` or
the JSON report: JSON outputs escape it (and decode to the same
text), the HTML page shows it as visible ``[U+XXXX]`` text."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from rampart.codec import ResultRecord, serialize_record
from rampart.core.result import Result, SafetyStatus
from rampart.core.types import ObservabilityLevel, Request, Response, ToolCall, Turn
from tests.cli._cli import run_main

if TYPE_CHECKING:
    from pathlib import Path

HIDDEN = ("\u202e", "\x9b", "\u2066", "\u200b", "\x85", "\u2028")
NODE = "test_x.py::test_\u202eevil\x9b31m"
TEXT = "ok \u202egnp.exe\x9b2J \u200bend"

CHECKS = """
from rampart.evaluators import ToolCalled

exfiltration = ToolCalled("forward_email")
"""


def _trace(path: Path, status: SafetyStatus) -> Path:
    turn = Turn(
        request=Request(prompt="Summarise."),
        response=Response(
            text=TEXT,
            tool_calls=[ToolCall(name="send_email", arguments={"body": TEXT})]
            if status is SafetyStatus.UNSAFE
            else [],
        ),
    )
    result = Result(
        status=status,
        summary=f"summary {TEXT}",
        strategy="xpia",
        observability_level=ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        turns=[turn],
    )
    record = serialize_record(record=ResultRecord(result=result, pytest_nodeid=NODE))
    path.write_text(record + "\n", encoding="utf-8")
    return path


def _raw(text: str) -> list[str]:
    return [f"U+{ord(char):04X}" for char in HIDDEN if char in text]


@pytest.fixture
def traces(tmp_path: Path) -> tuple[Path, Path]:
    return (
        _trace(tmp_path / "old.jsonl", SafetyStatus.SAFE),
        _trace(tmp_path / "new.jsonl", SafetyStatus.UNSAFE),
    )


def test_diff_json(traces: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    """H3: ``diff --json`` escapes the node id's override; it decodes back unchanged."""
    outcome = run_main(capsys, "diff", *traces, "--json")
    assert NODE.split("::")[1][:6] in json.dumps(json.loads(outcome.out), ensure_ascii=False)
    assert _raw(outcome.out) == []
    assert [test["nodeid"] for test in json.loads(outcome.out)["tests"]] == [NODE]


def test_rescore_json(
    traces: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """H3: ``rescore --json`` escapes the node id it lists; it decodes back unchanged."""
    (tmp_path / "hidden_checks.py").write_text(CHECKS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "hidden_checks", raising=False)
    out = tmp_path / "rescored"
    out.mkdir()
    outcome = run_main(
        capsys,
        "rescore",
        traces[1],
        "--evaluator",
        "hidden_checks:exfiltration",
        "-o",
        out,
        "--json",
    )
    assert _raw(outcome.out) == []
    summary = json.loads(outcome.out)
    (written,) = out.glob("*.jsonl")
    assert summary["output"] == str(written)
    assert [item["pytest_nodeid"] for item in summary["changed"]] == [NODE]


def test_html_json_report_and_trace(
    traces: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """H1: the HTML page shows ``[U+202E]``; the JSON report and trace hold escapes."""
    html, report = tmp_path / "r.html", tmp_path / "r.json"
    outcome = run_main(capsys, "report", traces[1], "--html", html, "--json", report, "-q")
    assert outcome.status in (0, 1), outcome.err
    page = html.read_text(encoding="utf-8")
    assert _raw(page) == []
    assert "[U+202E]gnp.exe[U+009B]2J" in page
    document = report.read_text(encoding="utf-8")
    assert _raw(document) == []
    assert "\\u202egnp.exe\\u009b2J" in document
