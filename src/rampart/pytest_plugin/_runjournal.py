"""Where this run's journal lives, what it resumes, and the hooks around them.

``JournalSettings.resolve`` decides, once per run on the controller (or the single
process), the run id, the journal file this run appends to and the journal it
resumes from; xdist workers receive the same settings through ``workerinput``:

- ``--rampart-journal DIR`` / ini ``rampart_journal`` (``off`` disables it); default
  ``<report dir>/journal``, where the report directory is ``--rampart-report-dir``
  when that option exists and is set, else ``<rootdir>/.rampart`` (given a
  ``.gitignore`` holding ``*`` when rampart creates it, as pytest does for its
  cache). Each run writes a new ``rampart-journal-<UTC time>-<run id>.jsonl`` there,
  created on its first result.
- ``--rampart-resume [JOURNAL]``: a journal file, a directory (its newest journal),
  or nothing (the newest journal in the journal directory). The resumed run appends
  to that same file, so a run interrupted again resumes from one journal.

``RunJournal`` (registered in every process) closes the writer at the end and, at
start-up on the controller, removes stale temporary files rampart left (see
``rampart.reporting._files.remove_stale_temporaries``). On the xdist controller of an
interrupted or incomplete run it reads back what workers journaled but could not
deliver (an interrupt stops a worker before its test report leaves), so the report
keeps every result that finished.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from rampart._checks import invalid
from rampart._text import one_line
from rampart.pytest_plugin._journal import (
    JOURNAL_KEY,
    JOURNAL_PREFIX,
    JOURNAL_SUFFIX,
    JournalWriter,
    journal_name,
    looks_like_journal,
    read_journal,
)
from rampart.pytest_plugin._ledger import Attribution, RecordedResult
from rampart.reporting._files import remove_stale_temporaries

if TYPE_CHECKING:
    from rampart.pytest_plugin._ledger import FinishedUnit, RunLedger

__all__ = ["RUN_INPUT_KEY", "JournalSettings", "RunJournal", "STALE_GRACE_SECONDS"]

RUN_INPUT_KEY = "rampart_run"

#: A temporary file must be this much older than the session to count as stale: a
#: report another session is publishing right now is never touched.
STALE_GRACE_SECONDS = 60.0

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
        config: pytest.Config,
        ledger: RunLedger,
        settings: JournalSettings,
        writer: JournalWriter | None,
        is_worker: bool,
        report_dir: Path | None = None,
    ) -> None:
        self._config = config
        self._report_dir = report_dir
        self._ledger = ledger
        self._settings = settings
        self.writer = writer
        self._is_worker = is_worker
        self.recovered = 0
        self.removed: list[Path] = []

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

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self._is_worker:
            return
        older_than = self._ledger.started_wall - STALE_GRACE_SECONDS
        places = {report_directory(self._config, self._report_dir)}
        if self._settings.journal is not None:
            places.add(self._settings.journal.parent)
        for place in places:
            self.removed.extend(remove_stale_temporaries(place, older_than=older_than))

    def recover_from_journal(self) -> int:
        """Add what workers journaled in this run that never reached the ledger."""
        from rampart.codec._record import deserialize_record

        journal = self._settings.journal
        if self._is_worker or journal is None or not journal.exists():
            return 0
        have = {
            (r.attribution.nodeid, r.attribution.clone, r.attribution.index)
            for r in self._ledger.results
        }
        recovered = 0
        contents = read_journal(journal)
        with journal.open("rb") as handle:
            for line in contents.lines:
                key = (line.nodeid, line.clone, line.index)
                if line.run != self._settings.run_id or line.worker is None or key in have:
                    continue
                handle.seek(line.offset)
                try:
                    result = deserialize_record(data=handle.read(line.length).decode()).result
                except ValueError:
                    continue
                metadata = dict(result.metadata)
                metadata.pop(JOURNAL_KEY, None)
                self._ledger.record(
                    RecordedResult(
                        result=attrs.evolve(result, metadata=metadata),
                        attribution=Attribution(
                            nodeid=line.nodeid,
                            name=line.name,
                            clone=line.clone,
                            index=line.index,
                            worker=line.worker,
                        ),
                    )
                )
                have.add(key)
                recovered += 1
        self.recovered += recovered
        return recovered

    def pytest_unconfigure(self) -> None:
        if self.writer is not None:
            self.writer.close()
