"""Saved runs of a real pytest session, shared by the command line's tests."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from tests.cli._suite import run_suite, write_suite


@attrs.frozen
class Saved:
    report: Path
    trace: Path
    terminal: str

    def summary_lines(self) -> list[str]:
        """The run's own terminal safety summary (pytest's), without its separator."""
        lines = self.terminal.splitlines()
        start = next(i for i, line in enumerate(lines) if "RAMPART Safety Summary" in line)
        end = next(i for i, line in enumerate(lines) if line.startswith("Population: "))
        return lines[start + 1 : end + 1]


@attrs.frozen
class SavedRuns:
    """``hardened``: every test passes (32 SAFE results); ``regressed``: the single attack
    fails and the group's agent follows injections 60 % of the time; ``noisy``: as
    hardened, but one clone of the group is UNSAFE (its agent follows 10 %)."""

    suite: Path
    hardened: Saved
    regressed: Saved
    noisy: Saved


@pytest.fixture(scope="session")
def saved_runs(tmp_path_factory: pytest.TempPathFactory) -> SavedRuns:
    root = tmp_path_factory.mktemp("saved_runs")
    suite = write_suite(root / "suite")
    hardened = Saved(*run_suite(suite, root / "hardened", single=0.0, group=0.0))
    regressed = Saved(*run_suite(suite, root / "regressed", single=1.0, group=0.6))
    noisy = Saved(*run_suite(suite, root / "noisy", single=0.0, group=0.1))
    return SavedRuns(suite=suite, hardened=hardened, regressed=regressed, noisy=noisy)
