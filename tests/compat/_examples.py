"""RAMPART's public example repository (microsoft/rampart-examples), exported at run time.

Its code stays in its own repository: tests and benchmarks export the part they need from
a local clone into a temporary directory and run it there, unchanged. The clone is
``$RAMPART_EXAMPLES_GIT`` (bare or not), by default the mirror this project's CI keeps.
A missing clone is a failure that says how to get one, never a skip.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

EXAMPLES_GIT_VARIABLE = "RAMPART_EXAMPLES_GIT"
DEFAULT_EXAMPLES_GIT = Path("/work/.mirror/microsoft+rampart-examples/repo")


def examples_git() -> Path:
    """The clone of microsoft/rampart-examples to export from."""
    configured = os.environ.get(EXAMPLES_GIT_VARIABLE)
    clone = Path(configured) if configured else DEFAULT_EXAMPLES_GIT
    if not clone.exists():
        raise FileNotFoundError(
            f"no clone of microsoft/rampart-examples at {clone} "
            f"({EXAMPLES_GIT_VARIABLE}={configured!r}): get one with "
            f"`git clone --bare https://github.com/microsoft/rampart-examples.git {clone}`, "
            f"or set {EXAMPLES_GIT_VARIABLE} to an existing clone (bare or not)"
        )
    return clone


def export_helpdesk_bot(destination: Path) -> Path:
    """Write the ``helpdesk-bot`` demo of the clone's HEAD into ``destination`` (its
    ``pyproject.toml`` at the top, as after ``cd helpdesk-bot``) and return it.

    ``destination`` is made a git repository of its own, so that ``git apply`` of the
    demo's ``mitigation.patch`` patches it even when it lies inside another work tree.
    """
    archive = subprocess.run(
        ["git", "-C", str(examples_git()), "archive", "--format=tar", "HEAD:helpdesk-bot"],
        check=True,
        capture_output=True,
    ).stdout
    destination.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(destination, filter="data")
    subprocess.run(["git", "init", "-q", str(destination)], check=True)
    return destination


def apply_mitigation(demo: Path) -> None:
    """Apply the demo's ``mitigation.patch`` with ``git apply``, as its README says."""
    subprocess.run(["git", "apply", "mitigation.patch"], cwd=demo, check=True)
