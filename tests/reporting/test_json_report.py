"""``JsonFileReportSink``: report shape, naming, atomicity and loud failures."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from rampart.codec import ResultRecord, serialize_record
from rampart.core import SafetyStatus

# Private seam: _files.utc_timestamp is frozen so file names can be predicted.
from rampart.reporting import JsonFileReportSink, ReportError, ReportSink, TestRunReport, _files
from tests._builders import make_result, make_rich_result

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-04-25T14-30-00-123"
TOP_KEYS = [
    "total_runs",
    "passed",
    "failed",
    "undetermined",
    "errors",
    "no_result",
    "duration_seconds",
    "metadata",
    "population_summary",
    "by_harm_category",
    "trial_groups",
    "run",
    "coverage",
]
RESULT_KEYS = [
    "safe",
    "status",
    "summary",
    "harm_category",
    "strategy",
    "observability_level",
    "duration_seconds",
    "metadata",
    "turns",
    "final_trace_evaluation",
]


def _listing(directory: Path) -> list[Path]:
    """Files in ``directory`` (sorted), or [] when it was never created."""
    return sorted(directory.iterdir()) if directory.exists() else []


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> str:
    """Every report in the test gets the same timestamp."""
    monkeypatch.setattr(_files, "utc_timestamp", lambda: STAMP)
    return STAMP


def _canonical_body(result: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(serialize_record(record=ResultRecord(result=result)))[
        "result"
    ]
    return body


async def _emit(sink: JsonFileReportSink, report: TestRunReport) -> dict[str, Any]:
    await sink.emit_async(report=report)
    assert sink.last_path is not None
    data: dict[str, Any] = json.loads(sink.last_path.read_text(encoding="utf-8"))
    return data


class TestShape:
    @pytest.mark.anyio
    async def test_top_level_keys_and_counts(self, tmp_path: Path, frozen_clock: str) -> None:
        """Top-level keys come in the documented order with the report's numbers."""
        results = [
            make_result(SafetyStatus.SAFE, category="jailbreak"),
            make_result(SafetyStatus.UNSAFE),
            make_result(SafetyStatus.ERROR, category="jailbreak"),
        ]
        meta = {"xdist_active": False, "worker_count": 0, "incomplete": False}
        report = TestRunReport.from_results(results, duration_seconds=3.5, metadata=meta)
        data = await _emit(JsonFileReportSink(output_dir=tmp_path), report)
        assert list(data) == TOP_KEYS
        assert [data[k] for k in TOP_KEYS[:7]] == [3, 1, 1, 0, 1, 0, 3.5]
        assert data["metadata"] == meta
        assert data["population_summary"] == {
            "total_runs": 3,
            "safe_count": 1,
            "unsafe_count": 1,
            "undetermined_count": 0,
            "error_count": 1,
            "attack_success_rate": 0.5,
            "safety_pass_rate": 0.5,
        }
        assert list(data["by_harm_category"]) == ["jailbreak", "uncategorized"]
        assert [r["status"] for r in data["by_harm_category"]["jailbreak"]] == ["safe", "error"]
        # Built outside pytest: no trial groups, and a run section that knows the duration.
        assert data["trial_groups"] == []
        assert data["run"]["duration_seconds"] == 3.5
        assert data["run"]["exit_status"] is None

    @pytest.mark.anyio
    async def test_rich_result_projection(self, tmp_path: Path, frozen_clock: str) -> None:
        """Every projected field equals the canonical encoding of the result."""
        result = make_rich_result()
        canonical = _canonical_body(result)
        data = await _emit(
            JsonFileReportSink(output_dir=tmp_path), TestRunReport.from_results([result])
        )
        entry = data["by_harm_category"]["data_exfiltration"][0]
        assert list(entry) == [*RESULT_KEYS, "trace_end_reason", "population"]
        assert entry["safe"] is False
        assert entry["status"] == canonical["status"] == "unsafe"
        assert entry["summary"] == "Attack objective detected"  # ANSI stripped
        assert canonical["summary"] == result.summary  # the codec keeps it verbatim
        for key in ("harm_category", "strategy", "observability_level", "duration_seconds"):
            assert entry[key] == canonical[key]
        assert entry["metadata"] == canonical["metadata"] == result.metadata
        assert entry["trace_end_reason"] == "stop_condition_met"
        assert entry["population"] == {
            "id": "pop-1",
            "index": 2,
            "size": 5,
            "threshold": 0.8,
            # What a rebuilt verdict rests on; not recorded for a hand-built population.
            "confidence": None,
            "sequential": False,
            "max_unsafe": None,
            "outcome": None,
            "executed": None,
            "no_result": None,
        }
        assert entry["final_trace_evaluation"] == {
            "outcome": "detected",
            "confidence": 0.9,
            "evidence": ["send_email({'to': 'evil'})"],
            "rationale": "exfiltration",
            "undetermined_operands": ["response channel redacted"],
        }

    @pytest.mark.anyio
    async def test_turn_projection(self, tmp_path: Path, frozen_clock: str) -> None:
        """Turn keys follow the flat layout; optional keys appear only with content."""
        data = await _emit(
            JsonFileReportSink(output_dir=tmp_path),
            TestRunReport.from_results([make_rich_result()]),
        )
        plain, attacked = data["by_harm_category"]["data_exfiltration"][0]["turns"]
        assert plain == {
            "turn_number": 0,
            "prompt": "Summarize my inbox",
            "response_text": "Here is the summary.",
            "response_metadata": {"latency_ms": 12},
        }
        assert attacked == {
            "turn_number": 1,
            "prompt": None,
            "response_text": "Sending it now",
            "response_metadata": {},
            "tool_calls": [{"name": "send_email", "arguments": {"to": "evil"}, "result": "sent"}],
            "side_effects": [{"kind": "http_request", "details": {"url": "https://x"}}],
            "eval_outcome": "detected",
            "eval_confidence": 0.75,
            "eval_rationale": "tool called",
            "eval_undetermined_operands": ["side effects not observable"],
            "driver_reasoning": "escalate",
        }

    @pytest.mark.anyio
    async def test_gap_and_provenance_keys_omitted_when_empty(
        self, tmp_path: Path, frozen_clock: str
    ) -> None:
        """Without gaps or provenance, only the always-present keys are written."""
        from rampart.core import EvalOutcome, EvalResult, Request, Response, Result, Turn

        result = Result(
            status=SafetyStatus.SAFE,
            summary="fine",
            final_trace_evaluation=EvalResult(outcome=EvalOutcome.NOT_DETECTED),
            turns=[
                Turn(
                    request=Request(prompt="hi"),
                    response=Response(text="hello"),
                    eval_result=EvalResult(outcome=EvalOutcome.NOT_DETECTED, rationale="clean"),
                )
            ],
        )
        data = await _emit(
            JsonFileReportSink(output_dir=tmp_path), TestRunReport.from_results([result])
        )
        entry = data["by_harm_category"]["uncategorized"][0]
        assert list(entry) == RESULT_KEYS
        assert entry["final_trace_evaluation"] == {
            "outcome": "not_detected",
            "confidence": 1.0,
            "evidence": [],
            "rationale": "",
        }
        assert entry["turns"] == [
            {
                "turn_number": 0,
                "prompt": "hi",
                "response_text": "hello",
                "response_metadata": {},
                "eval_outcome": "not_detected",
                "eval_confidence": 1.0,
                "eval_rationale": "clean",
            }
        ]

    @pytest.mark.anyio
    async def test_unrecorded_final_evaluation_is_null(
        self, tmp_path: Path, frozen_clock: str
    ) -> None:
        """A manual result without final-trace evidence reports it as null, with no turns."""
        data = await _emit(
            JsonFileReportSink(output_dir=tmp_path),
            TestRunReport.from_results([make_result(summary="manual")]),
        )
        entry = data["by_harm_category"]["uncategorized"][0]
        assert entry["final_trace_evaluation"] is None
        assert entry["turns"] == []
        assert entry["safe"] is True

    @pytest.mark.anyio
    async def test_file_format(self, tmp_path: Path, frozen_clock: str) -> None:
        """The file is UTF-8 JSON indented by two spaces, ending with a newline."""
        sink = JsonFileReportSink(output_dir=tmp_path)
        await sink.emit_async(report=TestRunReport.from_results([make_result()]))
        assert sink.last_path is not None
        text = sink.last_path.read_text(encoding="utf-8")
        assert text.startswith('{\n  "total_runs": 1,\n')
        assert text.endswith("}\n")

    @pytest.mark.anyio
    async def test_non_ascii_written_readably(self, tmp_path: Path, frozen_clock: str) -> None:
        """Non-ASCII text is stored as UTF-8 characters, not ``\\u`` escapes."""
        sink = JsonFileReportSink(output_dir=tmp_path)
        await sink.emit_async(report=TestRunReport.from_results([make_result(summary="bloqué ✓")]))
        assert sink.last_path is not None
        assert "bloqué ✓" in sink.last_path.read_text(encoding="utf-8")


