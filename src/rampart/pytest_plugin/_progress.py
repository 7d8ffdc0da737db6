"""Live progress of trial groups: how far each running group is, on the terminal.

A trial group runs inside one pytest item, so pytest itself shows nothing until all its
clones are done. ``GroupTracker`` counts the clones as they finish (the runner calls it
once per clone) and hands a ``Snapshot`` (done / n, statuses so far, elapsed time) to a
sink, at most every ``EMIT_INTERVAL`` seconds plus once at the end:

- in the reporting process, ``ProgressDisplay``, which draws it;
- on an xdist worker, a file the controller polls (``ProgressFileSink``), whose display
  draws every worker's groups.

``ProgressDisplay`` keeps one updating line per running group on a terminal (``live``:
the lines are redrawn in place), or prints a plain line per group every
``rampart_progress_interval`` seconds when the output is not a terminal (``plain``).
``-q`` or ``--rampart-progress=off`` turns it off. It writes through pytest's terminal
reporter, from the main thread only, and leaves pytest's own output intact: when
something else is about to write (an xdist test report), it ends its block first and
draws a fresh one below on its next redraw.

Where progress goes: the terminal here, or (under xdist) the controller's.
``ProgressSession`` is registered in the reporting process; it reads the options
(``add_options``: ``--rampart-progress`` / ini ``rampart_progress``, ini
``rampart_progress_interval``) when the run is configured. At session start it decides
the mode (``progress_mode``) and makes the ``ProgressDisplay``; in a single
process the item hooks feed it directly.

Under ``pytest -n N`` the clones run on the workers, which cannot write to the
controller's terminal. The controller hands each worker a directory
(``workerinput[PROGRESS_DIR_KEY]``, set by ``_xdist.XdistController``, which asks
``ProgressSession.worker_directory``); a worker's ``ProgressFileSink`` keeps the snapshot of
its running group in a file there (replaced atomically, at most every
``EMIT_INTERVAL`` s); a thread on the controller polls the files and passes new snapshots
to xdist's own event queue, so the display draws them on the main thread, between
xdist's other events. A group is finished on the controller when its test report
arrives. If xdist's event queue is not where this expects it, progress under xdist is
silently off (the run itself is unaffected).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import pytest

from rampart._checks import invalid
from rampart._pacing import slowdown
from rampart._redact import redact
from rampart._text import one_line
from rampart.pytest_plugin._options import add_option, choice

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.pytest_plugin._groups import CloneRun
    from rampart.pytest_plugin._items import ItemState

__all__ = [
    "EMIT_INTERVAL",
    "GroupTracker",
    "PROGRESS_DIR_KEY",
    "PROGRESS_MODES",
    "ProgressDisplay",
    "ProgressFileSink",
    "ProgressSession",
    "ProgressTracking",
    "Snapshot",
    "add_options",
    "format_snapshot",
    "progress_mode",
    "worker_progress",
]

PROGRESS_MODES = ("auto", "live", "plain", "off")
_PROGRESS_HELP = (
    "Progress of running trial groups: auto (a live line per group on a terminal, plain "
    "lines otherwise; the default), live, plain or off. -q turns auto off."
)
_PROGRESS_INTERVAL_HELP = "Seconds between plain progress lines of one trial group (default 5)."


def add_options(parser: pytest.Parser) -> None:
    """``--rampart-progress`` with its ini option, and ini ``rampart_progress_interval``."""
    add_option(parser, "rampart_progress", metavar="MODE", help=_PROGRESS_HELP, ini=_PROGRESS_HELP)
    parser.addini("rampart_progress_interval", _PROGRESS_INTERVAL_HELP, default="")


def _progress_interval(config: pytest.Config) -> float:
    raw = config.getini("rampart_progress_interval")
    if raw in ("", None):
        return 5.0
    try:
        seconds = float(str(raw))
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise invalid(
            "rampart",
            "ini option rampart_progress_interval",
            "a number of seconds >= 0",
            raw,
            error=pytest.UsageError,
        )
    return seconds


#: Shortest time between two snapshots of one group (the last one is always sent).
EMIT_INTERVAL = 0.1


#: Shortest time between two redraws of the live lines.
REDRAW_INTERVAL = 0.1


#: The longest note (what a limiter is retrying) a progress line shows.
NOTE_CHARS = 160


#: A limiter's retry note stays on the line this long after the last retry it reported.
NOTE_SECONDS = 10.0


@attrs.frozen(kw_only=True)
class Snapshot:
    """One group's progress: its clones done so far by status, and the time it has run."""

    key: str
    name: str
    n: int
    done: int = 0
    safe: int = 0
    unsafe: int = 0
    undetermined: int = 0
    error: int = 0
    no_result: int = 0
    elapsed: float = 0.0
    finished: bool = False
    note: str = ""
    interrupted: bool = False  # a Ctrl-C stopped the group before it finished

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: object) -> Snapshot | None:
        """A snapshot from a worker's file; ``None`` for anything malformed."""
        if not isinstance(data, dict):
            return None
        try:
            optional = ("note", "interrupted")
            fields = {f.name: data[f.name] for f in attrs.fields(cls) if f.name not in optional}
            note = data.get("note", "")
            return cls(
                **fields,
                note=note if isinstance(note, str) else "",
                interrupted=data.get("interrupted") is True,
            )
        except (KeyError, TypeError):
            return None


