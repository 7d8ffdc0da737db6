"""``make demo``: run the example red-team suite against the simulated agent.

Safety findings are the expected output of a red-team run, so failing *tests* do not
fail the demo. It exits non-zero only when the suite did not run properly: a crash, a
usage error, an interrupted or incomplete run, or a report that was not written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT_DIR = ROOT / ".report"


# How a *finding* fails a test: a failed assertion, or a failed trial group.
FINDING_PREFIXES = ("AssertionError", "assert ", "Failed: trial group failed")


def crashes(junit_xml: Path) -> list[str]:
    """Tests that failed for another reason than a safety finding (bugs, setup errors)."""
    found = []
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        for outcome in case:
            message = outcome.get("message") or ""
            if outcome.tag == "error" or (
                outcome.tag == "failure" and not message.startswith(FINDING_PREFIXES)
            ):
                found.append(f"{name}: {message.splitlines()[0] if message else outcome.tag}")
    return found


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        return run(Path(scratch) / "junit.xml")


def run(junit_xml: Path) -> int:
    before = set(REPORT_DIR.glob("*"))
    command = [
        sys.executable,
        "-m",
        "pytest",
        str(ROOT / "examples"),
        # pytest-asyncio may be installed in a development environment; the examples
        # run on rampart's default (anyio) and need no other async plugin.
        "-p",
        "no:asyncio",
        "--tb=no",
        "-q",
        f"--junitxml={junit_xml}",
        f"--rampart-report-dir={REPORT_DIR}",
        # One line per trial group, not one per clone (pass --rampart-summary=all for those).
        "--rampart-summary=groups",
        *sys.argv[1:],
    ]
    code = subprocess.call(command, cwd=ROOT)
    if code not in (0, 1):
        print(f"\nDemo failed: pytest exited with status {code}.", file=sys.stderr)
        return code
    crashed = crashes(junit_xml)
    if crashed:
        print("\nDemo failed: tests crashed rather than reporting findings:", file=sys.stderr)
        for line in crashed:
            print(f"  {line}", file=sys.stderr)
        return 1
    new_files = set(REPORT_DIR.glob("*")) - before
    written = sorted(path for path in new_files if path.name.startswith("run_report_"))
    reports = [path for path in written if path.suffix == ".json"]
    pages = [path for path in written if path.suffix == ".html"]
    traces = sorted(path for path in new_files if path.name.startswith("traces_"))
    if not reports or not pages or not traces:
        # --rampart-report-dir writes all three; each must have written its file.
        print("\nDemo failed: a report sink did not write its file.", file=sys.stderr)
        return 1
    report = json.loads(reports[-1].read_text(encoding="utf-8"))
    if report["run"]["incomplete"] or report["run"]["interrupted"]:
        print("\nDemo failed: the run is incomplete.", file=sys.stderr)
        return 1
    summary = report["population_summary"]
    print(
        f"\nDemo finished: {report['total_runs']} results "
        f"({summary['unsafe_count']} unsafe, {summary['safe_count']} safe, "
        f"{summary['undetermined_count']} undetermined, {summary['error_count']} errors)."
        f"\nJSON report: {reports[-1].relative_to(ROOT)}"
        f"\nTrace records: {traces[-1].relative_to(ROOT)}"
        f"\nHTML report: {pages[-1].relative_to(ROOT)}  (open {pages[-1].as_uri()})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