class TestNaming:
    @pytest.mark.anyio
    async def test_utc_millisecond_filename(self, tmp_path: Path) -> None:
        """Without a frozen clock the name is run_report_<UTC ms>.json in output_dir."""
        sink = JsonFileReportSink(output_dir=str(tmp_path / "reports"))
        path = await sink.write(report=TestRunReport())
        assert path == sink.last_path
        assert path.parent == tmp_path / "reports"
        assert re.fullmatch(r"run_report_\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}\.json", path.name)

    @pytest.mark.anyio
    async def test_frozen_clock_name(self, tmp_path: Path, frozen_clock: str) -> None:
        """The timestamp comes from the stamp function, verbatim."""
        path = await JsonFileReportSink(output_dir=tmp_path).write(report=TestRunReport())
        assert path.name == f"run_report_{STAMP}.json"

    @pytest.mark.anyio
    async def test_existing_report_never_overwritten(
        self, tmp_path: Path, frozen_clock: str
    ) -> None:
        """A report already at the target name survives; the new one gets a UUID suffix."""
        existing = tmp_path / f"run_report_{STAMP}.json"
        existing.write_text("precious", encoding="utf-8")
        path = await JsonFileReportSink(output_dir=tmp_path).write(report=TestRunReport())
        assert existing.read_text(encoding="utf-8") == "precious"
        assert re.fullmatch(rf"run_report_{STAMP}_[0-9a-f]{{32}}\.json", path.name)
        assert json.loads(path.read_text(encoding="utf-8"))["total_runs"] == 0

    @pytest.mark.anyio
    async def test_concurrent_emits_make_distinct_files(
        self, tmp_path: Path, frozen_clock: str
    ) -> None:
        """Many tasks emitting in the same millisecond each get their own complete file."""
        sink = JsonFileReportSink(output_dir=tmp_path)
        count = 12

        async def emit(i: int) -> None:
            report = TestRunReport.from_results(
                [make_result(summary=f"run {i}")], metadata={"i": i}
            )
            await sink.emit_async(report=report)

        async with anyio.create_task_group() as tg:
            for i in range(count):
                tg.start_soon(emit, i)
        files = _listing(tmp_path)
        assert len(files) == count
        assert all(not f.name.startswith(".") for f in files)  # no temp file left
        seen = sorted(json.loads(f.read_text(encoding="utf-8"))["metadata"]["i"] for f in files)
        assert seen == list(range(count))


