"""``rampart diff OLD NEW``: what changed between two runs, and whether it is a regression.

One rule for tests and trial groups, stated in the output (``rule``): each is compared
by pass rate (SAFE / runs; a test that is not a trial group is one run) with a one-sided
Fisher exact test, Holm-adjusted across every test and group compared; it regressed when
its pass rate fell and the adjusted p-value is below ``--alpha``. A verdict that flipped
on a move the test does not support (one UNSAFE clone in 30, or a single-run test that
became UNSAFE: "new finding (1 run: not significant)") is shown, but not called a
regression. ``--strict`` also counts a single-run test's flip (to UNSAFE, or from SAFE to
UNDETERMINED / ERROR) as a regression.

A group that either run cannot judge (its saved records do not decide it: INCOMPLETE)
is listed as incomplete and never compared: missing results are no evidence of an
improvement. Exit status 1 when anything regressed or a group of the new run is
incomplete, so CI can gate on it; ``--json`` prints the comparison as JSON.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart.cli import _inputs, _table
from rampart.cli._errors import EXIT_FINDINGS, EXIT_OK, CliError

if TYPE_CHECKING:
    from rampart.cli._inputs import SavedRun
    from rampart.cli._view import RunView, TestOutcome
    from rampart.reporting import TrialGroupSummary

__all__ = ["compare", "register", "run"]

_DESCRIPTION = """\
Compare two saved runs (JSON reports or JSONL trace files): tests whose verdict
changed, and trial groups whose pass rate moved, with a one-sided Fisher exact test
(Holm-adjusted across groups) so that noise is not called a regression.
"""

_EPILOG = """\
exit status: 0 no regression; 1 a significant regression (a test or group whose pass
rate fell significantly; with --strict also a single-run test that got worse) or a
group of NEW that its records do not decide (incomplete); 2 a usage or input error.

