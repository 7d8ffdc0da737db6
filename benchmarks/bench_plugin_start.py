"""Plugin start benchmark: what rampart adds to a one-test pytest run.

Every pytest run in a project with rampart installed loads the plugin, so its cost is
paid by runs that never touch rampart. This writes a project with one trivial test
into a temporary directory and runs ``python -m pytest`` there, interleaved (with the
plugin, without it, with, ...), ``--rounds`` times each (default 9), and keeps the best
wall time of each. The added time is ``best(with) - best(without)``; the target is
**<= 60 ms**. On a machine whose speed drifts (a shared VM: the same run without the
plugin takes 0.19 s in one minute and 0.24 s in the next), the best of each side can
come from different minutes; the median of the paired differences (each round's
with-run minus the without-run right after it) is printed beside it, with its
quartiles, so a reader can tell a real change from the drift.

"Without" is the same command with ``-p no:rampart``. ``--lean`` (the default) also
turns off plugin autoloading (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``) and loads rampart
alone with ``-p rampart.pytest_plugin.plugin``, so other installed plugins (which may
import anyio, trio or attrs for their own reasons) neither hide nor add to rampart's
cost: the figure a lean project venv would see. ``--all-plugins`` keeps autoloading.

``--importtime`` prints, for one extra run with the plugin, the slowest modules that
the run without it does not import (``python -X importtime``), to find what to defer.

Run ``python benchmarks/bench_plugin_start.py`` (about 20 s on a quiet machine) or
``--quick`` (3 rounds each) to check that it works. The load average is printed with
the table: on a busy machine the added time is inflated along with everything else.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_MS = 60.0
TEST = "def test_one():\n    assert 1 + 1 == 2\n"


def _command(*, with_plugin: bool, lean: bool, importtime: bool = False) -> list[str]:
    command = [sys.executable]
    if importtime:
        command += ["-X", "importtime"]
    command += ["-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if lean:
        if with_plugin:
            command += ["-p", "rampart.pytest_plugin.plugin"]
    elif not with_plugin:
        command += ["-p", "no:rampart"]
    return command


def _environment(*, lean: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTEST_ADDOPTS", None)
    # Cached bytecode, as in a project venv: without it each module is compiled anew.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if lean:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(project: Path, command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU time suffers less from a busy machine)."""
    start, cpu = time.perf_counter(), _cpu()
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed, _cpu() - cpu


def _imports(project: Path, command: list[str], env: dict[str, str]) -> dict[str, int]:
    """Module -> self time (us) of one run under ``-X importtime``."""
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True)
    found: dict[str, int] = {}
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.removeprefix("import time:").split("|")
        found[name.strip()] = int(self_us)
    return found


def _slowest(project: Path, *, lean: bool, rounds: int, shown: int = 15) -> list[str]:
    """The modules the plugin adds, each with its least self time over ``rounds`` runs
    (the least is the one a busy machine inflated least)."""
    env = _environment(lean=lean)
    without: set[str] = set()
    with_plugin: dict[str, int] = {}
    for _ in range(rounds):
        without |= set(
            _imports(project, _command(with_plugin=False, lean=lean, importtime=True), env)
        )
        for name, us in _imports(
            project, _command(with_plugin=True, lean=lean, importtime=True), env
        ).items():
            with_plugin[name] = min(us, with_plugin.get(name, us))
    added = {name: us for name, us in with_plugin.items() if name not in without}
    lines = [
        f"modules the plugin adds: {len(added)}, self import time {sum(added.values()) / 1000:.1f}"
        f" ms (least of {rounds} runs each)"
    ]
    for name, us in sorted(added.items(), key=lambda item: -item[1])[:shown]:
        lines.append(f"  {us / 1000:7.1f} ms  {name}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=9, help="runs of each kind (best kept)")
    parser.add_argument("--quick", action="store_true", help="3 rounds: a smoke run")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--lean", dest="lean", action="store_true", default=True)
    mode.add_argument("--all-plugins", dest="lean", action="store_false")
    parser.add_argument("--importtime", action="store_true", help="list the slowest added modules")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    if rounds < 1:
        parser.error("--rounds must be >= 1")

    with tempfile.TemporaryDirectory(prefix="rampart-bench-start-") as tmp:
        project = Path(tmp)
        (project / "test_one.py").write_text(TEST, encoding="utf-8")
        (project / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
        env = _environment(lean=args.lean)
        with_command = _command(with_plugin=True, lean=args.lean)
        without_command = _command(with_plugin=False, lean=args.lean)
        _run(project, without_command, env)  # warm the file cache and bytecode
        _run(project, with_command, env)
        times: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
        for _ in range(rounds):
            times["with"].append(_run(project, with_command, env))
            times["without"].append(_run(project, without_command, env))
        best_with = min(wall for wall, _ in times["with"])
        best_without = min(wall for wall, _ in times["without"])
        cpu_with = min(cpu for _, cpu in times["with"])
        cpu_without = min(cpu for _, cpu in times["without"])
        added_ms = (best_with - best_without) * 1000
        load = os.getloadavg()
        print(
            f"one-test pytest run, best of {rounds} interleaved "
            f"({'lean: autoload off' if args.lean else 'all installed plugins'})"
        )
        print(f"load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
        print(f"{'run':<24}{'best s':>10}{'ratio':>10}{'best CPU s':>12}")
        print(f"{'without rampart':<24}{best_without:>10.3f}{1.0:>10.2f}{cpu_without:>12.3f}")
        print(
            f"{'with rampart':<24}{best_with:>10.3f}{best_with / best_without:>10.2f}"
            f"{cpu_with:>12.3f}"
        )
        print(f"CPU added by the plugin: {(cpu_with - cpu_without) * 1000:.0f} ms")
        paired = [
            (with_run[0] - without_run[0]) * 1000
            for with_run, without_run in zip(times["with"], times["without"], strict=True)
        ]
        if len(paired) >= 2:
            low, median, high = statistics.quantiles(paired, n=4)
            print(f"paired differences: median {median:.0f} ms (quartiles {low:.0f}-{high:.0f} ms)")
        verdict = "PASS" if added_ms <= TARGET_MS else "MISS"
        print(f"added by the plugin: {added_ms:.0f} ms (target <= {TARGET_MS:.0f} ms): {verdict}")
        if args.importtime:
            print("\n".join(_slowest(project, lean=args.lean, rounds=rounds)))


if __name__ == "__main__":
    main()