class TestFailures:
    @pytest.mark.anyio
    async def test_rejected_result_names_the_test_and_writes_nothing(
        self, tmp_path: Path, frozen_clock: str
    ) -> None:
        """A result the codec rejects fails the emit, naming the result; no file remains."""
        bad = make_result(
            metadata={"_pytest_nodeid": "tests/test_a.py::test_bad", "blob": object()}
        )
        report = TestRunReport.from_results([make_result(), bad])
        sink = JsonFileReportSink(output_dir=tmp_path)
        with pytest.raises(
            ReportError, match=r"report\.results\[1\] \(test 'tests/test_a\.py::test_bad'\)"
        ):
            await sink.emit_async(report=report)
        assert sink.last_path is None
        assert _listing(tmp_path) == []

    @pytest.mark.anyio
    async def test_rejected_result_without_nodeid(self, tmp_path: Path, frozen_clock: str) -> None:
        """Without a node id the error still names the result by its index."""
        report = TestRunReport.from_results([make_result(metadata={"bad": float("nan")})])
        with pytest.raises(ReportError, match=r"report\.results\[0\] cannot be written"):
            await JsonFileReportSink(output_dir=tmp_path).emit_async(report=report)

    @pytest.mark.anyio
    async def test_non_json_run_metadata(self, tmp_path: Path, frozen_clock: str) -> None:
        """Run metadata that is not JSON-safe is refused by name before anything is written."""
        report = TestRunReport.from_results([], metadata={"when": object()})
        with pytest.raises(ReportError, match=r"report\.metadata must hold only JSON-safe"):
            await JsonFileReportSink(output_dir=tmp_path).emit_async(report=report)
        assert _listing(tmp_path) == []

    @pytest.mark.anyio
    async def test_lone_surrogate_in_run_metadata(self, tmp_path: Path, frozen_clock: str) -> None:
        """Run metadata that cannot be encoded as UTF-8 is refused before writing."""
        report = TestRunReport.from_results([], metadata={"reason": "bad \ud800"})
        with pytest.raises(ReportError, match=r"report\.metadata"):
            await JsonFileReportSink(output_dir=tmp_path).emit_async(report=report)
        assert _listing(tmp_path) == []

    @pytest.mark.anyio
    async def test_rejects_non_report(self, tmp_path: Path) -> None:
        """Passing something other than a TestRunReport is a TypeError naming the argument."""
        sink = JsonFileReportSink(output_dir=tmp_path)
        with pytest.raises(TypeError, match="report must be a TestRunReport"):
            await sink.emit_async(report={"total_runs": 0})  # type: ignore[arg-type]