example (CI): rampart diff baseline/traces.jsonl .report/traces_*.jsonl --json > diff.json
"""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "diff",
        help="what changed between two runs; exit 1 on a significant regression",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "runs",
        nargs="*",
        metavar="OLD NEW",
        help="the baseline run and the run to compare with it (reports, traces, or report "
        "directories: each its latest run); one report directory: its two latest runs",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level for tests and groups, after the Holm adjustment (default: 0.05)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a test that is not a trial group and got worse (to UNSAFE, or from SAFE to "
        "UNDETERMINED or ERROR) is a regression too, though one run is never significant",
    )
    parser.add_argument("--all", action="store_true", help="list unchanged tests and groups too")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.set_defaults(run=run)


_WORSE = {"safe": 0, "undetermined": 1, "error": 1, "unsafe": 2}


#: How a plain test that became UNSAFE is listed: a finding, but one run on each side.
NEW_FINDING = "new finding (1 run: not significant)"


def _test_change(
    old: TestOutcome | None, new: TestOutcome | None, *, strict: bool, significant: bool
) -> str:
    if old is None:
        return "added"
    if new is None:
        return "removed"
    before, after = old.status.value, new.status.value
    if before == after:
        return "unchanged"
    if significant and before == "safe":
        return "regressed"  # the one rule (a single run never reaches it on its own)
    if strict and (after == "unsafe" or before == "safe"):
        return "regressed"  # --strict: a single-run flip counts
    if after == "unsafe":
        return NEW_FINDING
    if _WORSE[after] < _WORSE[before]:
        return "improved"
    return "changed"


def rule(alpha: float, compared: int) -> str:
    """The significance rule, as the output states it."""
    return (
        f"rule: a test or trial group regressed when its pass rate (SAFE / runs) fell with "
        f"a one-sided Fisher exact p below alpha {alpha}, Holm-adjusted over the "
        f"{compared} tests and groups compared; a test that is not a trial group is one run, "
        "so its flip alone is never significant (make it a trial group; --strict counts "
        "such flips)"
    )


def _incomplete_change(a: TrialGroupSummary, b: TrialGroupSummary) -> str | None:
    """How a group that one side cannot judge is listed: never as an improvement."""
    from rampart.cli._view import incomplete as undecided

    if undecided(b):
        return "incomplete (new run does not decide it)"
    if undecided(a):
        return "incomplete (old run does not decide it)"
    return None


def _group_side(group: TrialGroupSummary) -> dict[str, Any]:
    counts = group.counts
    return {
        "safe": counts.safe,
        "unsafe": counts.unsafe,
        "undetermined": counts.undetermined,
        "error": counts.error,
        "executed": group.executed,
        "pass_rate": group.pass_rate,
        "verdict": group.verdict,
    }


def compare(old: RunView, new: RunView, *, alpha: float, strict: bool) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (what ``--json`` prints)."""
    from rampart.cli._view import incomplete as undecided
    from rampart.core._internal import fisher_exact, holm

    both = sorted(set(old.groups) & set(new.groups))
    # A group either side cannot judge is not compared: missing results are never
    # evidence of a change (in either direction).
    unjudged = [n for n in both if _incomplete_change(old.groups[n], new.groups[n]) is not None]
    shared = [nodeid for nodeid in both if nodeid not in unjudged]
    plain = sorted(set(old.tests) & set(new.tests))
    # One rule for tests and groups: SAFE / runs on each side (a plain test is one run),
    # one-sided Fisher tests -- the evidence that the new pass rate is lower than the old
    # one, and that the old one is lower -- Holm-adjusted over everything compared.
    units = [
        (int(old.tests[n].status.value == "safe"), 1, int(new.tests[n].status.value == "safe"), 1)
        for n in plain
    ] + [
        (
            old.groups[n].counts.safe,
            old.groups[n].executed,
            new.groups[n].counts.safe,
            new.groups[n].executed,
        )
        for n in shared
    ]
    p_down = [fisher_exact(sb, nb, sa, na, alternative="less") for sa, na, sb, nb in units]
    p_up = [fisher_exact(sa, na, sb, nb, alternative="less") for sa, na, sb, nb in units]
    adjusted_down, adjusted_up = holm(p_down), holm(p_up)
    tests = []
    for nodeid in sorted(set(old.tests) | set(new.tests)):
        before, after = old.tests.get(nodeid), new.tests.get(nodeid)
        significant = nodeid in plain and adjusted_down[plain.index(nodeid)] < alpha
        tests.append(
            {
                "nodeid": nodeid,
                "old": None if before is None else before.status.value,
                "new": None if after is None else after.status.value,
                "change": _test_change(before, after, strict=strict, significant=significant),
                "summary": None if after is None else after.summary,
            }
        )
    groups = []
    for position, nodeid in enumerate(shared):
        index = len(plain) + position
        a, b = old.groups[nodeid], new.groups[nodeid]
        fell = b.pass_rate < a.pass_rate
        p_value = p_down[index] if fell else p_up[index]
        adjusted = adjusted_down[index] if fell else adjusted_up[index]
        significant = adjusted < alpha and b.pass_rate != a.pass_rate
        if significant:
            change = "regressed" if fell else "improved"
        elif a.verdict != b.verdict or b.pass_rate != a.pass_rate:
            change = "moved (not significant)"
        else:
            change = "unchanged"
        groups.append(
            {
                "nodeid": nodeid,
                "old": _group_side(a),
                "new": _group_side(b),
                "pass_rate_change": b.pass_rate - a.pass_rate,
                "p_value": p_value,
                "p_adjusted": adjusted,
                "significant": significant,
                "change": change,
            }
        )
    for nodeid in unjudged:
        a, b = old.groups[nodeid], new.groups[nodeid]
        groups.append(
            {
                "nodeid": nodeid,
                "old": _group_side(a),
                "new": _group_side(b),
                "pass_rate_change": None,
                "p_value": None,
                "p_adjusted": None,
                "significant": False,
                "change": _incomplete_change(a, b),
            }
        )
    for nodeid in sorted(set(old.groups) ^ set(new.groups)):
        side = old.groups.get(nodeid) or new.groups[nodeid]
        groups.append(
            {
                "nodeid": nodeid,
                "old": _group_side(side) if nodeid in old.groups else None,
                "new": _group_side(side) if nodeid in new.groups else None,
                "pass_rate_change": None,
                "p_value": None,
                "p_adjusted": None,
                "significant": False,
                "change": "removed" if nodeid in old.groups else "added",
            }
        )
    regressions = sum(t["change"] == "regressed" for t in tests) + sum(
        g["change"] == "regressed" for g in groups
    )
    incomplete = sum(nodeid in new.groups and undecided(new.groups[nodeid]) for nodeid in both)
    return {
        "alpha": alpha,
        "strict": strict,
        "rule": rule(alpha, len(units)),
        "tests": tests,
        "groups": groups,
        "regressions": regressions,
        "incomplete": incomplete,
    }


