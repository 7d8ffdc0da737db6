"""Hostile input files: every command reads them under the codec's one JSON policy.

A file nested 100,000 deep (first line, inside a record, a report, its metadata) is an
error naming the file and the line, never a ``RecursionError`` traceback; ``validate``
goes on to the next files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from rampart.codec import ResultRecord, serialize_record
from rampart.core.result import Result, SafetyStatus
from tests.cli._cli import run_main

if TYPE_CHECKING:
    from pathlib import Path

DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP = "JSON nesting is too deep"


def _good_line() -> str:
    result = Result(status=SafetyStatus.SAFE, summary="ok", strategy="probe")
    return serialize_record(record=ResultRecord(result=result))


def _files(directory: Path) -> dict[str, Path]:
    """One hostile file per place a deep value can sit."""
    good = _good_line()
    texts = {
        "first_line.jsonl": DEEP + "\n",
        "second_line.jsonl": good + "\n" + DEEP + "\n",
        "in_record.jsonl": good.replace('"metadata":{}', '"metadata":{"a":' + DEEP + "}", 1) + "\n",
        "report.json": '{"total_runs":0,"by_harm_category":{},"metadata":' + DEEP + "}",
        "report_entry.json": '{"total_runs":1,"by_harm_category":{"x":[{"metadata":'
        + DEEP
        + "}]}}",
        "whole.json": DEEP,
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = directory / name
        paths[name].write_text(text, encoding="utf-8")
    return paths


@pytest.fixture
def hostile(tmp_path: Path) -> dict[str, Path]:
    return _files(tmp_path)


_CASES = [
    ("first_line.jsonl", ":1:"),
    ("second_line.jsonl", ":2:"),
    ("in_record.jsonl", ":1:"),
    ("report.json", ":"),
    ("report_entry.json", ":"),
]


@pytest.mark.parametrize(
    ("command", "name", "line"),
    [
        *((command, name, line) for command in ("report", "diff") for name, line in _CASES),
        # rescore refuses a JSON report before reading it, so only traces here
        *(("rescore", name, line) for name, line in _CASES if name.endswith(".jsonl")),
    ],
)
def test_a_deeply_nested_file_is_an_error_naming_it(
    hostile: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    command: str,
    name: str,
    line: str,
) -> None:
    path = hostile[name]
    args: list[object] = [command, path]
    if command == "diff":
        args = [command, path, path]
    if command == "rescore":
        args += ["--evaluator", "rampart.evaluators:ToolCalled", "--output", tmp_path / "o"]
    outcome = run_main(capsys, *args)
    assert outcome.status == 2
    assert f"{path}{line}" in outcome.err
    assert TOO_DEEP in outcome.err
    assert "Traceback" not in outcome.err
    assert "RecursionError" not in outcome.err


def test_validate_names_each_deep_file_and_goes_on(
    hostile: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(_good_line() + "\n", encoding="utf-8")
    names = [*hostile.values(), good]
    outcome = run_main(capsys, "validate", *names)
    assert outcome.status == 1
    for name in ("first_line.jsonl", "in_record.jsonl", "report.json", "report_entry.json"):
        assert f"{hostile[name]}:1: $: {TOO_DEEP}" in outcome.out
    assert f"{hostile['second_line.jsonl']}:2: $: {TOO_DEEP}" in outcome.out
    assert "checked 7 files" in outcome.out
    assert "RecursionError" not in outcome.out + outcome.err


def test_a_fifo_or_device_is_not_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A FIFO would block ``read`` forever and ``/dev/zero`` never ends: both are refused
    before they are opened, and ``validate`` goes on to the next file."""
    import os

    fifo = tmp_path / "trace.jsonl"
    os.mkfifo(fifo)
    good = tmp_path / "good.jsonl"
    good.write_text(_good_line() + "\n", encoding="utf-8")
    outcome = run_main(capsys, "validate", fifo, "/dev/zero", good)
    assert outcome.status == 2  # unreadable files, as for a missing one
    message = "not a regular file; expected a JSON report or a JSONL trace"
    assert f"{fifo}: {message}" in outcome.err + outcome.out
    assert f"/dev/zero: {message}" in outcome.err + outcome.out
    assert outcome.out == "checked 1 file, 1 record: all valid; 2 not readable\n"
    report = run_main(capsys, "report", fifo)
    assert (report.status, report.err) == (2, f"rampart report: error: {fifo}: {message}\n")