def _strict(text: str) -> object:
    """A worker's progress file under the codec's one reading policy (``rampart.codec``);
    a ``ValueError`` when it is not strict JSON."""
    from rampart.codec import parse_strict_json  # loaded before the thread starts

    return parse_strict_json(data=text)


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def format_snapshot(snapshot: Snapshot, width: int | None = None) -> str:
    """``rampart test_x: 23/50 | 18 safe, 5 unsafe, 0 undet, 0 error | 9.8/s, ETA 2.8s``.

    With ``width``, the line fits without cutting the numbers or the ETA: the note (a
    reason, ``| rate-limited ...``) is shortened at a word, or left out, first; then the
    test's name; then the counts take their short form (``18 safe 5 unsafe`` ->
    ``S18 U5 ?0 E0``).
    """
    rate = snapshot.done / snapshot.elapsed if snapshot.elapsed > 0 else 0.0
    if snapshot.interrupted:
        timing = f"INTERRUPTED after {_duration(snapshot.elapsed)}"
    elif snapshot.finished:
        timing = f"done in {_duration(snapshot.elapsed)}"
    elif rate > 0:
        timing = f"{rate:.1f}/s, ETA {_duration((snapshot.n - snapshot.done) / rate)}"
    else:
        timing = f"{_duration(snapshot.elapsed)} elapsed"
    name = one_line(snapshot.name)
    note = one_line(snapshot.note[:NOTE_CHARS]) if snapshot.note and not snapshot.finished else ""
    for short in (False, True):
        core = f": {snapshot.done}/{snapshot.n} | {_counts(snapshot, short=short)} | {timing}"
        if width is None:
            return f"rampart {name}{core}" + (f" | {note}" if note else "")
        room = width - len("rampart ") - min(len(name), _MIN_NAME) - len(core)
        if room >= 0 or short:
            break
    assert width is not None  # the loop returned otherwise
    if note:  # what the whole name leaves, if anything
        note = _shortened(note, width - len("rampart ") - len(name) - len(core) - len(" | "))
        if note:
            core += f" | {note}"
    room = max(width - len("rampart ") - len(core), _MIN_NAME)
    if len(name) > room:
        name = name[: room - 1] + "…"
    return f"rampart {name}{core}"


#: The fewest characters of a test's name a fitted progress line keeps.
_MIN_NAME = 8


def _counts(snapshot: Snapshot, *, short: bool) -> str:
    if short:
        text = f"S{snapshot.safe} U{snapshot.unsafe} ?{snapshot.undetermined} E{snapshot.error}"
        return text + (f" -{snapshot.no_result}" if snapshot.no_result else "")
    text = (
        f"{snapshot.safe} safe, {snapshot.unsafe} unsafe, "
        f"{snapshot.undetermined} undet, {snapshot.error} error"
    )
    return text + (f", {snapshot.no_result} no result" if snapshot.no_result else "")


