"""Output paths the user names are regular files or new files, in an existing folder.

``rampart report --json/--html OUT`` replaced a FIFO or a character device by a regular
file (as root, ``/dev/full`` became a file) and created a missing parent folder
silently. Now anything that is not a regular file is refused with a clear error and
left alone, and a missing folder is an error; ``rescore --output`` follows the same rule.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from rampart.codec import ResultRecord, serialize_record
from rampart.core.result import Result, SafetyStatus
from tests.cli._cli import run_main

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs are POSIX")


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    result = Result(status=SafetyStatus.SAFE, summary="ok", strategy="probe")
    path = tmp_path / "traces.jsonl"
    path.write_text(serialize_record(record=ResultRecord(result=result)) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_a_fifo_is_refused_and_left_alone(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    outcome = run_main(capsys, "report", trace, option, fifo, "-q")
    assert outcome.status == 2
    assert f"{fifo}: is a FIFO, not a regular file" in outcome.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_nothing_is_written_when_one_output_is_refused(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    html = tmp_path / "run.html"
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    outcome = run_main(capsys, "report", trace, "--html", html, "--json", fifo, "-q")
    assert outcome.status == 2
    assert not html.exists()


def test_a_directory_is_refused(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "folder"
    target.mkdir()
    outcome = run_main(capsys, "report", trace, "--json", target, "-q")
    assert outcome.status == 2
    assert f"{target}: is a directory, not a regular file" in outcome.err
    assert target.is_dir()


def test_a_missing_folder_is_an_error_not_created(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "report.json"
    outcome = run_main(capsys, "report", trace, "--json", target, "-q")
    assert outcome.status == 2
    assert f"{target}: the folder {target.parent} does not exist" in outcome.err
    assert not target.parent.exists()


def test_a_regular_file_is_replaced_and_a_link_writes_its_target(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = tmp_path / "old.json"
    existing.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(existing)
    assert run_main(capsys, "report", trace, "--json", existing, "-q").status == 0
    assert '"total_runs"' in existing.read_text(encoding="utf-8")
    existing.write_text("old", encoding="utf-8")
    assert run_main(capsys, "report", trace, "--json", link, "-q").status == 0
    assert link.is_symlink()
    assert '"total_runs"' in existing.read_text(encoding="utf-8")


def test_rescore_output_in_a_missing_folder_is_an_error(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "rescored.jsonl"
    outcome = run_main(
        capsys, "rescore", trace, "--evaluator", "rampart.evaluators:ToolCalled", "--output", target
    )
    assert outcome.status == 2
    assert f"--output: the folder {target.parent} does not exist" in outcome.err
    assert not target.parent.exists()


def _character_device(tmp_path: Path) -> Path:
    """A character device to write to: a private copy of ``/dev/null`` where this
    process may create one (as root), else ``/dev/null`` itself."""
    device = tmp_path / "null-device"
    try:
        os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        return Path("/dev/null")
    return device


@pytest.mark.parametrize("option", ["--json", "--html"])
def test_a_character_device_is_refused_and_left_alone(
    trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    """``--json /dev/full`` as root became a regular file through the rename; a
    character device is refused and stays a device."""
    device = _character_device(tmp_path)
    outcome = run_main(capsys, "report", trace, option, device, "-q")
    assert outcome.status == 2
    assert f"{device}: is a character device, not a regular file" in outcome.err
    assert stat.S_ISCHR(os.lstat(device).st_mode)
