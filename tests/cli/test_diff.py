"""``rampart diff``: verdict flips and group pass-rate moves, noise not called a regression."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.cli._cli import run_main, run_process

if TYPE_CHECKING:
    from pathlib import Path

    from tests.cli.conftest import SavedRuns


class TestRegression:
    def test_a_real_regression_exits_1(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The single attack became UNSAFE (one run: a new finding, not significant) and
        the group fell from 30/30 to 7/30 SAFE (significant): one regression under the one
        rule the output states, exit status 1 (a JSON report against a trace)."""
        old, new = saved_runs.hardened.trace, saved_runs.regressed.report
        outcome = run_main(capsys, "diff", old, new)
        assert outcome.status == 1
        assert outcome.lines[:6] == [
            f"rampart diff {old} -> {new}",
            "",
            "Tests (1 changed):",
            "  test                               old   new     change",
            "  ---------------------------------  ----  ------  ------------------------------------",
            "  test_suite.py::test_inline_attack  SAFE  UNSAFE  new finding (1 run: not significant)",
        ]
        assert outcome.lines[6:9] == [
            "",
            "Trial groups (1 moved):",
            "  group                      old                  new                pass rate  "
            "p (one-sided Fisher)      change",
        ]
        assert outcome.lines[10].startswith(
            "  test_suite.py::test_group  30/30 (100%) passed  7/30 (23%) failed  -76.7 pts  8.71e-11 (Holm"
        )
        assert outcome.lines[10].endswith("regressed")
        assert outcome.lines[-2] == (
            "rule: a test or trial group regressed when its pass rate (SAFE / runs) fell with "
            "a one-sided Fisher exact p below alpha 0.05, Holm-adjusted over the 3 tests and "
            "groups compared; a test that is not a trial group is one run, so its flip alone is "
            "never significant (make it a trial group; --strict counts such flips)"
        )
        assert outcome.lines[-1] == "1 significant regression (alpha 0.05)"
        strict = run_main(capsys, "diff", old, new, "--strict")
        assert strict.lines[-1] == "2 significant regressions (alpha 0.05)"

    def test_json(self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]) -> None:
        outcome = run_main(
            capsys, "diff", saved_runs.hardened.report, saved_runs.regressed.trace, "--json"
        )
        assert outcome.status == 1
        comparison = json.loads(outcome.out)
        assert comparison["regressions"] == 1
        assert comparison["rule"].startswith("rule: a test or trial group regressed when")
        changes = {test["nodeid"]: test["change"] for test in comparison["tests"]}
        assert changes == {
            "test_suite.py::test_always_safe": "unchanged",
            "test_suite.py::test_inline_attack": "new finding (1 run: not significant)",
        }
        (group,) = comparison["groups"]
        assert group["old"]["safe"] == 30
        assert group["new"]["safe"] == 7
        assert group["significant"] is True
        assert group["p_value"] < 1e-9

    def test_installed_script_exit_status(self, saved_runs: SavedRuns) -> None:
        """CI runs the script: its exit status is the gate."""
        assert (
            run_process("diff", saved_runs.hardened.trace, saved_runs.regressed.trace).status == 1
        )
        assert (
            run_process("diff", saved_runs.regressed.trace, saved_runs.hardened.trace).status == 0
        )


class TestNoise:
    def test_one_unsafe_clone_in_30_is_not_a_regression(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The group's verdict flipped (one UNSAFE clone fails it) but 29/30 against 30/30
        is what chance gives (p = 0.5): shown, not called a regression; exit 0."""
        outcome = run_main(
            capsys, "diff", saved_runs.hardened.trace, saved_runs.noisy.trace, "--json"
        )
        assert outcome.status == 0
        (group,) = json.loads(outcome.out)["groups"]
        assert (group["old"]["verdict"], group["new"]["verdict"]) == ("passed", "failed")
        assert group["p_value"] == pytest.approx(0.5)
        assert group["change"] == "moved (not significant)"

    def test_improvements_are_not_regressions(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]
    ) -> None:
        outcome = run_main(
            capsys, "diff", saved_runs.regressed.trace, saved_runs.hardened.trace, "--json"
        )
        comparison = json.loads(outcome.out)
        assert outcome.status == 0
        assert [g["change"] for g in comparison["groups"]] == ["improved"]
        assert "improved" in [t["change"] for t in comparison["tests"]]

    def test_a_run_against_itself(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]
    ) -> None:
        outcome = run_main(capsys, "diff", saved_runs.noisy.report, saved_runs.noisy.trace)
        assert outcome.status == 0
        assert "Tests: no verdict changed" in outcome.lines
        assert "Trial groups: no pass rate moved" in outcome.lines
        assert outcome.lines[-1] == "no significant regression (alpha 0.05)"


class TestOptions:
    @pytest.fixture
    def undetermined(self, saved_runs: SavedRuns, tmp_path: Path) -> Path:
        """The hardened trace with the single attack's record made UNDETERMINED."""
        lines = saved_runs.hardened.trace.read_text(encoding="utf-8").split("\n")
        for index, line in enumerate(lines):
            if "test_inline_attack" in line:
                lines[index] = line.replace('"status":"safe"', '"status":"undetermined"', 1)
        path = tmp_path / "undetermined.jsonl"
        path.write_text("\n".join(lines), encoding="utf-8")
        return path

    def test_strict_counts_safe_to_undetermined(
        self,
        saved_runs: SavedRuns,
        undetermined: Path,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        lenient = run_main(capsys, "diff", saved_runs.hardened.trace, undetermined, "--json")
        assert lenient.status == 0
        assert "changed" in [t["change"] for t in json.loads(lenient.out)["tests"]]
        strict = run_main(
            capsys, "diff", saved_runs.hardened.trace, undetermined, "--strict", "--json"
        )
        assert strict.status == 1

    def test_alpha_must_be_a_probability(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str]
    ) -> None:
        trace = saved_runs.hardened.trace
        outcome = run_main(capsys, "diff", trace, trace, "--alpha", "1.5")
        assert (outcome.status, outcome.err) == (
            2,
            "rampart diff: error: --alpha must be a number between 0 and 1, got 1.5\n",
        )

    def test_missing_new_run(
        self, saved_runs: SavedRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        outcome = run_main(capsys, "diff", saved_runs.hardened.trace, tmp_path / "x.jsonl")
        assert outcome.status == 2
        assert outcome.err == f"rampart diff: error: {tmp_path / 'x.jsonl'}: no such file\n"

    @pytest.mark.parametrize("count", [1, 3])
    def test_diff_takes_exactly_two_runs(
        self, saved_runs: SavedRuns, capsys: pytest.CaptureFixture[str], count: int
    ) -> None:
        """Three files (merged shards, say), or one file, get a sentence, not the
        top-level usage."""
        outcome = run_main(capsys, "diff", *[saved_runs.hardened.trace] * count)
        assert outcome.status == 2
        assert outcome.err.startswith(
            "rampart diff: error: diff takes two runs (OLD NEW) or one report directory "
            f"(its two latest runs), got {count} paths; "
        )
        assert "rampart report SHARD... --merge --json merged.json" in outcome.err
