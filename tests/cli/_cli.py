"""Running the command line in-process (``main``) and as a real ``rampart`` process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from rampart import reporting
from rampart.cli import main

# The report's model loads lazily. Loaded first inside a pytester in-process run, its
# modules are dropped from sys.modules when that run ends, while the package keeps the
# classes it cached: the command would then build groups from a reloaded module and
# check them against the cached class. Loading it here, before any run, keeps one copy.
reporting.TestRunReport, reporting.TrialGroupSummary  # noqa: B018

if TYPE_CHECKING:
    import pytest

RAMPART = Path(sys.executable).with_name("rampart")


@attrs.frozen
class Outcome:
    status: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


def run_main(capsys: pytest.CaptureFixture[str], *args: object) -> Outcome:
    """``rampart ARGS`` in this process."""
    status = main([str(arg) for arg in args])
    captured = capsys.readouterr()
    return Outcome(status, captured.out, captured.err)


def run_process(
    *args: object, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Outcome:
    """``rampart ARGS`` as the installed console script, in a fresh process."""
    completed = subprocess.run(
        [str(RAMPART), *(str(arg) for arg in args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=300,
    )
    return Outcome(completed.returncode, completed.stdout, completed.stderr)


def run_scan_process(
    tmp_path: Path, *, module: Path, plugin: str, settings: dict[str, str]
) -> Outcome:
    """A scan's pytest run as ``rampart scan`` starts it (``_scan.pytest_arguments``,
    a private seam: no public one starts it without the command's own checks), in a
    process of its own, only collecting, with hand-written settings variables in its
    environment."""
    from rampart.cli._scan import SCAN_ENVIRONMENT, pytest_arguments

    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\n")
    arguments = [*pytest_arguments(module, plugin, ini), "--collect-only", "-q"]
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", *arguments],
        capture_output=True,
        text=True,
        env={**os.environ, **SCAN_ENVIRONMENT, **settings},
        check=False,
        timeout=600,
    )
    return Outcome(completed.returncode, completed.stdout, completed.stderr)
