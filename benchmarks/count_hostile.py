"""The red-team pass's bad inputs, counted by area: how many were tried and how many held.

Each test case below feeds rampart one hostile or broken input (a rebuilt verdict
from a doctored trace, a second Ctrl-C, a steering judge reply, a file nested 100,000
deep, an echoed key, ...) and asserts that it held: the verdict stayed honest, the
input was refused with an error naming it, nothing leaked. The script runs them with
pytest (one process, as CI does) and prints, per area, the cases tried and held.

Usage: ``python benchmarks/count_hostile.py [AREA ...]`` (a few minutes; the interrupt,
rebuild and scan cases run real pytest processes). Give area numbers (``8 9``) to run
only those areas.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# area -> pytest selections (a file, or a file with -k)
AREAS: dict[str, list[list[str]]] = {
    "1 rebuilt verdicts (report, diff, validate, shards)": [
        ["tests/cli/test_rebuilt_verdicts.py"],
        ["tests/cli/test_shards.py"],
    ],
    "2 interrupts, resume, hostile journals": [
        ["tests/pytest_plugin/test_interrupt_races.py"],
        ["tests/pytest_plugin/test_resume_findings.py"],
        ["tests/pytest_plugin/test_journal_input.py"],
        ["tests/pytest_plugin/unit/test_journal.py", "-k", "unusable_line"],
        # -n 2: the interrupted controller still says how to resume
        ["tests/pytest_plugin/test_interrupts.py", "-k", "ctrl_c_under_xdist"],
    ],
    "3 the judge reads agent text as data": [
        ["tests/evaluators/test_judge_hostile.py"],
        ["tests/evaluators/unit/test_judge_answer.py", "-k", "TestOneStrictParser"],
    ],
    "4 skip and xfail never hide a finding": [["tests/pytest_plugin/test_skip_findings.py"]],
    "5 hostile input is bounded": [
        ["tests/cli/test_hostile_files.py"],
        ["tests/cli/test_output_paths.py"],
        ["tests/adapters/test_hostile_bodies.py"],
        ["tests/core/test_strict_json.py"],
        ["tests/limits/test_signals.py", "-k", "linear_time"],
        ["tests/unit/test_text.py", "-k", "linear_time or cuts_before_cleaning"],
        [
            "tests/limits/unit/test_atomic_rate.py",
            "-k",
            "endless or far_ahead or garbage or unreadable",
        ],
        ["tests/llm/test_cache.py", "-k", "bad_entries_are_misses"],
        ["tests/testing/test_server.py", "-k", "bad_requests_name_the_field"],
        ["tests/payloads/test_store.py", "-k", "symlink or hostile_lines"],
    ],
    "6 secrets and terminal safety": [
        ["tests/test_hidden_secrets.py"],
        ["tests/reporting/test_hidden_characters.py"],
        ["tests/unit/test_text.py", "-k", "escape_hidden_json"],
        ["tests/unit/test_redact.py"],
        ["tests/unit/test_planted.py"],
        ["tests/limits/unit/test_atomic_rate.py", "-k", "password"],
    ],
    "7 messages a new user understands": [
        ["tests/pytest_plugin/test_trials.py", "-k", "GroupVerdict or names_counts_and_clones"],
        ["tests/cli/test_report.py", "-k", "groups_mode"],
        ["tests/cli/test_diff.py", "-k", "exactly_two_runs"],
        ["tests/pytest_plugin/test_progress.py", "-k", "Retrying"],
        ["tests/limits/unit/test_limiter_core.py", "-k", "RetryNote"],
        ["tests/test_docs.py", "-k", "install_every_extra"],
    ],
    # Each selection below is one bad input, on asyncio and trio where it is async.
    "8 a learned rate over hours (fake clock)": [
        ["tests/limits/unit/test_long_campaign.py"],
    ],
    "9 damaged shared state never turns pacing off": [
        ["tests/limits/unit/test_damaged_state.py"],
    ],
    "10 a skip in one clone's fixture hides nothing": [
        ["tests/pytest_plugin/test_clone_fixture_outcomes.py"],
    ],
    "11 the test server's work per request is bounded": [
        ["tests/testing/unit/test_bounded_work.py"],
        ["tests/testing/test_server_bounds.py"],
    ],
    "12 AgentDojo, scans and sweep under hostile input": [
        ["tests/agentdojo/test_hostile_pipelines.py"],
        [
            "tests/agentdojo/test_scan.py",
            "-k",
            "resuming or hangs or hostile_settings or shards or timeout",
        ],
        ["tests/cli/test_scan_xpia.py", "-k", "resuming or hostile_settings or bad_option"],
        ["tests/cli/test_sweep.py", "-k", "Hostile"],
    ],
}


def _run(selection: list[str], junit: Path) -> tuple[int, int]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *selection]
    command += [f"--junitxml={junit}"]
    subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if not junit.exists():
        return 0, 0
    tried = held = 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = {child.tag for child in case}
        if "skipped" in outcome:
            continue
        tried += 1
        held += not ({"failure", "error"} & outcome)
    return tried, held


def main() -> None:
    wanted = set(sys.argv[1:])
    print(f"bad inputs by area (load average {os.getloadavg()[0]:.2f})")
    print(f"{'area':<52} {'tried':>6} {'held':>6}")
    totals: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for number, (area, selections) in enumerate(AREAS.items()):
            if wanted and area.split()[0] not in wanted:
                continue
            tried = held = 0
            for index, selection in enumerate(selections):
                got = _run(selection, Path(tmp, f"{number}-{index}.xml"))
                tried, held = tried + got[0], held + got[1]
            totals["tried"] += tried
            totals["held"] += held
            print(f"{area:<52} {tried:>6} {held:>6}")
    print(f"{'all':<52} {totals['tried']:>6} {totals['held']:>6}")


if __name__ == "__main__":
    main()