def _shortened(text: str, room: int) -> str:
    """``text`` in ``room`` characters, cut at a word with ``…``; ``""`` if too little
    of it would be left to read."""
    if len(text) <= room:
        return text
    if room < 16:
        return ""
    cut = text[: room - 1].rsplit(" ", 1)[0]
    return cut + "…"


class ProgressSink(Protocol):
    def update(self, snapshot: Snapshot) -> None: ...


class GroupTracker:
    """Counts one running group's finished clones and reports them to a sink."""

    __slots__ = (
        "_counts",
        "_done",
        "_last",
        "_note",
        "_note_at",
        "_sink",
        "_started",
        "key",
        "n",
        "name",
    )

    def __init__(self, *, key: str, name: str, n: int, sink: ProgressSink) -> None:
        self.key = key
        self.name = name
        self.n = n
        self._sink = sink
        self._started = time.monotonic()
        self._last = self._started
        self._done = 0
        self._counts = {"safe": 0, "unsafe": 0, "undetermined": 0, "error": 0, "no_result": 0}
        self._note = ""
        self._note_at = -float("inf")

    def heard(self, event: slowdown.SlowDown) -> None:
        """News on the "slow down" channel: a limiter backing off before a retry says
        why (a down agent's refused connection), and the line shows it, even while no
        clone finishes."""
        if event.retrying is None:
            return
        now = time.monotonic()
        self._note, self._note_at = event.retrying, now
        if now - self._last >= EMIT_INTERVAL:
            self._last = now
            self._sink.update(self.snapshot(now))

    def clone_finished(self, clone: CloneRun) -> None:
        """A clone finished (called by the runner, in the test's thread)."""
        from rampart.pytest_plugin._groups import clone_status  # loaded by the first trial

        status = clone_status(clone)
        self._counts["no_result" if status is None else status.value] += 1
        self._done += 1
        now = time.monotonic()
        if now - self._last >= EMIT_INTERVAL:
            self._last = now
            self._sink.update(self.snapshot(now))

    def snapshot(
        self, now: float, *, finished: bool = False, interrupted: bool = False
    ) -> Snapshot:
        counts = self._counts
        return Snapshot(
            key=self.key,
            name=self.name,
            n=self.n,
            done=self._done,
            safe=counts["safe"],
            unsafe=counts["unsafe"],
            undetermined=counts["undetermined"],
            error=counts["error"],
            no_result=counts["no_result"],
            elapsed=now - self._started,
            finished=finished,
            note=self._note if now - self._note_at <= NOTE_SECONDS else "",
            interrupted=interrupted,
        )


