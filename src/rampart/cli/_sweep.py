"""``rampart sweep --concurrency 1,4,16,auto -- PYTEST_ARGS...``: compare concurrency settings.

The selected tests run once per setting, each in a fresh ``python -m pytest`` process
with ``--rampart-concurrency SETTING`` (trial clones run at once) and
``--rampart-report-dir`` (the run's JSON report, JSONL trace and HTML report land in
``OUT/<setting>/``). The probe plugin ``_sweep_probe`` records turn latencies. From
each run: wall time, trials per second (results over the test session's duration),
p50/p95 turn latency, requests, 429 answers and retries (summed over the limiters in
the report's ``metadata["limits"]``), ERROR results, and a paired verdict check
against the baseline setting: results are paired by node id and result index (trial
clone ``[trial-3]`` with ``[trial-3]``; the same seeds give the same verdicts unless
concurrency changes something), and McNemar's exact test says whether SAFE/not-SAFE
changes lean one way.

The table is printed and written as ``sweep.json`` and ``sweep.csv``; the chart as
``sweep.png`` and ``sweep.svg`` when matplotlib (the ``bench`` extra) is installed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from rampart._pacing import parse_concurrency
from rampart.cli import _table
from rampart.cli._errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, CliError
from rampart.cli._inputs import SavedRun

__all__ = [
    "Outcome",
    "Row",
    "build_row",
    "conclusion",
    "draw_chart",
    "parse_settings",
    "pytest_command",
    "register",
    "run",
    "table_rows",
]

_DESCRIPTION = """\
Run the selected tests once per concurrency setting (each in a fresh pytest process,
with --rampart-concurrency SETTING) and compare: wall time, trials/s, p50/p95 turn
latency, requests, 429 answers, retries, ERROR results, and whether any verdict
changed against the baseline setting (paired by trial index; McNemar's exact test).
Writes OUT/sweep.json, OUT/sweep.csv and, with matplotlib (pip install
'rampart[bench]'), OUT/sweep.png and OUT/sweep.svg; each run's reports go to
OUT/<setting>/.
"""

_EPILOG = """\
example:
  rampart sweep --concurrency 1,4,16,64,auto -- tests/test_xpia.py -k exfil

exit status: 0 every setting ran and no verdict changed; 1 a setting changed a verdict
against the baseline; 2 a setting could not run (pytest usage error, crash, no report).
"""

_SETTING_HELP = "comma-separated settings: integers >= 1 and 'auto' (e.g. 1,4,16,64,auto)"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "sweep",
        help="run the same tests at several concurrency settings and compare",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--concurrency", required=True, metavar="LIST", help=_SETTING_HELP)
    parser.add_argument(
        "--baseline",
        metavar="SETTING",
        help="the setting verdicts are compared with (default: the first)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where the table, chart and each run's reports go (default: .report/sweep_<UTC time>)",
    )
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="stop a run that takes longer"
    )
    parser.add_argument("--no-chart", action="store_true", help="do not draw the chart")
    parser.add_argument(
        "pytest_args",
        nargs="*",
        metavar="-- PYTEST_ARGS",
        help="arguments for pytest (tests to select, -k, -n 2, ...), after --",
    )
    parser.set_defaults(run=run)


def parse_settings(text: str) -> list[str]:
    """``"1,4,auto"`` -> ``["1", "4", "auto"]``; :class:`CliError` for anything else."""
    settings = [part.strip() for part in text.split(",") if part.strip()]
    if not settings:
        raise CliError(f"--concurrency must list settings ({_SETTING_HELP}), got {text!r}")
    for setting in settings:
        if parse_concurrency(setting) is None:
            raise CliError(f"--concurrency: {setting!r} is not a setting ({_SETTING_HELP})")
    duplicates = sorted({s for s in settings if settings.count(s) > 1})
    if duplicates:
        raise CliError(f"--concurrency names {', '.join(duplicates)} more than once")
    return settings


# --------------------------------------------------------------------------- one run


@attrs.frozen(kw_only=True)
class Outcome:
    """What one pytest process left: its exit status, time, report and latencies."""

    setting: str
    exit_status: int | None
    wall_seconds: float
    saved: SavedRun | None
    latencies: list[float]
    error: str | None = None


def _last_lines(log: Path, count: int = 3) -> str:
    try:
        lines = [line for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError:
        return ""
    return " | ".join(_table.cell(line) for line in lines[-count:])


def pytest_command(setting: str, pytest_args: list[str], directory: Path) -> list[str]:
    """The pytest process of one setting: the user's arguments, then sweep's own."""
    return [
        sys.executable,
        "-m",
        "pytest",
        *pytest_args,
        f"--rampart-concurrency={setting}",
        f"--rampart-report-dir={directory}",
        "-p",
        "rampart.cli._sweep_probe",
    ]


def _run_one(setting: str, pytest_args: list[str], out: Path, timeout: float | None) -> Outcome:
    from rampart.cli import _inputs
    from rampart.cli._sweep_probe import LATENCY_DIR_ENV

    directory = out / setting
    directory.mkdir(parents=True, exist_ok=True)
    latency_dir = directory / "latency"
    # An --out used before holds an earlier sweep's files: this run reads only its own.
    for stale in latency_dir.glob("latency_*.json"):
        stale.unlink()
    earlier = set(directory.glob("run_report_*.json"))
    command = pytest_command(setting, pytest_args, directory)
    env = {**os.environ, LATENCY_DIR_ENV: str(latency_dir)}
    log = directory / "pytest.log"
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as output:
        try:
            completed = subprocess.run(
                command,
                stdout=output,
                stderr=subprocess.STDOUT,
                env=env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Outcome(
                setting=setting,
                exit_status=None,
                wall_seconds=time.monotonic() - started,
                saved=None,
                latencies=[],
                error=f"timed out after {timeout} s (log: {log})",
            )
    wall = time.monotonic() - started
    latencies, error = _read_latencies(latency_dir)
    reports = sorted(set(directory.glob("run_report_*.json")) - earlier)
    saved = None
    if completed.returncode not in (0, 1):
        error = f"pytest exited with status {completed.returncode}: {_last_lines(log)}"
    elif not reports:
        error = f"pytest wrote no report (log: {log})"
    elif error is None:
        try:
            saved = _inputs.load_run(reports[-1])
        except CliError as problem:
            error = str(problem)
    return Outcome(
        setting=setting,
        exit_status=completed.returncode,
        wall_seconds=wall,
        saved=saved,
        latencies=latencies,
        error=error,
    )


_MAX_LATENCY_FILE = 64 * 1024 * 1024


def _read_latencies(directory: Path) -> tuple[list[float], str | None]:
    """The turn latencies the probe wrote (seconds), or what is wrong with a file: they
    are input like any other file (strict JSON, a list of finite numbers >= 0)."""
    from rampart.codec import parse_strict_json

    latencies: list[float] = []
    for path in sorted(directory.glob("latency_*.json")):
        try:
            if path.stat().st_size > _MAX_LATENCY_FILE:
                raise ValueError(f"larger than {_MAX_LATENCY_FILE} bytes")
            values = parse_strict_json(data=path.read_text(encoding="utf-8"))
            if not isinstance(values, list) or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values
            ):
                raise ValueError("expected a list of seconds >= 0")
        except (OSError, UnicodeDecodeError, ValueError) as problem:
            return [], f"unreadable latency file {path} ({_table.cell(str(problem))})"
        latencies.extend(float(v) for v in values)
    return latencies, None


# --------------------------------------------------------------------------- the table


@attrs.frozen(kw_only=True)
class Row:
    """One setting's line of the comparison table (``None``: not measured)."""

    setting: str
    exit_status: int | None
    wall_seconds: float
    session_seconds: float | None
    results: int
    trials_per_second: float | None
    p50_latency_ms: float | None
    p95_latency_ms: float | None
    requests: int | None
    rate_limited: int | None
    retries: int | None
    errors: int
    paired: int
    changed: int
    safe_to_not_safe: int
    not_safe_to_safe: int
    mcnemar_p: float | None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile; ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(fraction * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _limit_totals(metadata: dict[str, Any]) -> tuple[int | None, int | None, int | None]:
    limits = metadata.get("limits")
    if not isinstance(limits, dict) or not limits:
        return None, None, None
    totals = [0, 0, 0]
    for entry in limits.values():
        if isinstance(entry, dict):
            for position, key in enumerate(("requests", "rate_limited", "retries")):
                value = entry.get(key, 0)
                totals[position] += value if isinstance(value, int) else 0
    return totals[0], totals[1], totals[2]


def _verdicts(saved: SavedRun) -> dict[tuple[str, int], str]:
    keyed = {}
    for position, record in enumerate(saved.records):
        nodeid = record.pytest_nodeid or f"record {position}"
        keyed[(nodeid, record.result_index or 0)] = record.result.status.value
    return keyed


def _changes(
    base: dict[tuple[str, int], str], other: dict[tuple[str, int], str]
) -> list[dict[str, Any]]:
    return [
        {"nodeid": key[0], "result_index": key[1], "baseline": base[key], "status": other[key]}
        for key in sorted(set(base) & set(other))
        if base[key] != other[key]
    ]


def build_row(outcome: Outcome, baseline: Outcome | None) -> tuple[Row, list[dict[str, Any]]]:
    """The table row of ``outcome`` and its verdict changes against ``baseline``."""
    from rampart.core._internal import mcnemar
    from rampart.core.result import SafetyStatus

    saved = outcome.saved
    empty: dict[str, Any] = {
        "session_seconds": None,
        "results": 0,
        "trials_per_second": None,
        "requests": None,
        "rate_limited": None,
        "retries": None,
        "errors": 0,
        "paired": 0,
        "changed": 0,
        "safe_to_not_safe": 0,
        "not_safe_to_safe": 0,
        "mcnemar_p": None,
    }
    p50 = _percentile(outcome.latencies, 0.5)
    p95 = _percentile(outcome.latencies, 0.95)
    common: dict[str, Any] = {
        "setting": outcome.setting,
        "exit_status": outcome.exit_status,
        "wall_seconds": outcome.wall_seconds,
        "p50_latency_ms": None if p50 is None else p50 * 1000,
        "p95_latency_ms": None if p95 is None else p95 * 1000,
        "error": outcome.error,
    }
    if saved is None:
        return Row(**common, **empty), []
    session = saved.run.get("duration_seconds") if saved.run else None
    if not isinstance(session, int | float) or session <= 0:
        session = saved.duration_seconds
    results = len(saved.records)
    requests, limited, retries = _limit_totals(saved.metadata)
    changes: list[dict[str, Any]] = []
    paired = 0
    if baseline is not None and baseline.saved is not None:
        base, mine = _verdicts(baseline.saved), _verdicts(saved)
        paired = len(set(base) & set(mine))
        changes = _changes(base, mine)
    safe = SafetyStatus.SAFE.value
    down = sum(1 for c in changes if c["baseline"] == safe and c["status"] != safe)
    up = sum(1 for c in changes if c["baseline"] != safe and c["status"] == safe)
    row = Row(
        **common,
        session_seconds=session,
        results=results,
        trials_per_second=results / session if session else None,
        requests=requests,
        rate_limited=limited,
        retries=retries,
        errors=sum(1 for r in saved.records if r.result.status is SafetyStatus.ERROR),
        paired=paired,
        changed=len(changes),
        safe_to_not_safe=down,
        not_safe_to_safe=up,
        mcnemar_p=mcnemar(down, up) if baseline is not None else None,
    )
    return row, changes


_HEADER = [
    "concurrency",
    "wall s",
    "trials/s",
    "p50 ms",
    "p95 ms",
    "requests",
    "429s",
    "retries",
    "ERROR",
    "verdicts vs baseline",
]


def _number(value: float | None, digits: int) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _verdict_cell(row: Row, baseline: str) -> str:
    if row.error is not None:
        return f"did not run: {row.error}"
    if row.setting == baseline:
        return "baseline"
    if not row.changed:
        return f"same ({row.paired} paired)"
    return f"{row.changed} of {row.paired} changed, McNemar p={row.mcnemar_p:.2g}"


def table_rows(rows: list[Row], baseline: str) -> list[list[object]]:
    return [
        [
            row.setting,
            _number(row.wall_seconds, 2),
            _number(row.trials_per_second, 1),
            _number(row.p50_latency_ms, 1),
            _number(row.p95_latency_ms, 1),
            row.requests,
            row.rate_limited,
            row.retries,
            row.errors if row.error is None else None,
            _verdict_cell(row, baseline),
        ]
        for row in rows
    ]


def conclusion(rows: list[Row], baseline: str) -> str:
    """One sentence: did a setting faster than the baseline change any verdict?"""
    base = next(row for row in rows if row.setting == baseline)
    changed = [row for row in rows if row.setting != baseline and row.changed]
    faster = [
        row
        for row in rows
        if row.setting != baseline
        and row.trials_per_second is not None
        and base.trials_per_second is not None
        and row.trials_per_second > base.trials_per_second
    ]
    if not changed:
        if not faster:
            return f"No setting changed a verdict against concurrency {baseline}."
        names = ", ".join(row.setting for row in faster)
        return (
            f"No verdict changed: the faster settings ({names}) agree with concurrency {baseline}."
        )
    parts = [
        f"{row.setting} changed {row.changed} of {row.paired} (McNemar p={row.mcnemar_p:.2g}"
        f"{', faster' if row in faster else ''})"
        for row in changed
    ]
    return f"Verdicts changed against concurrency {baseline}: " + "; ".join(parts) + "."


# --------------------------------------------------------------------------- the chart


def draw_chart(rows: list[Row], out: Path) -> list[Path] | str:
    """``sweep.png`` and ``sweep.svg``; a message instead when matplotlib is missing."""
    try:
        import matplotlib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install 'rampart[bench]')"
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # type: ignore[import-not-found,unused-ignore]

    ran = [row for row in rows if row.error is None]
    names = [row.setting for row in ran]
    figure, (speed, latency) = plt.subplots(1, 2, figsize=(10, 4))
    speed.bar(names, [row.trials_per_second or 0.0 for row in ran], color="#4c72b0")
    speed.set_title("throughput")
    speed.set_xlabel("--rampart-concurrency")
    speed.set_ylabel("trials/s")
    for index, row in enumerate(ran):
        if row.rate_limited:
            speed.annotate(f"{row.rate_limited}x429", (index, row.trials_per_second or 0.0))
    positions = range(len(ran))
    latency.plot(positions, [row.p50_latency_ms or 0.0 for row in ran], marker="o", label="p50")
    latency.plot(positions, [row.p95_latency_ms or 0.0 for row in ran], marker="s", label="p95")
    latency.set_xticks(list(positions), names)
    latency.set_title("turn latency")
    latency.set_xlabel("--rampart-concurrency")
    latency.set_ylabel("ms")
    latency.legend()
    figure.tight_layout()
    written = []
    for suffix in (".png", ".svg"):
        path = out / f"sweep{suffix}"
        figure.savefig(path)
        written.append(path)
    plt.close(figure)
    return written


# --------------------------------------------------------------------------- command


def run(args: argparse.Namespace) -> int:
    from rampart.reporting._internal import utc_timestamp

    settings = parse_settings(args.concurrency)
    baseline = args.baseline or settings[0]
    if baseline not in settings:
        raise CliError(f"--baseline {baseline!r} is not one of the settings {settings}")
    if args.timeout is not None and args.timeout <= 0:
        raise CliError(f"--timeout must be a number of seconds > 0, got {args.timeout}")
    pytest_args = list(args.pytest_args)
    for option in ("--rampart-concurrency", "--rampart-report-dir"):
        if any(arg == option or arg.startswith(option + "=") for arg in pytest_args):
            raise CliError(f"{option} is set by sweep for each run; leave it out of PYTEST_ARGS")
    out = Path(args.out) if args.out else Path(".report") / f"sweep_{utc_timestamp()}"
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {out} is a file, not a directory")
    out.mkdir(parents=True, exist_ok=True)
    outcomes: dict[str, Outcome] = {}
    for setting in [baseline, *[s for s in settings if s != baseline]]:
        print(f"running concurrency {setting} ...", flush=True)
        outcomes[setting] = _run_one(setting, pytest_args, out, args.timeout)
    rows, changes = [], {}
    for setting in settings:
        row, changed = build_row(outcomes[setting], outcomes[baseline])
        if setting == baseline:
            row = attrs.evolve(row, mcnemar_p=None)
        rows.append(row)
        changes[setting] = changed
    lines = _table.format_table(_HEADER, table_rows(rows, baseline), right=range(1, 9))
    print()
    for line in lines:
        print(line)
    print()
    print(
        conclusion(rows, baseline)
        if outcomes[baseline].error is None
        else (f"The baseline ({baseline}) did not run, so no verdict was compared.")
    )
    document = {
        "pytest_args": pytest_args,
        "baseline": baseline,
        "rows": [row.as_dict() for row in rows],
        "verdict_changes": changes,
    }
    _table.write_text(out / "sweep.json", _table.dump_json(document))
    _table.write_text(
        out / "sweep.csv",
        _table.csv_text(list(attrs.fields_dict(Row)), [list(r.as_dict().values()) for r in rows]),
    )
    written = [out / "sweep.json", out / "sweep.csv"]
    if not args.no_chart:
        chart = draw_chart(rows, out)
        if isinstance(chart, str):
            print(chart)
        else:
            written.extend(chart)
    print("wrote " + ", ".join(str(path) for path in written))
    if any(row.error is not None for row in rows):
        return EXIT_USAGE
    return EXIT_FINDINGS if any(row.changed for row in rows) else EXIT_OK
