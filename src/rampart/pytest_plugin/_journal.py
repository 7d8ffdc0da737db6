"""The run journal: every finished result, on disk, as soon as it is final.

A journal is a JSONL file of canonical ``rampart.trace.v2`` records (written with
``rampart.codec``; each line reads back with ``deserialize_record``), one line per
result, appended when its unit finishes: a trial clone as soon as its body is over,
a plain test after its teardown. Besides the record's own ``pytest_nodeid`` and
``result_index``, each result's metadata carries one bookkeeping key,
``_rampart_journal``: the run id, the test's nodeid and name, the clone index (and,
for a trial of a population the test ran other than its first, the test's trial
``group``, see ``_ledger.population_suffix``), how many results the unit has
(``of``), the test's hash (``_resume.test_hash``), the unit's outcome (``passed`` /
``failed`` / ``partial``, see ``UnitOutcome``) and its failure line, and the xdist
worker. A population's trials are journaled with their test, when it ends: a test body
cannot be resumed halfway. ``--rampart-resume`` reads it back (``_resume``).

Every process of a run appends to the same file (xdist workers journal what they
ran; the controller journals nothing of theirs): one ``os.write`` per unit on an
``O_APPEND`` descriptor, under an exclusive ``flock`` where the platform has one.
Nothing is buffered in the process, so a killed process (``kill -9``, an OOM kill)
loses only the units still running; the lines are not fsynced one by one (that
costs milliseconds per clone), so a power cut may lose the last ones. A writer that
finds the file not ending in a newline (a writer killed mid-line) starts a new line
first, so a torn line never swallows the next record (it reads the last byte only when
the file grew since its own last line); the reader skips torn and undecodable lines and
says how many.

A journal that cannot be written (disk full, permissions) turns itself off with a
warning; the run and its reports carry on.

Where this run's journal lives and what it resumes: ``JournalSettings.resolve``
decides, once per run on the controller (or the single process), the run id, the
journal file this run appends to and the journal it resumes from; xdist workers
receive the same settings through ``workerinput``:

- ``--rampart-journal DIR`` / ini ``rampart_journal`` (``off`` disables it); default
  ``<report dir>/journal``, where the report directory is ``--rampart-report-dir``
  when that option exists and is set, else ``<rootdir>/.rampart`` (given a
  ``.gitignore`` holding ``*`` when rampart creates it, as pytest does for its
  cache). Each run writes a new ``rampart-journal-<UTC time>-<run id>.jsonl`` there,
  created on its first result.
- ``--rampart-resume [JOURNAL]``: a journal file, a directory (its newest journal),
  or nothing (the newest journal in the journal directory). The resumed run appends
  to that same file, so a run interrupted again resumes from one journal.

``RunJournal`` (one per process; it implements no pytest hook) is the ledger's
subscriber that journals this process's units; its writer is closed at unconfigure
(``_session.stop``). On the xdist controller of an interrupted or incomplete run the
reporter (``_report.RunReporter``) has it read back what workers journaled but could
not deliver (an interrupt stops a worker before its test report leaves), so the report
keeps every result that finished. The options (``--rampart-journal``,
``--rampart-resume``) are declared here (``add_options``).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from rampart._checks import invalid
from rampart._text import one_line
from rampart.core.errors import SchemaError
from rampart.pytest_plugin._options import add_option

if sys.platform != "win32":  # POSIX: appends are serialized with flock
    import fcntl

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rampart.codec._internal import JsonlLine
    from rampart.pytest_plugin._ledger import FinishedUnit, RecordedResult, RunLedger

__all__ = [
    "JOURNAL_KEY",
    "JOURNAL_PREFIX",
    "JournalLine",
    "JournalSettings",
    "JournalWriter",
    "RUN_INPUT_KEY",
    "RunJournal",
    "add_options",
    "journal_name",
    "looks_like_journal",
    "read_journal",
]


JOURNAL_KEY = "_rampart_journal"


JOURNAL_PREFIX = "rampart-journal-"


JOURNAL_SUFFIX = ".jsonl"


# Longest failure line kept per unit (the report and the terminal have the full text).
_MAX_DETAIL = 500


def journal_name(run_id: str) -> str:
    """``rampart-journal-<UTC time>-<run id>.jsonl``: sorts by start time, names its run."""
    now = datetime.now(UTC)
    stamp = f"{now:%Y-%m-%dT%H-%M-%S}-{now.microsecond // 1000:03d}"
    return f"{JOURNAL_PREFIX}{stamp}-{run_id[:12]}{JOURNAL_SUFFIX}"


def encode_line(
    recorded: RecordedResult,
    unit: FinishedUnit,
    *,
    run_id: str,
    worker: str | None,
) -> str:
    """One journal line (with its newline): the canonical record with its journal key,
    framed by the codec's JSONL writer."""
    # The codec loads when the first result is journaled, not at pytest start.
    from rampart.codec import ResultRecord, serialize_record
    from rampart.codec._internal import jsonl_line

    attribution = recorded.attribution
    bookkeeping: dict[str, Any] = {
        "run": run_id,
        "nodeid": unit.nodeid,
        "name": unit.name,
        "clone": unit.clone,
        "index": attribution.index,
        "of": len(unit.results),
        "hash": unit.test_hash,
        "outcome": unit.outcome.value,
        "detail": one_line(unit.detail, limit=_MAX_DETAIL),
        "worker": worker,
    }
    if unit.group:
        bookkeeping["group"] = unit.group
    result = attrs.evolve(
        recorded.result, metadata={**recorded.result.metadata, JOURNAL_KEY: bookkeeping}
    )
    record = ResultRecord(
        result=result, pytest_nodeid=attribution.test_nodeid, result_index=attribution.index
    )
    return jsonl_line(serialize_record(record=record))


