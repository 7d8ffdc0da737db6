"""``make demo``: run the example red-team suite against the simulated agent.

Safety findings are the expected output of a red-team run, so failing *tests* do not
fail the demo. It exits non-zero only when the suite did not run properly: a crash, a
usage error, an interrupted or incomplete run, or a report that was not written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REPORT_DIR = ROOT / ".report"


def main() -> int:
    before = set(REPORT_DIR.glob("run_report_*.json"))
    env = {**os.environ, "RAMPART_REPORT_DIR": str(REPORT_DIR)}
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
        *sys.argv[1:],
    ]
    code = subprocess.call(command, cwd=ROOT, env=env)
    if code not in (0, 1):
        print(f"\nDemo failed: pytest exited with status {code}.", file=sys.stderr)
        return code
    written = sorted(set(REPORT_DIR.glob("run_report_*.json")) - before)
    if not written:
        print("\nDemo failed: no JSON report was written.", file=sys.stderr)
        return 1
    report = json.loads(written[-1].read_text(encoding="utf-8"))
    if report["metadata"].get("incomplete"):
        print("\nDemo failed: the run is incomplete.", file=sys.stderr)
        return 1
    summary = report["population_summary"]
    print(
        f"\nDemo finished: {report['total_runs']} results "
        f"({summary['unsafe_count']} unsafe, {summary['safe_count']} safe, "
        f"{summary['undetermined_count']} undetermined, {summary['error_count']} errors)."
        f"\nJSON report: {written[-1].relative_to(ROOT)}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
