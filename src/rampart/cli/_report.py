"""``rampart report PATH...``: re-render saved runs as the terminal summary, HTML, JSON
or SARIF.

A PATH is one run: a file, or a report directory's latest run (``_select``: runs
written there before it are named, never merged). ``--merge`` merges the shards of one
run into one view (the records of every file, in order) and refuses runs that ran a
test in common unless ``--allow-overlap``. The summary uses the pytest plugin's
line format and ``--summary`` modes; ``--html`` writes the self-contained HTML report,
``--json`` a JSON report of the merged records and ``--sarif`` a SARIF 2.1.0 log, all
through the report sinks' own renderers (one codec, projections of it), with the
coverage matrix and SARIF's framework items read from the built-in risk map and
``--risk-map`` files.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart.cli import _select, _table
from rampart.cli._errors import EXIT_OK, CliError

if TYPE_CHECKING:
    from rampart.cli._inputs import SavedRun
    from rampart.cli._view import RunView
    from rampart.reporting import RunInfo, TestRunReport, TrialGroupSummary
    from rampart.risk import RiskMap

__all__ = ["build_report", "register", "run"]

_DESCRIPTION = """\
Re-render saved runs (JSON reports and JSONL trace files) as the terminal safety
summary, an HTML report (--html), a JSON report (--json) or a SARIF 2.1.0 log
(--sarif). A directory stands for its latest run; --merge merges the shards of one
run (runs that ran the same test are refused unless --allow-overlap). A JSON report
holds no attachments, injections or timestamps; a JSONL trace has everything, so
prefer it for --html.
"""

_EPILOG = """\
examples:
  rampart report .report/traces_2026-04-25T14-30-00-123.jsonl --summary groups
  rampart report .report                   # the latest run written to .report
  rampart report shard1.jsonl shard2.jsonl --merge --html merged.html --json merged.json -q
  rampart report artifacts/ --merge --json merged.json   # each shard's latest run
  rampart report .report/traces_*.jsonl --sarif rampart.sarif --risk-map risks.json -q
"""


#: What ``rampart report`` reads when given no path: where ``--rampart-report-dir .report``
#: (the README's and ``make demo``'s choice) and ``rampart scan`` write.
DEFAULT_DIRECTORY = ".report"


def register(commands: Any) -> None:
    from rampart.cli._summary import MODES

    parser = commands.add_parser(
        "report",
        help="re-render saved runs: terminal summary, HTML, merged JSON or SARIF report",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="a JSON report, JSONL trace or journal, or a report directory (its latest "
        "run; default: .report); with --merge, several (the shards of one run, or the "
        "artifacts of CI shards)",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="merge the runs given (each file, and the latest run of each report directory) "
        "as the shards of one run; runs that ran a test in common are refused",
    )
    parser.add_argument(
        "--allow-overlap",
        action="store_true",
        help="with --merge: merge runs even when they ran the same tests (they count twice)",
    )
    parser.add_argument(
        "--summary",
        choices=MODES,
        default="all",
        help="all: a line per result; groups: a line per trial group; failures: only "
        "what did not pass (default: all)",
    )
    parser.add_argument("--html", metavar="OUT", help="write the HTML report to OUT")
    parser.add_argument("--json", metavar="OUT", help="write the merged JSON report to OUT")
    parser.add_argument("--sarif", metavar="OUT", help="write a SARIF 2.1.0 log to OUT")
    parser.add_argument(
        "--risk-map",
        metavar="FILE",
        action="append",
        default=[],
        help="a risk map file (rampart.risk-map.v1) extending the built-in mapping to "
        "framework items, for the coverage matrix and SARIF (repeatable)",
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="write the files only, print nothing"
    )
    parser.set_defaults(run=run)


def _metadata(runs: list[SavedRun]) -> dict[str, Any]:
    if len(runs) == 1:
        return dict(runs[0].metadata)
    return {
        "merged_from": [str(run.path) for run in runs],
        "runs": [run.metadata for run in runs],
    }


def _run_info(runs: list[SavedRun], duration: float) -> RunInfo:
    """The ``run`` section: a report's own for one report, else what the files tell."""
    from rampart.reporting import RunInfo

    if len(runs) == 1 and runs[0].run is not None:
        try:
            return RunInfo.from_json(runs[0].run)
        except (TypeError, ValueError):
            pass
    reasons = [
        f"{run.path}: {reason}"
        for run in runs
        for reason in [
            *(run.metadata.get("incomplete_reasons") or []),
            *((run.run or {}).get("incomplete_reasons") or []),
        ]
        if isinstance(reason, str)
    ]
    incomplete = bool(reasons) or any(
        run.metadata.get("incomplete") or (run.run or {}).get("incomplete") for run in runs
    )
    interrupted = any(
        (run.run or {}).get("interrupted") is True or run.metadata.get("interrupted") is True
        for run in runs
    )
    return RunInfo(
        duration_seconds=duration,
        interrupted=interrupted,
        incomplete=incomplete,
        incomplete_reasons=reasons,
    )