class JournalWriter:
    """Appends finished units to one journal file (see the module docstring).

    The file and its directory are created on the first unit, so a run that records
    nothing leaves nothing behind. ``on_error`` receives a one-line message when the
    journal fails and turns itself off.
    """

    def __init__(
        self,
        path: Path,
        *,
        run_id: str,
        worker: str | None = None,
        on_error: Callable[[str], None] | None = None,
        gitignore: Path | None = None,
    ) -> None:
        self.path = path
        self._gitignore = gitignore
        self.run_id = run_id
        self._worker = worker
        self._on_error = on_error
        self._fd: int | None = None
        # Where this writer's last line ended: while the file still ends there, no one
        # appended since, and the file ends with that line's newline.
        self._end = -1
        self._broken = False
        self.units = 0
        self.lines = 0
        # Set while a unit is being written: an immediate exit waits for the line end
        # (``_interrupts`` sets ``exit_after_write``, called once the line is down).
        self.writing = False
        self.exit_after_write: Callable[[], None] | None = None

    @property
    def enabled(self) -> bool:
        return not self._broken

    def write_unit(self, unit: FinishedUnit) -> None:
        """Append ``unit``'s results (resumed results are already journaled: skipped)."""
        if self._broken:
            return
        results = [recorded for recorded in unit.results if recorded.resumed_from is None]
        if not results:
            return
        lines = []
        for recorded in results:
            try:
                lines.append(encode_line(recorded, unit, run_id=self.run_id, worker=self._worker))
            except SchemaError:
                # Not recordable: the report carries an ERROR marker for it instead,
                # and the unit is incomplete in the journal (it runs again on resume).
                return
        data = "".join(lines).encode("utf-8")
        try:
            self._append(data)
        except OSError as exc:
            self._fail(f"the run journal {self.path} could not be written ({exc}); it is off")
            return
        self.units += 1
        self.lines += len(lines)

    def _append(self, data: bytes) -> None:
        if self._fd is None:
            self._fd = self._open()
        fd = self._fd
        self.writing = True
        try:
            with _locked(fd):
                size = os.fstat(fd).st_size
                if size and size != self._end and os.pread(fd, 1, size - 1) != b"\n":
                    data = b"\n" + data  # a writer died mid-line: never join onto it
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                self._end = size + len(data)
        finally:
            self.writing = False
        if self.exit_after_write is not None:
            self.exit_after_write()

    def _open(self) -> int:
        fresh = self._gitignore is not None and not self._gitignore.parent.exists()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fresh and self._gitignore is not None:
            # rampart made the directory: keep it out of version control.
            with contextlib.suppress(OSError):
                self._gitignore.write_text("# created by rampart\n*\n")
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        return os.open(self.path, flags, 0o644)

    def _fail(self, message: str) -> None:
        self._broken = True
        self.close()
        if self._on_error is not None:
            self._on_error(message)

    def close(self) -> None:
        """Flush to disk and close (the next unit, if any, reopens the file)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        self._end = -1
        with contextlib.suppress(OSError):
            os.fsync(fd)
        os.close(fd)


@contextlib.contextmanager
def _locked(fd: int) -> Iterator[None]:
    """Hold an exclusive lock on the journal (elsewhere: single O_APPEND writes)."""
    if sys.platform == "win32":  # pragma: no cover - no flock
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


@attrs.frozen(kw_only=True)
class JournalLine:
    """One decodable line of a journal: its bookkeeping, and where its text is.

    The record itself is decoded only when its result is used (``load``).
    """

    run: str
    nodeid: str
    name: str
    clone: int | None
    index: int
    of: int
    test_hash: str
    outcome: str
    detail: str
    worker: str | None
    offset: int
    length: int
    group: int = 0
    #: The record's result is UNSAFE: a finding no resumed run erases (``_resume``).
    unsafe: bool = False

    def text(self, path: Path) -> str:
        with path.open("rb") as handle:
            handle.seek(self.offset)
            return handle.read(self.length).decode("utf-8")


@attrs.frozen(kw_only=True)
class JournalContents:
    """What ``read_journal`` found: the lines, and the ones it could not use.

    ``problems`` says, for each line it skipped (but a torn tail), its line number and
    why (at most ``MAX_PROBLEMS`` of them; ``skipped`` counts them all).
    """

    path: Path
    lines: tuple[JournalLine, ...]
    skipped: int
    torn_tail: bool
    problems: tuple[str, ...] = ()


#: A journal is input (it may have been edited, truncated or planted): these bound
#: what a line may hold before anything is built from it. ``of`` counts one unit's
#: results; a line longer than ``MAX_LINE_BYTES`` is not read into memory.
MAX_LINE_BYTES = 64 * 1024 * 1024


MAX_RESULTS_PER_UNIT = 100_000


MAX_CLONE_INDEX = 10_000_000


MAX_TEXT = 16_384


MAX_PROBLEMS = 20


# Characters a journal's bookkeeping text never holds (its writer makes detail one
# line): C0/C1 controls (escape sequences start with one), line separators, and the
# invisible / bidirectional formatting characters ``one_line`` removes.
_UNPRINTABLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]"
)


def read_journal(path: Path) -> JournalContents:
    """Every usable line of the journal at ``path``, in file order.

    A line that is not JSON, is nested too deeply, repeats a key, is longer than
    ``MAX_LINE_BYTES``, lacks the bookkeeping key or has it malformed or out of bounds
    is skipped, and ``problems`` names it; a last line without its newline (a writer
    was killed there) is skipped too. Records are checked by the strict codec when
    they are loaded, not here.
    """
    from rampart.codec._internal import stream_jsonl  # the codec's one JSONL splitter

    found: list[JournalLine] = []
    problems: list[str] = []
    skipped = 0
    torn_tail = False
    with path.open("rb") as handle:
        for raw in stream_jsonl(handle, max_line_bytes=MAX_LINE_BYTES):
            if not raw.complete and not raw.oversize:
                torn_tail = True
                break
            line = _bookkeeping(raw)
            if not isinstance(line, str):
                found.append(line)
                continue
            reason = line
            skipped += 1
            if len(problems) < MAX_PROBLEMS:
                problems.append(f"line {raw.number}: {reason}")
    return JournalContents(
        path=path,
        lines=tuple(found),
        skipped=skipped,
        torn_tail=torn_tail,
        problems=tuple(problems),
    )


def looks_like_journal(path: Path) -> bool:
    """A run journal by its name, or by its first line's bookkeeping (a renamed one);
    a JSONL trace or report is not one."""
    if path.name.startswith(JOURNAL_PREFIX):
        return True
    from rampart.codec._internal import stream_jsonl

    try:
        with path.open("rb") as handle:
            first = next(stream_jsonl(handle, max_line_bytes=MAX_LINE_BYTES), None)
    except OSError:
        return False
    return first is not None and not isinstance(_bookkeeping(first), str)


def _bookkeeping(raw: JsonlLine) -> JournalLine | str:
    """The line's bookkeeping, or why the line cannot be used.

    The line is read under the codec's one JSON reading policy (size, nesting depth,
    duplicate keys, finite numbers), so a hostile line is a reason, never a crash.
    """
    from rampart.codec import parse_strict_json

    if raw.oversize:
        return f"longer than {MAX_LINE_BYTES} bytes"
    try:
        text = raw.text()
    except SchemaError:
        return "not UTF-8 text"
    try:
        document = parse_strict_json(data=text)
    except SchemaError as exc:  # not JSON, too deep, a repeated key, NaN
        return one_line(str(exc), limit=200)
    try:
        result = document["result"]
        keys = result["metadata"][JOURNAL_KEY]
        fields = {name: keys[name] for name in _FIELDS}
        fields["group"] = keys.get("group", 0)
        status = result.get("status")
    except (KeyError, TypeError, AttributeError):
        return f"not a journal record (no {JOURNAL_KEY} bookkeeping)"
    try:
        return _line(fields, status, raw)
    except ValueError as exc:
        return str(exc)


def _line(fields: dict[str, Any], status: object, raw: JsonlLine) -> JournalLine:
    of = _count(fields["of"], "of", MAX_RESULTS_PER_UNIT, minimum=1)
    index = _count(fields["index"], "index", of - 1)
    group = _count(fields["group"], "group", MAX_CLONE_INDEX)
    if group and fields["clone"] is None:
        raise ValueError(f"{JOURNAL_KEY}.group is set on a unit that is not a trial")
    return JournalLine(
        run=_text(fields["run"], "run", 64),
        nodeid=_text(fields["nodeid"], "nodeid", MAX_TEXT),
        name=_text(fields["name"], "name", MAX_TEXT),
        clone=None
        if fields["clone"] is None
        else _count(fields["clone"], "clone", MAX_CLONE_INDEX),
        index=index,
        of=of,
        test_hash=_text(fields["hash"], "hash", 64),
        outcome=_outcome(fields["outcome"]),
        detail=_text(fields["detail"], "detail", _MAX_DETAIL, empty=True),
        worker=None if fields["worker"] is None else _text(fields["worker"], "worker", 64),
        offset=raw.offset,
        length=raw.length,
        group=group,
        unsafe=status == "unsafe",
    )


_FIELDS = ("run", "nodeid", "name", "clone", "index", "of", "hash", "outcome", "detail", "worker")


_OUTCOMES = frozenset({"passed", "failed", "partial"})


def _text(value: object, name: str, longest: int, *, empty: bool = False) -> str:
    if not isinstance(value, str) or (not value and not empty):
        raise ValueError(f"{JOURNAL_KEY}.{name} is not a string")
    if len(value) > longest:
        raise ValueError(f"{JOURNAL_KEY}.{name} is longer than {longest} characters")
    if _UNPRINTABLE.search(value):
        raise ValueError(
            f"{JOURNAL_KEY}.{name} holds control characters (escape sequences, line breaks)"
        )
    return value


def _count(value: object, name: str, maximum: int, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{JOURNAL_KEY}.{name} is not an integer")
    if not minimum <= value <= maximum:
        # Never echo the value itself: it may be a number thousands of digits long.
        raise ValueError(f"{JOURNAL_KEY}.{name} is out of range ({minimum} to {maximum})")
    return value


def _outcome(value: object) -> str:
    if value not in _OUTCOMES:
        raise ValueError(f"{JOURNAL_KEY}.outcome is not one of passed, failed, partial")
    assert isinstance(value, str)
    return value


RUN_INPUT_KEY = "rampart_run"


def add_options(parser: pytest.Parser) -> None:
    """``--rampart-journal`` (with its ini option) and ``--rampart-resume``."""
    journal_help = (
        "Directory of the run journal (one JSONL file per run; default "
        "<rootdir>/.rampart/journal), or 'off'."
    )
    add_option(parser, "rampart_journal", metavar="DIR", help=journal_help, ini=journal_help)
    add_option(
        parser,
        "rampart_resume",
        nargs="?",
        const="",
        metavar="JOURNAL",
        help="Reuse the results a run journal holds and run only the rest (JOURNAL: a "
        "journal file or directory; default: the newest journal in the journal directory).",
    )


_OFF = frozenset({"off", "none", "no", "false", "0"})


@attrs.frozen(kw_only=True)
class JournalSettings:
    """The run id, the journal this run appends to (None: off), the one it resumes."""

    run_id: str
    journal: Path | None
    resume: Path | None

    def to_workerinput(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "journal": None if self.journal is None else str(self.journal),
            "resume": None if self.resume is None else str(self.resume),
        }

    @classmethod
    def from_workerinput(cls, raw: object, *, run_id: str) -> JournalSettings:
        if not isinstance(raw, dict):
            return cls(run_id=run_id, journal=None, resume=None)
        journal, resume = raw.get("journal"), raw.get("resume")
        return cls(
            run_id=str(raw.get("run_id") or run_id),
            journal=Path(journal) if isinstance(journal, str) else None,
            resume=Path(resume) if isinstance(resume, str) else None,
        )

    @classmethod
    def resolve(
        cls, config: pytest.Config, *, run_id: str, report_dir: Path | None = None
    ) -> JournalSettings:
        """The settings from the options (see the module docstring); usage errors name
        the option. ``report_dir`` is ``--rampart-report-dir`` (ini
        ``rampart_report_dir``), when set."""
        directory = journal_directory(config, report_dir)
        resume = _resume_path(config, directory)
        if resume is not None:
            journal: Path | None = resume if directory is not None else None
        elif directory is not None:
            journal = directory / journal_name(run_id)
        else:
            journal = None
        return cls(run_id=run_id, journal=journal, resume=resume)


def report_directory(config: pytest.Config, report_dir: Path | None) -> Path:
    """The run's report directory: ``--rampart-report-dir`` (or its ini option) when
    set, else ``<rootdir>/.rampart``."""
    return report_dir if report_dir is not None else config.rootpath / ".rampart"


def default_gitignore(config: pytest.Config, journal: Path | None) -> Path | None:
    """``<rootdir>/.rampart/.gitignore`` when ``journal`` is in the default place."""
    default = config.rootpath / ".rampart"
    if journal is not None and journal.parent == default / "journal":
        return default / ".gitignore"
    return None


def journal_directory(config: pytest.Config, report_dir: Path | None = None) -> Path | None:
    """Where new journals go, or None when the journal is off."""
    value = config.getoption("rampart_journal", None)
    base = config.invocation_params.dir
    if value is None:
        value = str(config.getini("rampart_journal") or "").strip() or None
        base = config.rootpath
    if value is None:
        return report_directory(config, report_dir) / "journal"
    if value.strip().lower() in _OFF:
        return None
    return base / Path(value)


def _resume_path(config: pytest.Config, directory: Path | None) -> Path | None:
    value = config.getoption("rampart_resume", None)
    if value is None:
        return None
    if value == "":
        if directory is None:
            raise pytest.UsageError(
                "--rampart-resume without a JOURNAL needs the journal directory, but the "
                "journal is off; name the journal: --rampart-resume=PATH"
            )
        found = newest_journal(directory)
        if found is None:
            raise pytest.UsageError(
                f"--rampart-resume: no run journal ({JOURNAL_PREFIX}*{JOURNAL_SUFFIX}) in "
                f"{one_line(str(directory))} to resume{_elsewhere(config, directory)}"
            )
        return found
    path = config.invocation_params.dir / Path(value)
    if path.is_dir():
        found = newest_journal(path)
        if found is None:
            raise invalid(
                "rampart",
                "--rampart-resume",
                f"a run journal, or a directory holding one ({JOURNAL_PREFIX}*{JOURNAL_SUFFIX}); "
                "write --rampart-resume=JOURNAL when test paths follow it",
                value,
                error=pytest.UsageError,
            )
        return found
    if not path.is_file() or path.suffix != JOURNAL_SUFFIX:
        raise invalid(
            "rampart",
            "--rampart-resume",
            f"an existing run journal file (*{JOURNAL_SUFFIX}) or directory; write "
            "--rampart-resume=JOURNAL when test paths follow it",
            value,
            error=pytest.UsageError,
        )
    if not looks_like_journal(path):
        raise pytest.UsageError(
            f"--rampart-resume: {one_line(value)} is not a run journal (its first line has "
            f"no {JOURNAL_KEY} bookkeeping; a JSONL trace or report cannot be resumed); "
            f"give a {JOURNAL_PREFIX}*{JOURNAL_SUFFIX} file or its directory"
        )
    return path


def _elsewhere(config: pytest.Config, directory: Path) -> str:
    """Where else journals are (a run with ``--rampart-report-dir`` or ``--rampart-journal``
    wrote them there), to say in the error: a bounded look two levels under rootdir."""
    root = config.rootpath
    found: set[Path] = set()
    for pattern in (f"*/journal/{JOURNAL_PREFIX}*", f"*/*/journal/{JOURNAL_PREFIX}*"):
        try:
            found.update(path.parent for path in root.glob(pattern) if path.parent != directory)
        except OSError:
            continue
    if not found:
        return (
            "; a run with --rampart-report-dir=DIR keeps its journals in DIR/journal: give "
            "the same --rampart-report-dir, or --rampart-resume=DIR/journal"
        )
    places = sorted(found)[:3]
    shown = ", ".join(one_line(str(_relative(place, root))) for place in places)
    return (
        f"; journals are in {shown} (written with --rampart-report-dir or "
        "--rampart-journal): give the same option, or --rampart-resume=<that directory>"
    )


def _relative(path: Path, root: Path) -> Path:
    try:
        return path.relative_to(root)
    except ValueError:
        return path


def newest_journal(directory: Path) -> Path | None:
    """The most recently started journal in ``directory`` (names sort by start time)."""
    try:
        found = sorted(directory.glob(f"{JOURNAL_PREFIX}*{JOURNAL_SUFFIX}"))
    except OSError:
        return None
    return found[-1] if found else None


class RunJournal:
    """The journal's hooks in one process (see the module docstring)."""

    def __init__(
        self,
        *,
        ledger: RunLedger,
        settings: JournalSettings,
        writer: JournalWriter | None,
        is_worker: bool,
    ) -> None:
        self._ledger = ledger
        self._settings = settings
        self.writer = writer
        self._is_worker = is_worker
        self.recovered = 0

    @property
    def settings(self) -> JournalSettings:
        return self._settings

    def written(self) -> Path | None:
        """This run's journal when it holds anything (under xdist the workers write it,
        so the controller's own writer may have written nothing)."""
        journal = self._settings.journal
        if journal is None:
            return None
        if self.writer is not None and self.writer.lines:
            return journal
        try:
            return journal if journal.stat().st_size > 0 else None
        except OSError:
            return None

    def journal_unit(self, unit: FinishedUnit) -> None:
        """The ledger's subscriber: journal the units this process ran."""
        if self.writer is None:
            return
        if any(recorded.attribution.worker is not None for recorded in unit.results):
            return  # an xdist worker journaled it already
        self.writer.write_unit(unit)

    def recover_from_journal(self) -> int:
        """Add what workers journaled in this run that never reached the ledger."""
        from rampart.codec import deserialize_record
        from rampart.pytest_plugin._ledger import Attribution, RecordedResult

        journal = self._settings.journal
        if self._is_worker or journal is None or not journal.exists():
            return 0
        have = {
            (r.attribution.nodeid, r.attribution.group, r.attribution.clone, r.attribution.index)
            for r in self._ledger.results
        }
        recovered = 0
        contents = read_journal(journal)
        with journal.open("rb") as handle:
            for line in contents.lines:
                key = (line.nodeid, line.group, line.clone, line.index)
                if line.run != self._settings.run_id or line.worker is None or key in have:
                    continue
                handle.seek(line.offset)
                try:
                    result = deserialize_record(data=handle.read(line.length).decode()).result
                except ValueError:
                    continue
                metadata = dict(result.metadata)
                metadata.pop(JOURNAL_KEY, None)
                result = attrs.evolve(result, metadata=metadata)
                self._ledger.record(
                    RecordedResult(
                        result=result,
                        attribution=Attribution.of(
                            result,
                            nodeid=line.nodeid,
                            name=line.name,
                            clone=line.clone,
                            index=line.index,
                            worker=line.worker,
                            group=line.group,
                        ),
                    )
                )
                have.add(key)
                recovered += 1
        self.recovered += recovered
        return recovered

    def close(self) -> None:
        """Close the writer (at unconfigure, from ``_session.stop``)."""
        if self.writer is not None:
            self.writer.close()
