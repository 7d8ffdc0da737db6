"""Which saved runs a command reads: a directory stands for its latest run.

A **report directory** (``--rampart-report-dir``) collects every run written there.
One pytest session is one run: its JSON report, JSONL trace and HTML page (an xdist
run too: the controller alone writes them). A resumed run is one logical run with the
run it resumed: its report holds the resumed results too, so the files of the run it
resumed are superseded by its own.

* :func:`one_run` (``report``, ``validate``, ``diff``): each PATH names one run. A
  file is that run; a directory is its **latest** run, the newest by the time stamp
  in its files' names (rampart names every file it writes by the UTC time it wrote
  it), among the directory and every directory below it. Runs written there before
  it are named in a note, never merged, and so is a journal there of a run that
  started after it and wrote no report (killed, or still running).
* :func:`merged_runs` (``report --merge``): the shards of one run. Each file, and the
  latest run of each report directory under each PATH (the artifacts of CI shards).
  Runs that ran a test
  in common are not shards of one run: refused, unless ``--allow-overlap``.
* :func:`every_run` (``history``): every run under the paths, oldest first by the
  start time the run recorded.

Wherever several runs are read, one found twice (the same run id: a copied artifact)
is read once, and a run that another resumed is dropped, with a note.

In each directory a run is read from its JSON report, else its trace, else (in its
``journal/``) its journal: a run that wrote neither a report nor a trace is found
through its journal (``_inputs.load_run`` reads each kind).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import attrs

from rampart.cli import _inputs
from rampart.cli._errors import CliError
from rampart.cli._inputs import SavedRun

__all__ = [
    "Selection",
    "all_files",
    "every_run",
    "latest_files",
    "merged_runs",
    "one_run",
    "run_files",
    "single_run",
    "written_order",
]

# What a report directory holds, in the order one run's files are preferred: the JSON
# report states the trial groups and the run; the trace has every record; the journal
# (``journal/``) is what is left when a run never got to write either.
_RUN_FILES = ("run_report_*.json", "traces_*.jsonl", "rampart-journal-*.jsonl")


@attrs.frozen(kw_only=True)
class Selection:
    """The runs a command reads, and notes saying which were chosen and why."""

    runs: list[SavedRun]
    notes: list[str] = attrs.field(factory=list)


def _order(path: Path) -> str:
    """When ``path`` was written: its name's time stamp, else its modification time."""
    stamp = _inputs.file_stamp(path)
    if stamp is not None:
        return stamp
    try:
        when = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    except OSError:
        return ""
    return f"{when:%Y-%m-%dT%H-%M-%S}-{when.microsecond // 1000:03d}"


def run_files(directory: Path) -> dict[Path, list[Path]]:
    """Each report directory under ``directory`` (itself included) and its runs' files,
    one per run, oldest first (see the module docstring for which file stands for a run).
    """
    found: dict[Path, list[Path]] = {}

    def visit(place: Path) -> None:
        try:
            children = sorted(place.iterdir())
        except OSError as error:
            raise CliError(
                f"{place}: cannot be read ({error.strerror or type(error).__name__})"
            ) from None
        files = [child for child in children if child.is_file()]
        picked: list[Path] = []
        for pattern in _RUN_FILES:
            picked = [file for file in files if file.match(pattern)]
            if picked:
                break
        if picked:
            found[place] = sorted(picked, key=written_order)
        for child in children:
            if child.is_dir() and not child.is_symlink():
                if picked and child.name == "journal":
                    continue  # a run's journal repeats its report
                visit(child)

    visit(directory)
    if not found:
        raise CliError(
            f"{directory}: no saved run in it (run_report_*.json, traces_*.jsonl or "
            "journal/rampart-journal-*.jsonl)"
        )
    return found


def written_order(file: Path) -> tuple[str, str]:
    """The sort key of run files by when they were written (name stamp, then name)."""
    return _order(file), file.name


def _newest(files: list[Path]) -> Path:
    return max(files, key=written_order)


def _latest(directory: Path) -> tuple[Path, int]:
    """The latest run's file under ``directory``, and how many other runs are there."""
    every = [file for files in run_files(directory).values() for file in files]
    return _newest(every), len(every) - 1


def latest_files(directory: Path) -> list[Path]:
    """The files of ``directory``'s latest run (``validate DIR``): the newest report and
    the newest trace where that run was written (else the journal it is read from)."""
    places = run_files(directory)
    chosen = _newest([file for files in places.values() for file in files])
    place = chosen.parent
    kinds = [sorted(place.glob(pattern)) for pattern in _RUN_FILES[:2]]
    newest = [_newest(files) for files in kinds if files]
    return newest if chosen in newest else [chosen]


def all_files(directory: Path) -> list[Path]:
    """Every report, trace and journal file under ``directory`` (``validate --all``)."""
    run_files(directory)  # a CliError when it holds no run
    return sorted(
        {file for pattern in _RUN_FILES for file in directory.rglob(pattern) if file.is_file()}
    )