def _rate(side: dict[str, Any] | None) -> str:
    if side is None:
        return "-"
    from rampart.core._internal import percent

    return f"{side['safe']}/{side['executed']} ({percent(side['pass_rate'])}) {side['verdict']}"


def _print(comparison: dict[str, Any], old: str, new: str, *, everything: bool) -> None:
    print(f"rampart diff {_table.cell(old)} -> {_table.cell(new)}")
    tests = [t for t in comparison["tests"] if everything or t["change"] != "unchanged"]
    print()
    if tests:
        print(f"Tests ({len(tests)} changed):" if not everything else f"Tests ({len(tests)}):")
        rows = [
            [t["nodeid"], (t["old"] or "-").upper(), (t["new"] or "-").upper(), t["change"]]
            for t in tests
        ]
        for line in _table.format_table(["test", "old", "new", "change"], rows):
            print(f"  {line}")
    else:
        print("Tests: no verdict changed")
    groups = [g for g in comparison["groups"] if everything or g["change"] != "unchanged"]
    print()
    if groups:
        print(f"Trial groups ({len(groups)} moved):" if not everything else "Trial groups:")
        rows = []
        for g in groups:
            if g["p_value"] is None:
                p_text = "-"
            else:
                p_text = f"{g['p_value']:.3g} (Holm {g['p_adjusted']:.3g})"
            change = g["pass_rate_change"]
            rows.append(
                [
                    g["nodeid"],
                    _rate(g["old"]),
                    _rate(g["new"]),
                    "-" if change is None else f"{change * 100:+.1f} pts",
                    p_text,
                    g["change"],
                ]
            )
        header = ["group", "old", "new", "pass rate", "p (one-sided Fisher)", "change"]
        for line in _table.format_table(header, rows, right=(3,)):
            print(f"  {line}")
    else:
        print("Trial groups: no pass rate moved")
    print()
    count = comparison["regressions"]
    if comparison["incomplete"]:
        unjudged = comparison["incomplete"]
        print(
            f"{unjudged} trial group{'s' * (unjudged != 1)} of the new run cannot be judged "
            "(missing results): no regression can be ruled out"
        )
    print(comparison["rule"])
    if count:
        print(f"{count} significant regression{'s' * (count != 1)} (alpha {comparison['alpha']})")
    else:
        print(f"no significant regression (alpha {comparison['alpha']})")


def _runs(names: list[str]) -> tuple[SavedRun, SavedRun]:
    """OLD and NEW: two paths (a directory is its latest run), or one report directory
    (its two latest runs)."""
    from rampart.cli import _select

    if len(names) == 1 and Path(names[0]).is_dir():
        files = sorted(
            (file for files in _select.run_files(Path(names[0])).values() for file in files),
            key=_select.written_order,
        )
        if len(files) < 2:
            raise CliError(
                f"{names[0]}: holds one run; diff compares two (OLD NEW, or a directory "
                "holding two runs: its previous and its latest)"
            )
        return _inputs.load_run(files[-2]), _inputs.load_run(files[-1])
    if len(names) != 2:
        raise CliError(
            f"diff takes two runs (OLD NEW) or one report directory (its two latest runs), "
            f"got {len(names)} paths; to compare merged shards, merge them first: "
            "rampart report SHARD... --merge --json merged.json"
        )
    return _select.one_run(names[0])[0], _select.one_run(names[1])[0]


def run(args: argparse.Namespace) -> int:
    from rampart.cli._view import build_view

    if not 0 < args.alpha < 1:
        raise CliError(f"--alpha must be a number between 0 and 1, got {args.alpha}")
    old_run, new_run = _runs(args.runs)
    old_name, new_name = str(old_run.path), str(new_run.path)
    old, new = build_view([old_run]), build_view([new_run])
    comparison = compare(old, new, alpha=args.alpha, strict=args.strict)
    if args.json:
        print(_table.dump_json({"old": old_name, "new": new_name, **comparison}), end="")
    else:
        _print(comparison, old_name, new_name, everything=args.all)
    failing = comparison["regressions"] or comparison["incomplete"]
    return EXIT_FINDINGS if failing else EXIT_OK
