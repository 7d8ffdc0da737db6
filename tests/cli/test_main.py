"""The ``rampart`` command itself: entry points, help, usage errors, import cost."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli._cli import run_main, run_process

COMMANDS = ("validate", "report", "diff", "history", "rescore", "sweep")


def test_python_dash_m_rampart() -> None:
    """``python -m rampart`` is the same command line as the ``rampart`` script."""
    completed = subprocess.run(
        [sys.executable, "-m", "rampart", "--help"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 0
    assert completed.stdout.startswith("usage: rampart [-h] [--version] COMMAND ...")
    for command in COMMANDS:
        assert f"    {command} " in completed.stdout


def test_version() -> None:
    from rampart import __version__

    outcome = run_process("--version")
    assert (outcome.status, outcome.out) == (0, f"rampart {__version__}\n")


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_main(capsys, command, "--help")
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: rampart {command} ")


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_main(capsys)
    assert exit_info.value.code == 2
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err


def test_unknown_command() -> None:
    outcome = run_process("frobnicate")
    assert outcome.status == 2
    assert "invalid choice: 'frobnicate'" in outcome.err


def test_import_rampart_does_not_load_the_command_line() -> None:
    """The command line is its own package: ``import rampart`` never pays for it."""
    code = (
        "import sys, rampart; print(sorted(m for m in sys.modules if m.startswith('rampart.cli')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_help_loads_no_heavy_dependency() -> None:
    """``rampart --help`` imports neither jsonschema nor cattrs nor the engine."""
    code = (
        "import sys\n"
        "from rampart.cli._main import build_parser\n"
        "build_parser()\n"
        "print(sorted(m for m in ('jsonschema', 'cattrs', 'anyio', 'httpx', 'matplotlib', "
        "'rampart.engine') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
