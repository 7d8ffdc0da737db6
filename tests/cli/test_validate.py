"""``rampart validate``: one line per bad record, naming the file, line and rule, never data."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.cli._cli import run_main, run_process

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import SavedRuns

SECRET = "hunter2-do-not-echo"


def _records(trace: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trace.read_text(encoding="utf-8").split("\n") if line]


def _write_lines(path: Path, documents: list[object]) -> Path:
    lines = [d if isinstance(d, str) else json.dumps(d) for d in documents]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


class TestValidFiles:
    def test_saved_runs_are_valid(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A report and a trace written by a real run pass, with status 0 and a summary."""
        outcome = run_main(
            capsys, "validate", saved_runs.regressed.report, saved_runs.regressed.trace
        )
        assert outcome.status == 0
        assert outcome.lines == ["checked 2 files, 64 records: all valid"]

    def test_installed_script_and_module_agree(self, saved_runs: SavedRuns) -> None:
        """The ``rampart`` console script runs the same command, in its own process."""
        outcome = run_process("validate", "-q", saved_runs.hardened.trace)
        assert (outcome.status, outcome.out, outcome.err) == (0, "", "")


class TestBadTraceRecords:
    @pytest.fixture
    def bad_trace(self, saved_runs: SavedRuns, tmp_path: Path) -> Path:
        records = _records(saved_runs.hardened.trace)
        status = json.loads(json.dumps(records[0]))
        status["result"]["status"] = SECRET
        version = json.loads(json.dumps(records[1]))
        version["version"] = "rampart.trace.v1"
        number = json.loads(json.dumps(records[2]))
        number["result"]["turns"][0]["turn_number"] = 1.0
        missing = json.loads(json.dumps(records[3]))
        del missing["result"]["summary"]
        free_key = json.loads(json.dumps(records[4]))
        free_key["result"]["metadata"][SECRET] = 1
        free_key["result"]["turns"][0]["response"]["tool_calls"] = [{"arguments": {}}]
        return _write_lines(
            tmp_path / "bad.jsonl",
            [
                status,
                version,
                number,
                missing,
                free_key,
                '{"version": "rampart.trace.v2", "result": {"status": "safe", "status": "x"}}',
                f"not json {SECRET}",
                "",
                records[5],
                f'{{"version": "rampart.trace.v2", "result": {{"summary": "{SECRET}", "x": NaN}}}}',
            ],
        )

    def test_one_line_per_bad_record(
        self, bad_trace: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Each bad record gets PATH:LINE: RULE [CHECK], under the first check it fails."""
        outcome = run_main(capsys, "validate", bad_trace)
        assert outcome.status == 1
        assert outcome.lines == [
            f'{bad_trace}:1: $.result.status: expected one of "safe", "unsafe", '
            '"undetermined", "error" [schema]',
            f"{bad_trace}:2: $.version: unsupported trace schema version; this reader "
            "supports only 'rampart.trace.v2' and never reads another major [version]",
            f"{bad_trace}:3: $.result.turns[0].turn_number: expected an integer in integer "
            "notation, got number [decoder]",
            f"{bad_trace}:4: $.result.summary: required field is missing [schema]",
            f"{bad_trace}:5: $.result.turns[0].response.tool_calls[0].name: required field "
            "is missing [schema]",
            f"{bad_trace}:6: $.result.status: duplicate key (a member name may appear only "
            "once per object) [json]",
            f"{bad_trace}:7: $: expected JSON text (Expecting value at line 1 column 1) [json]",
            f"{bad_trace}:10: $: expected finite JSON numbers (NaN, Infinity and numbers "
            "that overflow a float are not accepted) [json]",
            "checked 1 file, 9 records: 8 bad",
        ]

    def test_data_is_never_echoed(
        self, bad_trace: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Values and free-form keys (here a secret-looking string) never reach the output."""
        outcome = run_main(capsys, "validate", bad_trace)
        assert SECRET not in outcome.out + outcome.err

    def test_alternatives_are_named(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A value that is none of a field's types names them all."""
        (record, *_) = _records(saved_runs.hardened.trace)
        record["result"]["turns"][0]["response"]["tool_calls"] = [
            {"name": "x", "arguments": {}, "result": 5}
        ]
        path = _write_lines(tmp_path / "t.jsonl", [record])
        outcome = run_main(capsys, "validate", "-q", path)
        assert outcome.lines == [
            f"{path}:1: $.result.turns[0].response.tool_calls[0].result: expected string or "
            "null, got integer [schema]"
        ]

    def test_free_form_keys_are_named_by_position(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A bad producer-chosen key is located as ``[<key #n>]``, never by its text."""
        (record, *_) = _records(saved_runs.hardened.trace)
        record["result"]["metadata"] = {"a": 1, SECRET + "\udc80": 2}
        path = _write_lines(tmp_path / "t.jsonl", [record])
        outcome = run_main(capsys, "validate", "-q", path)
        assert outcome.lines == [
            f"{path}:1: $.result.metadata[<key #1>]: expected keys of Unicode scalar values "
            "(lone surrogates are not allowed) [json]"
        ]


class TestReports:
    def test_bad_entries_are_located_in_the_report(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A bad result entry is named by its report path and the line it starts on; a
        custom category name (producer text) by its position."""
        report = json.loads(saved_runs.hardened.report.read_text(encoding="utf-8"))
        entries = report["by_harm_category"]["data_exfiltration"]
        entries[1]["turns"][0]["response_text"] = 5
        entries[2]["safe"] = False
        report["by_harm_category"][SECRET] = [{"status": "safe", "safe": True}]
        path = tmp_path / "report.json"
        text = json.dumps(report, indent=2)
        path.write_text(text, encoding="utf-8")
        outcome = run_main(capsys, "validate", "-q", path)
        lines = text.split("\n")
        assert outcome.status == 1
        assert len(outcome.lines) == 3
        first, second, third = outcome.lines
        number = int(first.split(":")[1])
        assert lines[number - 1].strip() == "{"
        assert first == (
            f"{path}:{number}: $.by_harm_category.data_exfiltration[1].turns[0]."
            "response_text: expected string, got integer [schema]"
        )
        assert second.endswith(
            ": $.by_harm_category.data_exfiltration[2].status: 'safe' disagrees with safe: "
            "false (the entry was edited) [decoder]"
        )
        assert third.endswith(
            ": $.by_harm_category[<category #2>][0].summary: required field is missing [schema]"
        )
        assert SECRET not in outcome.out

    def test_counts_the_results_contradict(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A report whose totals disagree with its own results is bad (rule ``report``)."""
        report = json.loads(saved_runs.hardened.report.read_text(encoding="utf-8"))
        report["passed"] -= 1
        report["population_summary"]["unsafe_count"] = 3
        path = tmp_path / "report.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        outcome = run_main(capsys, "validate", "-q", path)
        assert outcome.lines == [
            f"{path}:1: $.passed: the results give 32 [report]",
            f"{path}:1: $.population_summary.unsafe_count: the results give 0 [report]",
        ]

    def test_clones_without_a_result_count_in_the_total(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``total_runs`` is the results plus ``no_result``, which the trial groups'
        no-result counts must give."""
        report = json.loads(saved_runs.hardened.report.read_text(encoding="utf-8"))
        stated = sum(group["counts"]["no_result"] for group in report["trial_groups"])
        assert report["no_result"] == stated
        report["no_result"] = stated + 2
        path = tmp_path / "report.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        outcome = run_main(capsys, "validate", "-q", path)
        total = report["total_runs"] + 2
        assert outcome.lines == [
            f"{path}:1: $.total_runs: the results give {total} [report]",
            f"{path}:1: $.no_result: the trial groups give {stated} [report]",
        ]

    def test_missing_top_level_keys(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "report.json"
        path.write_text('{"total_runs": 0, "by_harm_category": {}}', encoding="utf-8")
        outcome = run_main(capsys, "validate", "-q", path)
        assert outcome.status == 1
        assert f"{path}:1: $.passed: required field is missing [report]" in outcome.lines


class TestFiles:
    def test_wrong_formats(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Empty, non-rampart and non-UTF-8 files are bad files (status 1), said plainly."""
        empty = tmp_path / "empty.json"
        empty.write_text("", encoding="utf-8")
        other = tmp_path / "other.json"
        other.write_text('{"hello": 1}', encoding="utf-8")
        binary = tmp_path / "bin.jsonl"
        binary.write_bytes(b"\xff\xfe\x00")
        outcome = run_main(capsys, "validate", "-q", empty, other, binary)
        assert outcome.status == 1
        assert outcome.lines == [
            f"{empty}: empty file; expected a JSON report or a JSONL trace file [format]",
            f"{other}: neither a rampart JSON report (an object with 'by_harm_category') nor "
            "a JSONL trace file (one object with a 'version' per line) [format]",
            f"{binary}: not UTF-8 text (byte 0); expected a JSON report or a JSONL trace "
            "file [format]",
        ]

    def test_empty_trace_file_is_a_run_without_results(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A valid file, but nothing was checked: not "all valid", and status 2."""
        path = tmp_path / "traces.jsonl"
        path.write_text("", encoding="utf-8")
        outcome = run_main(capsys, "validate", path)
        assert outcome.lines == ["checked 1 file, 0 records: nothing checked (no record in them)"]
        assert outcome.status == 2

    def test_unreadable_files_exit_2_and_the_rest_is_checked(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        missing = tmp_path / "missing.jsonl"
        outcome = run_main(capsys, "validate", missing, tmp_path, saved_runs.hardened.trace)
        assert outcome.status == 2
        assert outcome.err.splitlines() == [
            f"rampart validate: error: {missing}: no such file",
            f"rampart validate: error: {tmp_path}: no saved run in it (run_report_*.json, "
            "traces_*.jsonl or journal/rampart-journal-*.jsonl)",
        ]
        assert outcome.lines == ["checked 1 file, 32 records: all valid; 2 not readable"]

    def test_a_record_over_several_lines(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """One pretty-printed record is read as one record, whatever the file is called."""
        (record, *_) = _records(saved_runs.hardened.trace)
        path = tmp_path / "record.txt"
        path.write_text(json.dumps(record, indent=2), encoding="utf-8")
        assert run_main(capsys, "validate", path).status == 0

    def test_help(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as exit_info:
            run_main(capsys, "validate", "--help")
        assert exit_info.value.code == 0
        assert "PATH:LINE: RULE [CHECK]" in capsys.readouterr().out
