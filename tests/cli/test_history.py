"""``rampart history``: five runs of the demo suite (``examples/``), the last with an
injected regression, which the change-point test names; its JSON and HTML forms.

The suite is the repository's own example suite, copied and run for real (a pytest
subprocess per run, into one ``--rampart-report-dir``). The regression: from the
fifth run on, the ``hardened`` agent of the 50-clone trial group follows injected
instructions 30 % of the time (it follows none before).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.cli._cli import run_main, run_process

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GROUP = "test_red_team.py::test_trial_group_resists_exfiltration[hardened]"
HARDENED = "@pytest.fixture(params=[0.3, 0.0], ids=["
REGRESSED = "@pytest.fixture(params=[0.3, 0.3], ids=["


def _run_demo(suite: Path, out: Path) -> None:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "test_red_team.py",
            "-p",
            "no:asyncio",
            "-q",
            "--tb=no",
            f"--rampart-report-dir={out}",
        ],
        cwd=suite,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    assert completed.returncode in (0, 1), completed.stdout + completed.stderr


@pytest.fixture(scope="module")
def demo_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five demo runs in one report directory, the fifth with the regression."""
    root = tmp_path_factory.mktemp("demo_history")
    suite = root / "examples"
    shutil.copytree(EXAMPLES, suite, ignore=shutil.ignore_patterns("__pycache__"))
    out = root / "report"
    module = suite / "test_red_team.py"
    source = module.read_text(encoding="utf-8")
    assert HARDENED in source  # the regression below edits the demo's hardened agent
    for _ in range(4):
        _run_demo(suite, out)
    module.write_text(source.replace(HARDENED, REGRESSED), encoding="utf-8")
    _run_demo(suite, out)
    assert len(list(out.glob("run_report_*.json"))) == 5
    return out


def test_history_names_the_injected_regression(
    demo_history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outcome = run_main(capsys, "history", demo_history)
    assert outcome.status == 1, outcome.out  # a significant regression: CI can gate
    lines = outcome.lines
    assert lines[0].startswith("rampart history: 5 runs, ")
    regressed = [line for line in lines if line.startswith("REGRESSED ")]
    assert len(regressed) == 1, outcome.out
    assert regressed[0].startswith(f"REGRESSED {GROUP}: pass rate 200/200 (100%) in runs 1-4, ")
    assert " since run 5 (started " in regressed[0]
    assert "one-sided Fisher p = " in regressed[0]
    assert ", x4 splits = " in regressed[0]
    row = next(line for line in lines if line.strip().startswith(f"{GROUP} (group)"))
    assert " PPPPF " in row
    assert row.rstrip().endswith("REGRESSED")
    assert f"  {GROUP}: PASSED -> FAILED in run 5" in lines
    assert lines[-1] == "1 significant regression (alpha 0.05)"
    # A test that always failed is a finding every run, never a regression.
    always = next(
        line
        for line in lines
        if "test_inline_xpia_attachment[vulnerable]" in line and "FFFFF" in line
    )
    assert "REGRESSED" not in always


def test_history_json_states_the_test(demo_history: Path) -> None:
    outcome = run_process("history", demo_history, "--json")
    assert outcome.status == 1, outcome.err
    data = json.loads(outcome.out)
    assert data["schema"] == "rampart.history.v1"
    assert data["regressions"] == [GROUP]
    started = [run["started_at"] for run in data["runs"]]
    assert started == sorted(started)
    assert len(started) == 5
    (group,) = (s for s in data["series"] if s["nodeid"] == GROUP)
    assert group["kind"] == "group"
    assert group["verdicts"] == "PPPPF"
    change = group["change"]
    assert change["since_run"] == 5
    assert change["before"] == {"safe": 200, "executed": 200}
    assert change["after"]["executed"] == 50
    assert change["after"]["safe"] < 45
    assert change["p_bonferroni"] == pytest.approx(min(1.0, 4 * change["p_value"]))
    assert change["p_adjusted"] < data["alpha"]
    low, high = group["interval"]
    assert low < group["pass_rate"] < high
    # --last 4: the four runs before the regression show none.
    calm = run_process("history", demo_history, "--json", "--last", "4")
    assert calm.status == 1  # the window still ends with the regressed run
    before = run_process("history", *sorted(demo_history.glob("run_report_*.json"))[:4], "--json")
    assert before.status == 0, before.out
    assert json.loads(before.out)["regressions"] == []


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        del attrs
        self.scripts += tag == "script"

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def test_history_html_page(
    demo_history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = tmp_path / "history.html"
    outcome = run_main(capsys, "history", demo_history, "--html", page, "--changed")
    assert outcome.status == 1
    assert outcome.lines[-1] == f"wrote {page}"
    parser = _Cells()
    parser.feed(page.read_text(encoding="utf-8"))
    text = " ".join(parser.text)
    assert parser.scripts == 0
    assert "rampart history: 5 runs" in text
    assert f"{GROUP}: pass rate 200/200 (100%) in runs 1-4" in text
    assert "1 significant regression" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "0"], "--alpha must be a number between 0 and 1, got 0.0"),
        (["--last", "1"], "--last must be an integer of at least 2 (runs to compare), got 1"),
    ],
)
def test_history_rejects_bad_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    outcome = run_main(capsys, "history", tmp_path, *args)
    assert outcome.status == 2
    assert outcome.err == f"rampart history: error: {message}\n"


def test_history_of_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outcome = run_main(capsys, "history", tmp_path)
    assert outcome.status == 2
    assert outcome.err.startswith(f"rampart history: error: {tmp_path}: no saved run in it")
