"""Helpers for plugin tests: every behaviour is checked through a real pytest run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

# The project's own run disables the plugin (``-p no:rampart``: its unit tests are not a
# safety suite), so each in-process pytester run loads it, and pytester drops modules a
# run imported once the run is over. Importing the plugin's session and its per-item
# parts here (with them the model and the engine, which a session loads only when a run
# uses rampart) keeps one copy of them for every inner run: faster, and no run sees a
# module left half-replaced by an earlier one.
import rampart.pytest_plugin._items
import rampart.pytest_plugin._session  # noqa: F401

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

# Inner runs disable pytest-asyncio unless a test opts in: it is installed only to test
# compatibility, and it warns at configure time when its loop scope is unset.
NO_ASYNCIO = ("-p", "no:asyncio", "-p", "no:cacheprovider")

REPORT_HOOK = """
from pathlib import Path
from rampart.reporting import JsonFileReportSink

def pytest_rampart_sinks(config):
    return [JsonFileReportSink(output_dir=Path(__file__).parent / "reports")]
"""


def reports(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    """Every JSON report the inner run wrote, oldest name first."""
    directory = pytester.path / "reports"
    if not directory.exists():
        return []
    return [json.loads(path.read_text()) for path in sorted(directory.glob("run_report_*.json"))]


def only_report(pytester: pytest.Pytester) -> dict[str, Any]:
    found = reports(pytester)
    assert len(found) == 1, f"expected one report, found {len(found)}"
    return found[0]


def all_results(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [result for group in report["by_harm_category"].values() for result in group]


def write_ini(pytester: pytest.Pytester, *lines: str) -> Path:
    return pytester.makeini("\n".join(["[pytest]", *lines]))