def progress_mode(config: pytest.Config, option: str) -> str:
    """``live``, ``plain`` or ``off`` for this run, from the option and the terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if option == "off" or reporter is None:
        return "off"
    if option in ("live", "plain"):
        return option  # asked for by name: honoured under -q too
    if config.get_verbosity() < 0:
        return "off"  # -q turns the automatic choice off
    return "live" if reporter.isatty() else "plain"


class ProgressDisplay:
    """Draws the running groups' progress (see the module docstring). Main thread only."""

    def __init__(
        self,
        reporter: Any,
        *,
        live: bool,
        interval: float,
        distributed: bool,
        capture: Any = None,
    ) -> None:
        self._tr = reporter
        self._capture = capture
        self._live = live
        self._interval = interval
        self._distributed = distributed
        self._active: dict[str, Snapshot] = {}
        self._finished: set[str] = set()
        self._printed: dict[str, float] = {}  # plain mode: when each group last printed
        self._block = 0  # live mode: our lines at the bottom of the screen, cursor after them
        self._drawn = 0.0
        self._prefix: object = None

    # -- feeding ----------------------------------------------------------------------

    def update(self, snapshot: Snapshot) -> None:
        if snapshot.key in self._finished:
            return  # a late snapshot of a group already reported finished
        if snapshot.finished:
            self.finish(snapshot)
            return
        first = snapshot.key not in self._active
        if first and not self._active:
            self._prefix = getattr(self._tr, "currentfspath", None)
        self._active[snapshot.key] = snapshot
        now = time.monotonic()
        if self._live:
            if first or now - self._drawn >= REDRAW_INTERVAL:
                self._redraw([])
        else:
            # The first line comes `interval` after the group started, then one per interval.
            last = self._printed.get(snapshot.key, now - snapshot.elapsed)
            if now - last >= self._interval:
                self._printed[snapshot.key] = now
                self._plain_line(format_snapshot(snapshot))

    def finish(self, snapshot: Snapshot, *, nodeid: str | None = None) -> None:
        """The group is over: its last line stays, its slot in the live block goes. A
        group a Ctrl-C stopped always gets its last line, drawn before or not."""
        if snapshot.key in self._finished:
            return
        self._finished.add(snapshot.key)
        was_shown = snapshot.key in self._active
        self._active.pop(snapshot.key, None)
        final = format_snapshot(
            attrs.evolve(snapshot, finished=True), self._width_limit() if self._live else None
        )
        if self._live:
            if not (was_shown or snapshot.interrupted):
                return  # finished before it was ever drawn: nothing to replace
            self._redraw([final])
        else:
            if self._printed.pop(snapshot.key, None) is None and not snapshot.interrupted:
                return  # a group too quick for a progress line gets no final line either
            self._plain_line(final)
        if not self._active:
            self._release(nodeid)

    def is_active(self, key: str) -> bool:
        return key in self._active

    def active_keys(self) -> list[str]:
        return list(self._active)

    def finish_key(self, key: str, nodeid: str) -> None:
        """The controller saw the group's test report: finish it with its last snapshot."""
        snapshot = self._active.get(key)
        if snapshot is not None:
            self.finish(snapshot, nodeid=nodeid)

    def interrupted(self, latest: dict[str, Snapshot]) -> None:
        """A Ctrl-C stopped the run: each group still running ends with its INTERRUPTED
        line (its ``latest`` snapshot where there is one, else the last one drawn)."""
        for key, snapshot in list(self._active.items()):
            self.finish(attrs.evolve(latest.get(key, snapshot), interrupted=True))

    # -- drawing ----------------------------------------------------------------------

    def _writer(self) -> Any:
        return self._tr._tw

    def _uncaptured(self) -> contextlib.AbstractContextManager[object]:
        """pytest captures output while a test runs; progress is for the terminal."""
        if self._capture is None:
            return contextlib.nullcontext()
        manager: contextlib.AbstractContextManager[object] = (
            self._capture.global_and_fixture_disabled()
        )
        return manager

    def _width_limit(self) -> int:
        return max(int(getattr(self._writer(), "fullwidth", 80)) - 1, 20)

    def _fit(self, line: str) -> str:
        """A live line never wraps: redrawing in place counts lines."""
        width = self._width_limit()
        return line if len(line) <= width else line[: width - 1] + "…"

    def interrupt(self) -> None:
        """Something else is about to write (an xdist test report): end our block with a
        newline so that output goes below it; the next redraw starts a new block."""
        if self._block:
            with self._uncaptured():
                self._writer().line()
            self._block = 0

    def _start_clean_line(self) -> None:
        """Our output starts on a line of its own (pytest may be mid-line)."""
        writer = self._writer()
        if not self._block and writer.width_of_current_line:
            writer.line()
        if hasattr(self._tr, "currentfspath") and not self._distributed:
            self._tr.currentfspath = None

    def _redraw(self, committed: list[str]) -> None:
        with self._uncaptured():
            self._draw(committed)

    def _draw(self, committed: list[str]) -> None:
        writer = self._writer()
        self._start_clean_line()
        rewind = ""
        if self._block:
            rewind = "\r" + (f"\x1b[{self._block - 1}A" if self._block > 1 else "")
        width = self._width_limit()
        lines = committed + [format_snapshot(s, width) for s in self._active.values()]
        text = "\n".join("\x1b[2K" + self._fit(redact(line)) for line in lines)
        writer.write(rewind + text)
        writer.flush()
        self._block = len(self._active)
        self._drawn = time.monotonic()

    def _plain_line(self, line: str) -> None:
        with self._uncaptured():
            self._start_clean_line()
            writer = self._writer()
            writer.line(redact(line))  # whole, for logs: only live lines are cut to the width
            writer.flush()

    def _release(self, nodeid: str | None) -> None:
        """No group runs any more: hand the terminal back to pytest as we found it."""
        with self._uncaptured():
            self._hand_back(nodeid)

    def _hand_back(self, nodeid: str | None) -> None:
        writer = self._writer()
        self._block = 0
        prefix, self._prefix = self._prefix, None
        if not self._distributed and isinstance(prefix, Path) and nodeid is not None:
            # pytest had written the test file's name and will now append the outcome
            # letter: write the name again so the letter follows it, not our line.
            self._tr.write_fspath_result(nodeid, "")
        elif (self._distributed or not isinstance(prefix, str)) and writer.width_of_current_line:
            # Outcome letters are written where the cursor is: not after our line. (In
            # verbose mode pytest starts a new line and writes the test's name itself.)
            writer.line()


