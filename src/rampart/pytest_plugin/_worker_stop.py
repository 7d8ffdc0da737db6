"""SIGINT to the xdist controller stops its workers.

A Ctrl-C typed in a terminal reaches every process of the run (the controller and its
workers share the terminal's process group); a SIGINT sent to the controller alone
(``kill -INT``, a CI runner stopping the job's main process) does not. Left alone, the
workers would carry on running trials until xdist tears them down (execnet interrupts
a worker some seconds after telling it to exit, and kills it later still).

Each worker writes its pid in a directory the controller hands it
(``workerinput[WORKERS_KEY]``), and a marker once it is interrupted (``announce``).
At its own first Ctrl-C the controller (``WorkerStops.stop``) waits, at most
``GRACE_SECONDS``, for each worker to be interrupted (the Ctrl-C reached it too) or to
end, then sends SIGINT to the others: they stop as at a Ctrl-C (clones cut short,
what finished journaled) and the run ends interrupted. The wait keeps a worker that
the terminal's Ctrl-C reached from taking a second SIGINT while it unwinds from the
first (a second SIGINT ends a process at once, see ``_interrupts``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["GRACE_SECONDS", "WORKERS_KEY", "WorkerStops", "announce"]

#: The ``workerinput`` key of the directory workers announce themselves in.
WORKERS_KEY = "rampart_workers_dir"

#: How long the controller waits for a worker a Ctrl-C may have reached too.
GRACE_SECONDS = 2.0

_POLL_SECONDS = 0.05


def announce(workerinput: dict[str, Any]) -> Callable[[], None] | None:
    """On a worker: write its pid where the controller looks; the callback that marks
    it interrupted (``None`` when the controller handed no directory)."""
    directory, worker = workerinput.get(WORKERS_KEY), workerinput.get("workerid")
    if not isinstance(directory, str) or not isinstance(worker, str):
        return None
    base = Path(directory) / worker
    try:
        base.with_suffix(".pid").write_text(str(os.getpid()), encoding="ascii")
    except OSError:
        return None  # best effort: xdist still tears the worker down

    def interrupted() -> None:
        with contextlib.suppress(OSError):
            base.with_suffix(".interrupted").touch()

    return interrupted


class WorkerStops:
    """The controller's side: the directory, and stopping the workers (see above)."""

    def __init__(self) -> None:
        self._directory: Path | None = None

    def directory(self) -> str:
        """The directory workers announce themselves in (made on first use)."""
        if self._directory is None:
            self._directory = Path(tempfile.mkdtemp(prefix="rampart-workers-"))
        return str(self._directory)

    def stop(self) -> list[int]:
        """Interrupt every worker still running that no Ctrl-C reached; their pids."""
        if self._directory is None:
            return []
        running = self._running()
        deadline = time.monotonic() + GRACE_SECONDS
        while running and time.monotonic() < deadline:
            time.sleep(_POLL_SECONDS)
            running = self._running()
        stopped = []
        for pid in running.values():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGINT)
                stopped.append(pid)
        return stopped

    def _running(self) -> dict[str, int]:
        """Workers alive and not interrupted, by id."""
        assert self._directory is not None
        found = {}
        for path in self._directory.glob("*.pid"):
            if path.with_suffix(".interrupted").exists():
                continue
            try:
                pid = int(path.read_text(encoding="ascii"))
            except (OSError, ValueError):
                continue
            if _alive(pid):
                found[path.stem] = pid
        return found

    def close(self) -> None:
        """Remove the directory (at unconfigure)."""
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


def _alive(pid: int) -> bool:
    """The process runs (a worker that ended but is not reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: ask the process itself
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    # ``pid (name) state ...``: the state follows the last ")".
    return stat.rpartition(")")[2].split()[:1] not in (["Z"], ["X"])