def build_report(
    runs: list[SavedRun], view: RunView, risk_map: RiskMap | None = None
) -> TestRunReport:
    """One ``TestRunReport`` over the merged records, with their trial groups and run
    section (what ``--html``, ``--json`` and ``--sarif`` render)."""
    from rampart.reporting import TestRunReport

    duration = sum(run.duration_seconds for run in runs if run.duration_seconds is not None)
    return TestRunReport.from_results(
        [record.result for record in view.records],
        duration_seconds=duration,
        metadata=_metadata(runs),
        trial_groups=sorted(view.groups.values(), key=_by_nodeid),
        run=_run_info(runs, duration),
        risk_map=risk_map,
    )


def _risk_map(paths: list[str]) -> RiskMap | None:
    """The built-in risk map extended by ``--risk-map`` files; None without one."""
    if not paths:
        return None
    from rampart.risk import RiskMap

    try:
        # Named as the pytest plugin names them in a report's coverage origins.
        return RiskMap.load([Path(path).absolute() for path in paths])
    except (OSError, ValueError) as error:
        raise CliError(f"--risk-map: {error}") from None


def _by_nodeid(group: TrialGroupSummary) -> str:
    return group.nodeid


def _render_html(report: TestRunReport) -> bytes:
    from rampart.reporting._internal import render_html

    return render_html(report)


def _incomplete(runs: list[SavedRun]) -> list[str]:
    lines = []
    for run in runs:
        if run.metadata.get("interrupted") is True or (run.run or {}).get("interrupted") is True:
            lines.append(f"WARNING: {run.path} is an interrupted run: what finished is kept")
        reasons = run.metadata.get("incomplete_reasons") or []
        if run.metadata.get("incomplete") or (run.run or {}).get("incomplete"):
            reasons = reasons or (run.run or {}).get("incomplete_reasons") or ["reason unknown"]
            for reason in reasons:
                lines.append(f"WARNING: {run.path} is an incomplete run: {_table.cell(reason)}")
    return lines


def run(args: argparse.Namespace) -> int:
    from rampart.cli._summary import summary_lines
    from rampart.cli._view import build_view
    from rampart.reporting import ReportError
    from rampart.reporting._internal import render_report

    risk_map = _risk_map(args.risk_map)
    if args.merge:
        selection = _select.merged_runs(
            args.paths or [DEFAULT_DIRECTORY], allow_overlap=args.allow_overlap
        )
    elif args.allow_overlap:
        raise CliError("--allow-overlap: only with --merge (it says which runs may be merged)")
    else:
        selection = _select.single_run(args.paths or [DEFAULT_DIRECTORY])
    runs = selection.runs
    view = build_view(runs)
    written = []
    if args.html or args.json or args.sarif:
        from rampart.reporting._internal import render_sarif

        try:
            report = build_report(runs, view, risk_map)
            outputs = []
            if args.html:
                outputs.append((Path(args.html), _render_html(report)))
            if args.json:
                outputs.append((Path(args.json), render_report(report)))
            if args.sarif:
                outputs.append((Path(args.sarif), render_sarif(report)))
        except ReportError as error:
            raise CliError(str(error)) from None
        for path, _data in outputs:
            _table.output_target(path)  # every output checked before any is written
        for path, data in outputs:
            try:
                written.append(_table.write_text(path, data.decode("utf-8")))
            except OSError as error:
                raise CliError(f"cannot write {path}: {error.strerror or error}") from None
    if not args.quiet:
        files = len(runs)
        plural = "s" if files != 1 else ""
        title = f" RAMPART Safety Summary ({len(view.records)} runs, {files} file{plural}) "
        print(title.center(80, "="))
        for note in selection.notes:
            print(_table.cell(note))
        if files > 1:
            print(f"merged {files} runs: {', '.join(_table.cell(str(r.path)) for r in runs)}")
        for line in _incomplete(runs):
            print(line)
        for line in summary_lines(view, mode=args.summary):
            print(line)
    if not args.quiet:
        for path in written:
            print(f"wrote {path}")
    return EXIT_OK
