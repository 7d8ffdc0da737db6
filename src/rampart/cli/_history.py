"""``rampart history PATH...``: saved runs over time, and the regressions among them.

Every run under the paths (report directories, CI artifacts, files; ``_select.every_run``:
a resumed run once, as its resume), oldest first by the start time each recorded. For
each test and trial group: its pass rate over the runs with a Wilson interval, its
verdict in each run, the flips between consecutive runs, and the change-point test
(``_trend``) that says whether its pass rate fell and stayed lower. The terminal table,
``--json`` (the same data) and ``--html OUT`` (a self-contained page). Exit status 1
when a regression is significant, so CI can gate on it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart.cli import _select, _table
from rampart.cli._errors import EXIT_FINDINGS, EXIT_OK, CliError
from rampart.cli._trend import fraction, regression_line, when

if TYPE_CHECKING:
    from rampart.cli._inputs import SavedRun

__all__ = ["register", "run"]

_DESCRIPTION = """\
List saved runs over time (report directories, CI artifacts, JSON reports, JSONL
traces), oldest first by their recorded start times: per test and trial group the pass
rate over the runs with its interval, the verdict in each run, the flips, and a
change-point test for regressions over all the runs, not only the last two.
"""

_EPILOG = """\
the regression test: for each split point, a one-sided Fisher exact test of the runs
from it on against the runs before it; the smallest p-value times the number of splits
(Bonferroni), then Holm-adjusted across the tests and groups. A test regressed when
that is below --alpha; the output names the run where the drop began.

exit status: 0 no significant regression; 1 a significant regression; 2 a usage or
input error.

examples:
  rampart history .report
  rampart history artifacts/nightly-*/ --json > history.json
  rampart history .report --html history.html
"""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "history",
        help="runs over time: pass rates, flips and significant regressions",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="report directories (every run in them), CI artifacts, or report/trace files",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the regression test, after the adjustments (default: 0.05)",
    )
    parser.add_argument(
        "--last",
        type=int,
        metavar="N",
        help="only the N latest runs (default: every run found)",
    )
    parser.add_argument(
        "--changed",
        action="store_true",
        help="list only tests and groups whose verdict changed or that regressed",
    )
    parser.add_argument("--json", action="store_true", help="print the history as JSON")
    parser.add_argument("--html", metavar="OUT", help="write the history as an HTML page to OUT")
    parser.set_defaults(run=run)


def _interval(entry: dict[str, Any]) -> str:
    from rampart.core._internal import percent

    if not entry["executed"]:
        return "-"
    low, high = entry["interval"]
    return f"{percent(low)}-{percent(high)}"


def _changed(entry: dict[str, Any]) -> bool:
    return bool(entry["flips"] or entry["regressed"] or len(set(entry["verdicts"]) - {"-"}) > 1)


def _print(data: dict[str, Any], notes: list[str], *, changed_only: bool) -> None:
    runs = data["runs"]
    first, last = when(runs[0]["started_at"]), when(runs[-1]["started_at"])
    print(f"rampart history: {len(runs)} runs, {first} to {last} (UTC)")
    for note in notes:
        print(_table.cell(note))
    print()
    rows = [
        [
            str(entry["run"]),
            when(entry["started_at"]),
            (entry["run_id"] or "-")[:8],
            str(entry["results"]),
            "-" if entry["exit_status"] is None else str(entry["exit_status"]),
            ("interrupted " if entry["interrupted"] else "")
            + ("incomplete" if entry["incomplete"] else ""),
            _table.cell(entry["path"]),
        ]
        for entry in runs
    ]
    header = ["run", "started (UTC)", "run id", "results", "exit", "marks", "file"]
    for line in _table.format_table(header, rows, right=(0, 3)):
        print(f"  {line}")
    series = [entry for entry in data["series"] if not changed_only or _changed(entry)]
    print()
    unchanged = len(data["series"]) - len(series)
    print(
        f"Tests and trial groups ({len(series)} shown"
        + (f", {unchanged} that never changed hidden" if unchanged else "")
        + f"): pass rate over the runs with its {data['confidence']:.0%} Wilson interval; "
        "verdicts oldest first (P pass, F fail, U undetermined, E error, I inconclusive, "
        "? incomplete, - absent)"
    )
    rows = [
        [
            _table.cell(entry["nodeid"]) + (" (group)" if entry["kind"] == "group" else ""),
            fraction(entry["safe"], entry["executed"]),
            _interval(entry),
            entry["verdicts"],
            str(len(entry["flips"])),
            "REGRESSED" if entry["regressed"] else "",
        ]
        for entry in series
    ]
    header = ["test", "pass rate", "interval", "verdicts", "flips", ""]
    for line in _table.format_table(header, rows, right=(1, 4)):
        print(f"  {line}")
    flips = [(entry, flip) for entry in series for flip in entry["flips"]]
    if flips:
        print()
        print("Flips (verdict changes between consecutive runs):")
        for entry, flip in flips:
            print(
                f"  {_table.cell(entry['nodeid'])}: {flip['from'].upper()} -> "
                f"{flip['to'].upper()} in run {flip['run']}"
            )
    print()
    print(f"Regression test: {data['rule']} (alpha {data['alpha']}).")
    regressed = [entry for entry in data["series"] if entry["regressed"]]
    for entry in regressed:
        print(f"REGRESSED {_table.cell(regression_line(entry, runs))}")
    count = len(regressed)
    if count:
        print(f"{count} significant regression{'s' * (count != 1)} (alpha {data['alpha']})")
    else:
        print(f"no significant regression (alpha {data['alpha']})")


def _runs(args: argparse.Namespace) -> tuple[list[SavedRun], list[str]]:
    selection = _select.every_run(args.paths)
    runs, notes = selection.runs, list(selection.notes)
    undated = [run for run in runs if run.started_at is None]
    for run in undated:
        notes.append(f"{run.path}: records no start time: listed first")
    if args.last is not None:
        runs = runs[-args.last :]
    return runs, notes


def run(args: argparse.Namespace) -> int:
    from rampart.cli._trend import history

    if not 0 < args.alpha < 1:
        raise CliError(f"--alpha must be a number between 0 and 1, got {args.alpha}")
    if args.last is not None and args.last < 2:
        raise CliError(
            f"--last must be an integer of at least 2 (runs to compare), got {args.last}"
        )
    target = None if args.html is None else _table.output_target(Path(args.html))
    runs, notes = _runs(args)
    data = history(runs, alpha=args.alpha)
    if args.json:
        print(_table.dump_json(data), end="")
    else:
        _print(data, notes, changed_only=args.changed)
    if target is not None:
        from rampart.cli._history_html import render_page

        written = _table.write_text(target, render_page(data))
        if not args.json:
            print(f"wrote {written}")
    return EXIT_FINDINGS if data["regressions"] else EXIT_OK
