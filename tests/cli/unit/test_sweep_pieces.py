"""``rampart sweep``'s private pieces (``rampart.cli._sweep``): the pytest command it
runs per setting, one row of its table, and the chart without matplotlib."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import pytest

from rampart.cli._inputs import load_run
from rampart.cli._sweep import Outcome, build_row, draw_chart, pytest_command

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import SavedRuns


def test_auto_is_passed_through(tmp_path: Path) -> None:
    command = pytest_command("auto", ["tests", "-k", "exfil"], tmp_path)
    assert command[:3] == [sys.executable, "-m", "pytest"]
    assert command[3:] == [
        "tests",
        "-k",
        "exfil",
        "--rampart-concurrency=auto",
        f"--rampart-report-dir={tmp_path}",
        "-p",
        "rampart.cli._sweep_probe",
    ]


class TestRows:
    def test_limiter_counts_come_from_the_report(
        self, saved_runs: SavedRuns, tmp_path: Path
    ) -> None:
        """Requests, 429 answers and retries are summed over ``metadata["limits"]``."""
        report = json.loads(saved_runs.hardened.report.read_text(encoding="utf-8"))
        report["metadata"]["limits"] = {
            "agent": {"name": "agent", "requests": 40, "rate_limited": 3, "retries": 4},
            "llm:judge": {"name": "llm:judge", "requests": 10, "rate_limited": 1, "retries": 1},
        }
        path = tmp_path / "report.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        saved = load_run(path)
        outcome = Outcome(
            setting="4", exit_status=0, wall_seconds=2.0, saved=saved, latencies=[0.1, 0.3, 0.2]
        )
        row, changes = build_row(outcome, outcome)
        assert (row.requests, row.rate_limited, row.retries) == (50, 4, 5)
        assert (row.p50_latency_ms, row.p95_latency_ms) == pytest.approx((200.0, 300.0))
        assert (row.paired, row.changed, changes) == (32, 0, [])

    def test_chart_without_matplotlib(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the ``bench`` extra the chart is skipped with a message naming it."""
        monkeypatch.setitem(sys.modules, "matplotlib", None)
        assert draw_chart([], tmp_path) == (
            "chart skipped: matplotlib is not installed (pip install 'rampart[bench]')"
        )
