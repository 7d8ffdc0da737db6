"""Where live progress goes in a run: the terminal here, or (under xdist) the controller's.

``ProgressSession`` is registered in the reporting process. At session start it decides
the mode (``_progress.progress_mode``) and makes the ``ProgressDisplay``; in a single
process the item hooks feed it directly.

Under ``pytest -n N`` the clones run on the workers, which cannot write to the
controller's terminal. The controller hands each worker a directory
(``workerinput[PROGRESS_DIR_KEY]``); a worker's ``ProgressFileSink`` keeps the snapshot of
its running group in a file there (replaced atomically, at most every
``EMIT_INTERVAL`` s); a thread on the controller polls the files and passes new snapshots
to xdist's own event queue, so the display draws them on the main thread, between
xdist's other events. A group is finished on the controller when its test report
arrives. If xdist's event queue is not where this expects it, progress under xdist is
silently off (the run itself is unaffected).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest

from rampart.pytest_plugin._progress import (
    ProgressDisplay,
    ProgressHooks,
    Snapshot,
    progress_mode,
)

__all__ = [
    "PROGRESS_DIR_KEY",
    "ProgressFileSink",
    "ProgressNodes",
    "ProgressSession",
    "worker_progress",
]

PROGRESS_DIR_KEY = "rampart_progress_dir"
_EVENT = "rampart_progress"
_POLL_SECONDS = 0.2


class ProgressFileSink:
    """On an xdist worker: the running group's latest snapshot, in this worker's file."""

    def __init__(self, directory: str, worker: str) -> None:
        self._path = Path(directory) / f"{worker}.json"
        self._temp = Path(directory) / f".{worker}.json.tmp"

    def update(self, snapshot: Snapshot) -> None:
        try:
            self._temp.write_text(json.dumps(snapshot.to_json()), encoding="utf-8")
            os.replace(self._temp, self._path)
        except OSError:
            pass  # progress is best effort; the results travel on the test reports


def worker_progress(config: pytest.Config) -> ProgressHooks | None:
    """The item hooks of a worker whose controller shows progress (None otherwise)."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    directory = workerinput.get(PROGRESS_DIR_KEY)
    worker = workerinput.get("workerid")
    if not isinstance(directory, str) or not isinstance(worker, str):
        return None
    return ProgressHooks(ProgressFileSink(directory, worker), worker=worker)


class ProgressSession:
    """The reporting process's side of live progress (see the module docstring)."""

    def __init__(self, config: pytest.Config, *, option: str, interval: float) -> None:
        self._config = config
        self._option = option
        self._interval = interval
        self._mode: str | None = None
        self.hooks = ProgressHooks()
        self.display: ProgressDisplay | None = None
        self._directory: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _resolve(self) -> ProgressDisplay | None:
        if self._mode is None:
            self._mode = progress_mode(self._config, self._option)
            if self._mode != "off":
                reporter = self._config.pluginmanager.get_plugin("terminalreporter")
                self.display = ProgressDisplay(
                    reporter,
                    live=self._mode == "live",
                    interval=self._interval,
                    distributed=self._config.pluginmanager.has_plugin("dsession"),
                    capture=self._config.pluginmanager.get_plugin("capturemanager"),
                )
                self.hooks.sink = self.display
        return self.display

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        del session
        self._resolve()

    def _start_polling(self) -> None:
        """Poll the workers' files; show what changed through xdist's event queue."""
        dsession = self._config.pluginmanager.get_plugin("dsession")
        events = getattr(dsession, "queue", None)
        if events is None or not hasattr(events, "put"):
            return
        # xdist calls worker_<event>(**kwargs) on its main loop for each queued event.
        setattr(dsession, f"worker_{_EVENT}", self._show)
        self._thread = threading.Thread(
            target=self._poll, args=(events,), name="rampart-progress", daemon=True
        )
        self._thread.start()

    def _show(self, snapshots: list[Snapshot]) -> None:
        if self.display is not None:
            for snapshot in snapshots:
                self.display.update(snapshot)

    def _poll(self, events: Any) -> None:
        assert self._directory is not None
        seen: dict[str, tuple[int, int]] = {}
        directory = Path(self._directory)
        while not self._stop.wait(_POLL_SECONDS):
            fresh = []
            for path in directory.glob("*.json"):
                try:
                    stat = path.stat()
                    stamp = (stat.st_mtime_ns, stat.st_size)
                    if seen.get(path.name) == stamp:
                        continue
                    seen[path.name] = stamp
                    snapshot = Snapshot.from_json(json.loads(path.read_text(encoding="utf-8")))
                except (OSError, ValueError):
                    continue
                if snapshot is not None:
                    fresh.append(snapshot)
            if fresh:
                events.put((_EVENT, {"snapshots": fresh}))

    def worker_directory(self) -> str | None:
        """The directory workers write their progress to (made on first use); None when
        progress is off."""
        if self._resolve() is None:
            return None
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix="rampart-progress-")
            self._start_polling()
        return self._directory

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Before the terminal writes a worker's report: finish that worker's group (with
        its final snapshot, read now), or move our lines out of the way."""
        node = getattr(report, "node", None)
        display = self.display
        if node is None or display is None:
            return
        worker = str(getattr(getattr(node, "gateway", None), "id", "?"))
        key = f"{worker}:{report.nodeid}"
        if report.when == "call" and display.is_active(key):
            final = self._read(worker)
            if final is not None and final.key == key:
                display.update(final)
            display.finish_key(key, report.nodeid)
        else:
            display.interrupt()

    def _read(self, worker: str) -> Snapshot | None:
        if self._directory is None:
            return None
        try:
            text = (Path(self._directory) / f"{worker}.json").read_text(encoding="utf-8")
            return Snapshot.from_json(json.loads(text))
        except (OSError, ValueError):
            return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def pytest_unconfigure(self) -> None:
        if self._directory is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._directory, ignore_errors=True)


class ProgressNodes:
    """xdist's node hook, registered apart: pytest rejects unknown ``pytest_*`` hooks,
    and this one exists only when xdist is loaded."""

    def __init__(self, session: ProgressSession) -> None:
        self._session = session

    def pytest_configure_node(self, node: Any) -> None:
        directory = self._session.worker_directory()
        if directory is not None:
            node.workerinput[PROGRESS_DIR_KEY] = directory