class ProgressTracking:
    """Per trial item: a tracker the runner tells about each finished clone, finished
    with the call phase (``track``, entered by the item hooks around the call). ``sink`` is
    set once the run knows where progress goes (None: nowhere)."""

    def __init__(self, sink: ProgressSink | None = None, *, worker: str | None = None) -> None:
        self.sink = sink
        self._worker = worker

    @contextlib.contextmanager
    def track(self, item: pytest.Item, state: ItemState) -> Iterator[None]:
        sink = self.sink
        if sink is None or state.spec is None:
            yield
            return
        key = item.nodeid if self._worker is None else f"{self._worker}:{item.nodeid}"
        tracker = GroupTracker(key=key, name=item.name, n=state.spec.n, sink=sink)
        state.listeners.append(tracker)
        interrupted = False
        try:
            with slowdown.listen(tracker.heard):
                yield
        except KeyboardInterrupt:
            interrupted = True
            raise
        finally:
            state.listeners.remove(tracker)
            final = tracker.snapshot(time.monotonic(), finished=True, interrupted=interrupted)
            if isinstance(sink, ProgressDisplay):
                sink.finish(final, nodeid=item.nodeid)
            else:
                sink.update(final)


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


def worker_progress(config: pytest.Config) -> ProgressTracking | None:
    """The item hooks of a worker whose controller shows progress (None otherwise)."""
    workerinput: dict[str, Any] = getattr(config, "workerinput", {})
    directory = workerinput.get(PROGRESS_DIR_KEY)
    worker = workerinput.get("workerid")
    if not isinstance(directory, str) or not isinstance(worker, str):
        return None
    return ProgressTracking(ProgressFileSink(directory, worker), worker=worker)


class ProgressSession:
    """The reporting process's side of live progress (see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._option = choice(config, "rampart_progress", PROGRESS_MODES)
        self._interval = _progress_interval(config)
        self._mode: str | None = None
        self.tracking = ProgressTracking()
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
                self.tracking.sink = self.display
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
        # The thread reads the workers' files with the codec's policy (``_strict``): load
        # the codec here, on the main thread. A module that two threads import at once
        # can be handed to one of them half-initialised (an ImportError in the thread).
        importlib.import_module("rampart.codec")
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
                    snapshot = Snapshot.from_json(_strict(path.read_text(encoding="utf-8")))
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
            return Snapshot.from_json(_strict(text))
        except (OSError, ValueError):
            return None

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self.display is not None and session.exitstatus == pytest.ExitCode.INTERRUPTED:
            # Under xdist no test report finishes a group a Ctrl-C stopped: end its
            # line here, with what its worker wrote last.
            latest = {}
            for worker in {key.partition(":")[0] for key in self.display.active_keys()}:
                snapshot = self._read(worker)
                if snapshot is not None:
                    latest[snapshot.key] = snapshot
            self.display.interrupted(latest)

    def close(self) -> None:
        """Remove the workers' progress directory (at unconfigure, from ``_session.stop``)."""
        if self._directory is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self._directory, ignore_errors=True)
