"""Real pytest runs in a subprocess, for tests that send real signals.

Each run gets its own session (process group), so a SIGINT reaches it and its xdist
workers as a terminal's Ctrl-C would, and never the outer test run. The harness never
times anything: it waits for a marker the run writes (a file, journal lines) before
it signals. ``GUARD_SECONDS`` only keeps a broken run from hanging the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from tests.pytest_plugin.conftest import NO_ASYNCIO

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

GUARD_SECONDS = 180.0


@contextlib.contextmanager
def _sigint_not_ignored() -> Iterator[None]:
    """Start the run with Ctrl-C's default meaning, whatever this process was given.

    A suite started in the background by a non-interactive shell (``make test &``,
    ``nohup``) ignores SIGINT, and an ignored signal stays ignored across ``exec``:
    the run would never see the test's Ctrl-C. A handler, unlike "ignore", is reset
    to the default in the child, and Python there turns SIGINT into KeyboardInterrupt.
    """
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class PytestProcess:
    """A ``python -m pytest`` subprocess in ``directory`` (its own process group)."""

    def __init__(self, directory: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.directory = directory
        self._log = directory / "pytest-output.txt"
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        environment.update(env or {})
        command = [sys.executable, "-m", "pytest", *NO_ASYNCIO, "-q", *args]
        with self._log.open("w") as log, _sigint_not_ignored():
            self.process = subprocess.Popen(
                command,
                cwd=directory,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=environment,
                start_new_session=True,
            )

    def output(self) -> str:
        return self._log.read_text(errors="replace")

    def wait_until(self, condition: Callable[[], bool], what: str) -> None:
        """Poll ``condition`` until it holds; fail if the run ends first (or never does)."""
        deadline = time.monotonic() + GUARD_SECONDS
        while not condition():
            if self.process.poll() is not None:
                raise AssertionError(f"the run ended before {what}:\n{self.output()}")
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"gave up waiting for {what}:\n{self.output()}")
            time.sleep(0.05)

    def interrupt(self) -> None:
        """SIGINT to the whole process group, as Ctrl-C in a terminal sends it."""
        os.killpg(self.process.pid, signal.SIGINT)

    def kill(self) -> None:
        """SIGKILL to the whole process group."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)

    def finish(self) -> tuple[int, str]:
        """Wait for the run to end; its exit status and output."""
        try:
            status = self.process.wait(timeout=GUARD_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()
            self.process.wait()
            raise AssertionError(f"the run did not end:\n{self.output()}") from None
        return status, self.output()


def journal_files(directory: Path) -> list[Path]:
    """The run journals under ``directory``'s default journal location."""
    return sorted((directory / ".rampart" / "journal").glob("rampart-journal-*.jsonl"))


def journal_lines(directory: Path) -> list[bytes]:
    """Every complete line of every journal under ``directory`` (a torn tail excluded)."""
    lines: list[bytes] = []
    for path in journal_files(directory):
        data = path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        lines.extend(line for line in complete.split(b"\n") if line)
    return lines


def journal_keys(directory: Path) -> list[dict[str, Any]]:
    """The ``_rampart_journal`` bookkeeping of every complete journal line."""
    return [
        json.loads(line)["result"]["metadata"]["_rampart_journal"]
        for line in journal_lines(directory)
    ]