def _others_note(directory: Path, chosen: Path, others: int) -> str:
    plural = "s" * (others != 1)
    return (
        f"{directory}: the latest run, {chosen.name}; {others} earlier run{plural} there "
        "not included (--merge merges the shards of one run; 'rampart history' lists runs)"
    )


def _unreported(chosen: Path) -> list[str]:
    """A note per journal beside ``chosen``'s directory that a run started after
    ``chosen`` was written (a run killed before its reports, or one still running)."""
    after = _order(chosen)
    journals = sorted((chosen.parent / "journal").glob(_RUN_FILES[2]), key=written_order)
    return [
        f"{journal}: a run that started after the latest report and wrote none (killed, or "
        f"still running); 'rampart report {journal}' reads what it journaled"
        for journal in journals
        if journal.is_file() and chosen.parent.name != "journal" and _order(journal) > after
    ]


def one_run(name: str) -> tuple[SavedRun, list[str]]:
    """The run ``name`` stands for (a file, or a directory's latest run), and notes
    naming the runs a directory holds besides it and any newer run that wrote no report."""
    path = Path(name)
    if not path.is_dir():
        return _inputs.load_run(name), []
    chosen, others = _latest(path)
    notes = [_others_note(path, chosen, others)] if others else []
    return _inputs.load_run(chosen), notes + _unreported(chosen)


def single_run(names: list[str], *, option: str = "--merge") -> Selection:
    """The one run ``names`` stand for: several runs need ``option`` (merging)."""
    if len(names) != 1:
        raise CliError(
            f"{len(names)} paths given: each stands for one run, and runs are not merged "
            f"unless asked ({option} merges the shards of one run; 'rampart history' "
            "lists runs over time)"
        )
    run, notes = one_run(names[0])
    return Selection(runs=[run], notes=notes)


def _resumed_by(run: SavedRun, runs: list[SavedRun]) -> SavedRun | None:
    """The run among ``runs`` that resumed ``run``, if any (a journal names a run by
    the first characters of its id)."""
    if run.run_id is None:
        return None
    for other in runs:
        if other is not run and any(rid.startswith(run.run_id) for rid in other.resumed_runs):
            return other
    return None


def _without_resumed(runs: list[SavedRun]) -> tuple[list[SavedRun], list[str]]:
    """``runs`` without those another of them resumed, nor a second copy of one run
    (the same run id, as two CI artifacts or a link can give), and a note for each."""
    kept, notes = [], []
    seen: dict[tuple[str, str], SavedRun] = {}
    for run in runs:
        if run.run_id is not None:
            first = seen.setdefault((run.kind, run.run_id), run)
            if first is not run:
                notes.append(f"{run.path}: the same run as {first.path} (run id): read once")
                continue
        by = _resumed_by(run, runs)
        if by is None:
            kept.append(run)
        else:
            notes.append(
                f"{run.path}: resumed by {by.path} (one logical run, which holds its "
                "results): read once, as the resume"
            )
    return kept, notes


def _tested(run: SavedRun) -> set[str]:
    from rampart.cli._view import build_view

    view = build_view([run])
    return set(view.tests) | set(view.groups)


def merged_runs(names: list[str], *, allow_overlap: bool) -> Selection:
    """The shards of one run (see the module docstring): a :class:`CliError` naming a
    test two of them ran, unless ``allow_overlap``."""
    paths: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            paths.extend(_newest(files) for files in run_files(path).values())
        else:
            paths.append(path)
    runs, notes = _without_resumed([_inputs.load_run(path) for path in paths])
    if not allow_overlap:
        owner: dict[str, SavedRun] = {}
        for run in runs:
            for nodeid in sorted(_tested(run)):
                first = owner.setdefault(nodeid, run)
                if first is not run:
                    raise CliError(
                        f"--merge: {first.path} and {run.path} both ran {nodeid}: they are "
                        "not shards of one run (each shard runs its own tests); "
                        "--allow-overlap merges them anyway (a test in both counts twice)"
                    )
    return Selection(runs=runs, notes=notes)


def _start_key(run: SavedRun) -> tuple[str, str]:
    """Runs sort by their recorded start (as UTC, comparable text), then by name."""
    started = run.started_at
    if started is not None:
        try:
            when = datetime.fromisoformat(started)
        except ValueError:
            when = None
        if when is not None:
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
            return when.astimezone(UTC).isoformat(timespec="microseconds"), str(run.path)
    return "", str(run.path)


def every_run(names: list[str]) -> Selection:
    """Every run under ``names``, oldest first by recorded start; a run that another
    resumed is dropped (the resume is the logical run and holds its results)."""
    paths: list[Path] = []
    for name in names:
        path = Path(name)
        if path.is_dir():
            paths.extend(file for files in run_files(path).values() for file in files)
        else:
            paths.append(path)
    unique = {path.resolve(): path for path in reversed(paths)}
    runs, notes = _without_resumed([_inputs.load_run(path) for path in reversed(unique.values())])
    return Selection(runs=sorted(runs, key=_start_key), notes=notes)