class TestConstruction:
    def test_is_a_report_sink(self, tmp_path: Path) -> None:
        """The built-in sink satisfies the ReportSink protocol."""
        assert isinstance(JsonFileReportSink(output_dir=tmp_path), ReportSink)

    def test_constructor_touches_no_filesystem(self, tmp_path: Path) -> None:
        """The output directory is created on first write, not at construction."""
        sink = JsonFileReportSink(output_dir=tmp_path / "later")
        assert sink.output_dir == tmp_path / "later"
        assert not (tmp_path / "later").exists()
        assert sink.last_path is None

    @pytest.mark.parametrize(
        ("value", "error"), [(None, TypeError), (3, TypeError), ("", ValueError)]
    )
    def test_bad_output_dir(self, value: object, error: type[Exception]) -> None:
        """output_dir must be a non-empty path; the error names it."""
        with pytest.raises(error, match="output_dir must be"):
            JsonFileReportSink(output_dir=value)  # type: ignore[arg-type]


class TestOverridePoints:
    """RAMPART's ``_serialize_result`` / ``_serialize_report`` are the override points."""

    def test_serialize_result_is_the_entry(self) -> None:
        sink = JsonFileReportSink(output_dir="unused")
        result = make_rich_result()
        data = sink._serialize_result(result)
        assert data["status"] == result.status.value
        assert data["observability_level"] == result.observability_level.value
        assert data["turns"][0]["prompt"] == result.turns[0].request.prompt

    def test_serialize_report_is_the_document(self) -> None:
        sink = JsonFileReportSink(output_dir="unused")
        report = TestRunReport(results=[make_result()], metadata={"build": 7})
        data = sink._serialize_report(report)
        assert data["metadata"] == {"build": 7}
        assert data["total_runs"] == 1
        [entries] = data["by_harm_category"].values()
        assert entries[0]["summary"] == make_result().summary

    def test_overridden_result_is_written(self, tmp_path: Path) -> None:
        class Tagged(JsonFileReportSink):
            def _serialize_result(self, result: Any) -> dict[str, Any]:
                data = super()._serialize_result(result)
                data["team"] = "red"
                data["odd"] = float("nan")  # written as null, the report is not lost
                return data

        sink = Tagged(output_dir=tmp_path)
        anyio.run(lambda: sink.emit_async(report=TestRunReport(results=[make_result()])))
        written = json.loads(next(tmp_path.glob("run_report_*.json")).read_text())
        [entries] = written["by_harm_category"].values()
        assert entries[0]["team"] == "red"
        assert entries[0]["odd"] is None
        assert written["total_runs"] == 1

    def test_overridden_report_is_written(self, tmp_path: Path) -> None:
        class Slim(JsonFileReportSink):
            def _serialize_report(self, report: TestRunReport) -> dict[str, Any]:
                return {"runs": report.total_runs, "when": SafetyStatus.SAFE}

        sink = Slim(output_dir=tmp_path)
        anyio.run(lambda: sink.emit_async(report=TestRunReport(results=[make_result()])))
        written = json.loads(next(tmp_path.glob("run_report_*.json")).read_text())
        assert written == {"runs": 1, "when": "safe"}
