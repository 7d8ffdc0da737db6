"""AgentDojo through rampart against AgentDojo's own runner, on the same work.

Every model call of the pipeline takes ``--delay`` seconds (default 0.5; the scripted
reference pipeline sleeps, standing for a model): AgentDojo's runner
(``run_task_with_injection_tasks``, what ``benchmark_suite_with_injections`` calls
for each user task) takes the pairs one at a time; rampart runs them through
``rampart scan agentdojo`` (the command, running pytest in its own process with the
plugin, journal and reports) at ``--concurrency`` pairs in flight. Both use the same
pipeline (ground truth for the user task, carries out a read injection with
probability 0.5, seed 1), and the per-pair utility and security must be identical.

The same pairs also run through ``AgentDojoAgent`` inside this process (no command,
no pytest run, no second AgentDojo import): the "in-process" column.

Path (a) runs too: ``rampart scan agentdojo --model sim-agentdojo:follow=0.5,seed=1``
against the test server (a process) whose simulated tool-calling model takes
``--delay`` seconds per call, the same choices as the scripted pipeline.

Two measures, both sides: **(a)** the pairs' time after process
start -- AgentDojo's runner timed around its loop, rampart's scan by the call phase of
its test items (the longest, under ``-n``; a timing plugin loaded through
``PYTEST_ADDOPTS`` records it), both after their processes' start and AgentDojo's
imports, where the ratio targets below stand; **(b)** the whole process on both sides
-- AgentDojo's runner in a fresh ``python`` process of its own against the whole
``rampart scan agentdojo`` command, one process that imports AgentDojo once -- at zero
latency and at ``--delay``, with each side's time outside its pairs beside it (process
start, imports, and for rampart pytest and the reports) and each whole process's CPU
(user + system; at zero latency both sides are bound by one core, so on a busy machine
the CPU figures compare them where the wall times cannot). At zero latency rampart's
whole process must not be slower than AgentDojo's (``--only whole``).

Targets: rampart's pairs' time (a) <= 1/30 of AgentDojo's on banking and slack,
<= 1/15 on workspace in one process and <= 1/30 with ``-n 2``. Workspace's own
per-pair setup (YAML load, model build, deep copy) is CPU that bounds any one
process; it is measured and printed as the bound ``pairs x setup CPU``.

Rate-limited model: ``--rate-pairs`` banking pairs through ``--model`` against a test
server limited to ``--rate`` requests/s, with no rate given to rampart (it learns
it), once with the server stating no limit and once with OpenAI's
``x-ratelimit-*`` headers. Banking has 144 pairs; more than that run as trials of each
pair. Targets: >= 90 % of the rate served after the first 20 % of the run (the grid's
rule in ``bench_concurrency.py``; the whole run's share is printed beside it), <= 5 %
of requests answered 429, 0 ERROR.

Usage: ``python benchmarks/bench_agentdojo.py [--suites banking,slack,workspace]
[--user-tasks K] [--delay S] [--concurrency N] [--rate R] [--rate-pairs P]
[--only suites|whole|rate] [--quick]``. ``--user-tasks K`` takes the first K user tasks of
each suite with all its injection tasks (default: all of banking and slack, 20 of
workspace's 40).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio

PIPELINE_MODULE = """
from rampart.agentdojo.pipelines import ScriptedPipeline

def build():
    return ScriptedPipeline({suite!r}, follow=0.5, seed=1, delay={delay!r})
"""


def _loadavg() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as handle:
            return " ".join(handle.read().split()[:3])
    except OSError:
        return "n/a"


def agentdojo_run(
    suite_name: str, user_tasks: list[str], delay: float
) -> tuple[float, dict[str, tuple[bool, bool]]]:
    from agentdojo.benchmark import run_task_with_injection_tasks
    from agentdojo.logging import OutputLogger

    from rampart.agentdojo import load_attack, load_suite
    from rampart.agentdojo.pipelines import ScriptedPipeline

    suite = load_suite(suite_name)
    pipeline = ScriptedPipeline(suite_name, follow=0.5, seed=1, delay=delay)
    attack = load_attack("important_instructions", suite, pipeline)
    verdicts: dict[str, tuple[bool, bool]] = {}
    with tempfile.TemporaryDirectory() as logdir, OutputLogger(logdir):
        start = time.perf_counter()
        for user_id in user_tasks:
            utility, security = run_task_with_injection_tasks(
                suite, pipeline, suite.user_tasks[user_id], attack, Path(logdir), True
            )
            for (user, injection), useful in utility.items():
                verdicts[f"{suite_name}-{user}-{injection}"] = (useful, security[(user, injection)])
        return time.perf_counter() - start, verdicts


AGENTDOJO_PROCESS = """
import json, sys, time
sys.path.insert(0, {bench!r})
from bench_agentdojo import agentdojo_run
pairs_s, verdicts = agentdojo_run({suite!r}, {user_tasks!r}, {delay!r})
print(json.dumps({{"pairs_s": pairs_s, "verdicts": verdicts}}))
"""


#: Loaded into the scan's pytest run (``PYTEST_ADDOPTS``): the call phase of each of
#: its test items -- the pairs, after the process's start and AgentDojo's import.
TIMING_PLUGIN = """
import json, os

def pytest_runtest_logreport(report):
    if report.when == "call":
        with open(os.environ["BENCH_CALLS"], "a") as f:
            f.write(json.dumps(report.duration) + "\\n")
"""


def agentdojo_process(
    suite_name: str, user_tasks: list[str], delay: float
) -> tuple[float, float, dict[str, tuple[bool, bool]]]:
    """AgentDojo's runner in a fresh process of its own: the whole process's wall time,
    the pairs' time inside it, and the verdicts."""
    code = AGENTDOJO_PROCESS.format(
        bench=str(Path(__file__).parent), suite=suite_name, user_tasks=user_tasks, delay=delay
    )
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"AgentDojo's runner failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    verdicts = {key: (bool(u), bool(s)) for key, (u, s) in out["verdicts"].items()}
    return wall, float(out["pairs_s"]), verdicts


def scan_run(
    suite_name: str,
    user_tasks: list[str],
    delay: float,
    concurrency: int | str,
    agent: tuple[str, ...] = ("--pipeline", "bench_pipeline:build"),
) -> tuple[float, dict[str, tuple[bool, bool]], int]:
    """``rampart scan agentdojo`` with ``agent`` (a pipeline, or ``--model`` at a URL,
    plus any other options, e.g. ``-n 2``): the pairs' time after process start (the
    longest call phase of the scan's test items: one per shard, in parallel under
    ``-n``), verdicts and ERROR count (``scan_whole`` adds the whole process)."""
    whole, pairs_s, verdicts, errors = scan_whole(suite_name, user_tasks, delay, concurrency, agent)
    del whole
    return pairs_s, verdicts, errors


def scan_whole(
    suite_name: str,
    user_tasks: list[str],
    delay: float,
    concurrency: int | str,
    agent: tuple[str, ...] = ("--pipeline", "bench_pipeline:build"),
) -> tuple[float, float, dict[str, tuple[bool, bool]], int]:
    """The whole ``rampart scan agentdojo`` process's wall time, then as ``scan_run``."""
    with tempfile.TemporaryDirectory() as work:
        Path(work, "bench_pipeline.py").write_text(
            PIPELINE_MODULE.format(suite=suite_name, delay=delay)
        )
        Path(work, "bench_timing.py").write_text(TIMING_PLUGIN)
        calls = Path(work, "calls.jsonl")
        command = [
            str(Path(sys.executable).with_name("rampart")),
            "scan",
            "agentdojo",
            "--suite",
            suite_name,
            *agent,
            "--concurrency",
            str(concurrency),
            "--report-dir",
            "out",
        ]
        for user_id in user_tasks:
            command += ["--user-task", user_id]
        env = {**os.environ, "PYTHONPATH": work, "BENCH_CALLS": str(calls)}
        env["PYTEST_ADDOPTS"] = f"{env.get('PYTEST_ADDOPTS', '')} -p bench_timing".strip()
        start = time.perf_counter()
        done = subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - start
        if done.returncode not in (0, 1):
            raise SystemExit(
                f"scan failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
        (report_path,) = Path(work, "out").glob("run_report_*.json")
        report: dict[str, Any] = json.loads(report_path.read_text())
        verdicts: dict[str, tuple[bool, bool]] = {}
        errors = 0
        for entries in report["by_harm_category"].values():
            for entry in entries:
                facts = entry["metadata"].get("agentdojo")
                if facts is None:
                    errors += 1
                    continue
                key = f"{facts['suite']}-{facts['user_task']}-{facts['injection_task']}"
                verdicts[key] = (facts["utility"], facts["security"])
        pairs_s = max(float(line) for line in calls.read_text().split())
        return wall, pairs_s, verdicts, errors


async def in_process(
    suite_name: str, user_tasks: list[str], delay: float, concurrency: int
) -> tuple[float, dict[str, tuple[bool, bool]]]:
    """The same pairs through ``AgentDojoAgent`` in this process (no pytest, no import)."""
    from rampart.agentdojo import AgentDojoAgent, pairs
    from rampart.agentdojo.pipelines import ScriptedPipeline

    pipeline = ScriptedPipeline(suite_name, follow=0.5, seed=1, delay=delay)
    agent = AgentDojoAgent(pipeline, max_threads=concurrency)
    selected = pairs(suite_name, user_tasks=user_tasks)
    verdicts: dict[str, tuple[bool, bool]] = {}
    bound = anyio.CapacityLimiter(concurrency)

    async def one(index: int) -> None:
        async with bound:
            result = await agent.run(selected[index])
        facts = result.metadata.get("agentdojo", {})
        verdicts[selected[index].id] = (facts.get("utility"), facts.get("security"))

    start = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index in range(len(selected)):
            group.start_soon(one, index)
    return time.perf_counter() - start, verdicts


def setup_cpu(suite_name: str, samples: int = 5) -> float:
    """CPU seconds of AgentDojo's own per-pair setup: environment load + deep copy."""
    from rampart.agentdojo import load_suite

    suite = load_suite(suite_name)
    start = time.process_time()
    for _ in range(samples):
        environment = suite.load_and_inject_default_environment({})
        environment.model_copy(deep=True)
    return (time.process_time() - start) / samples


def _children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far: at zero
    latency each side is bound by one core (the GIL), so its CPU stands beside its wall
    time as the figure a busy machine disturbs least (the test server is a child too,
    but only the rate part starts one)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _row(cells: tuple[str, ...]) -> None:
    print(" | ".join(cells))


def compare_row(
    suite_name: str,
    mode: str,
    reference: tuple[float, dict[str, tuple[bool, bool]]],
    measured: tuple[float, dict[str, tuple[bool, bool]], int],
    target: int,
) -> bool:
    """One table row: a rampart mode against AgentDojo's runner on the same pairs."""
    reference_s, expected = reference
    wall, verdicts, errors = measured
    identical = verdicts == expected
    met = identical and errors == 0 and wall <= reference_s / target
    cells: tuple[str, ...] = (suite_name, mode, str(len(expected)), f"{reference_s:.1f}")
    cells += (f"{wall:.1f}", f"1/{reference_s / wall:.1f}", f"1/{target}")
    cells += (str(identical), str(errors))
    _row((*cells, "PASS" if met else "MISS"))
    return met


def _served_over_time(server: Any, stop: threading.Event) -> list[tuple[float, int]]:
    """``(seconds, served so far)`` every 0.25 s from the server's counters until
    ``stop`` (run in a thread beside the scan)."""
    samples: list[tuple[float, int]] = []
    start = time.perf_counter()
    while not stop.wait(0.25):
        samples.append((time.perf_counter() - start, server.statistics()["served"]))
    return samples


def steady_rate(samples: list[tuple[float, int]]) -> float:
    """Requests served per second after the first 20 % of the serving time (from the
    first served request to the last), the grid's rule: the learned rate's start is
    its own figure, not the steady share."""
    final = samples[-1][1]
    first_t = next(t for t, n in samples if n > 0)
    last_t = next(t for t, n in samples if n == final)
    t0, n0 = next((t, n) for t, n in samples if t >= first_t + 0.2 * (last_t - first_t))
    return (final - n0) / (last_t - t0) if last_t > t0 else 0.0


def rate_limited(pairs_wanted: int, rate: float, concurrency: int, headers: str) -> bool:
    """``rampart scan agentdojo --model`` against a simulated model limited to ``rate``
    requests/s, with no rate given to rampart (it learns it; ``headers``: how the
    server states its limit, ``none`` or ``openai``): the share of the rate it
    reaches after the first 20 % of the run (and over the whole run), the share of
    requests answered 429, and ERROR results. Banking has 144 pairs; more runs than
    that are trials (``--trials``) of each pair."""
    from rampart.agentdojo import load_suite
    from rampart.testing.server import server_process

    suite = load_suite("banking")
    users = list(suite.user_tasks)
    per_user = len(suite.injection_tasks)
    user_tasks = users[: max(1, min(len(users), -(-pairs_wanted // per_user)))]
    trials = max(1, -(-pairs_wanted // (len(user_tasks) * per_user)))
    burst = max(1, int(rate // 4))
    stop = threading.Event()
    with server_process(rate=rate, burst=burst, seed=1, rate_limit_headers=headers) as server:
        model = ("--model", "sim-agentdojo:follow=0.5,seed=1", "--base-url", server.url)
        model += ("--trials", str(trials))
        with ThreadPoolExecutor(max_workers=1) as pool:
            polling = pool.submit(_served_over_time, server, stop)
            try:
                run = scan_whole("banking", user_tasks, 0.0, concurrency, model)
                wall, _, verdicts, errors = run
            finally:
                stop.set()
            samples = polling.result()
        stats = server.statistics()
    samples.append((samples[-1][0] + 0.25 if samples else 0.0, stats["served"]))
    steady = steady_rate(samples) / rate
    whole = stats["served_per_second"] / rate
    refused = stats["rate_limited"] / max(1, stats["requests"])
    met = steady >= 0.9 and refused <= 0.05 and errors == 0
    print(
        f"rate-limited model: {len(verdicts)} banking pairs x {trials} trials, server rate "
        f"{rate:g}/s, limit headers {headers}, no rate given, concurrency {concurrency}: "
        f"{stats['served']} served in {stats['window_seconds']:.1f} s, "
        f"{steady:.1%} of the rate after the first 20 % (target >= 90%; whole run "
        f"{whole:.1%}), 429 {stats['rate_limited']}/{stats['requests']} ({refused:.1%}; "
        f"target <= 5%), ERROR {errors} (target 0), wall {wall:.1f} s: "
        f"{'PASS' if met else 'MISS'}"
    )
    return met


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suites", default="banking,slack,workspace")
    parser.add_argument("--user-tasks", type=int, default=None)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rate", type=float, default=20.0, help="the rate-limited model's rate")
    parser.add_argument("--rate-pairs", type=int, default=400, help="pairs against it")
    parser.add_argument(
        "--only",
        choices=("suites", "whole", "rate"),
        default=None,
        help="run one part of the benchmark",
    )
    parser.add_argument(
        "--quick", action="store_true", help="2 user tasks per suite, 0.05 s calls, 40 pairs"
    )
    args = parser.parse_args()
    if args.quick:
        args.user_tasks, args.delay, args.rate_pairs = 2, 0.05, 40
    ok = True
    if args.only in (None, "suites"):
        ok &= suites(args)
    if args.only in (None, "whole"):
        ok &= whole_processes(args)
    if args.only in (None, "rate"):
        for headers in ("none", "openai"):
            ok &= rate_limited(args.rate_pairs, args.rate, args.concurrency, headers)
    print(f"load average {_loadavg()}   RESULT: {'all targets met' if ok else 'a target missed'}")


def suites(args: argparse.Namespace) -> bool:
    """Each suite: AgentDojo's runner, then rampart's modes on the same pairs."""
    from rampart.agentdojo import load_suite
    from rampart.testing.server import server_process

    print(
        f"(a) the pairs' time after process start: delay {args.delay} s per model call, "
        f"concurrency {args.concurrency}, "
        f"load average {_loadavg()}"
    )
    columns = ("suite", "rampart mode", "pairs", "AgentDojo pairs s", "rampart pairs s")
    columns += ("ratio", "target")
    _row((*columns, "identical", "ERROR", "result"))
    ok = True
    for suite_name in args.suites.split(","):
        every = list(load_suite(suite_name).user_tasks)
        count = args.user_tasks or (20 if suite_name == "workspace" else len(every))
        user_tasks = every[:count]
        reference = agentdojo_run(suite_name, user_tasks, args.delay)
        run = (suite_name, user_tasks, args.delay, args.concurrency)
        target = 15 if suite_name == "workspace" else 30
        ok &= compare_row(suite_name, "scan --pipeline", reference, scan_run(*run), target)
        inner_s, inner = anyio.run(in_process, *run)
        ok &= compare_row(suite_name, "in-process", reference, (inner_s, inner, 0), target)
        if suite_name == "workspace":
            # Two processes share the per-pair setup CPU that bounds one process.
            workers = ("--pipeline", "bench_pipeline:build", "-n", "2")
            ok &= compare_row(suite_name, "scan -n 2", reference, scan_run(*run, workers), 30)
        # Path (a): the simulated model over HTTP, the same latency per model call.
        with server_process(latency=args.delay, seed=1) as server:
            model: tuple[str, ...] = ("--model", "sim-agentdojo:follow=0.5,seed=1")
            model += ("--base-url", server.url)
            if suite_name == "workspace":
                model += ("-n", "2")
            measured = scan_run(*run, model)
        mode = "scan --model (HTTP)" + (" -n 2" if suite_name == "workspace" else "")
        ok &= compare_row(suite_name, mode, reference, measured, 30)
        bound = len(reference[1]) * setup_cpu(suite_name)
        print(f"  {suite_name}: AgentDojo's per-pair setup CPU, all pairs: {bound:.1f} s")
    return ok


def whole_processes(args: argparse.Namespace) -> bool:
    """(b): each suite's whole process on both sides, at zero latency and at
    ``--delay``, with (a) beside it; at zero latency rampart's whole process must not
    be slower than AgentDojo's."""
    from rampart.agentdojo import load_suite

    print(
        f"\n(b) whole processes: AgentDojo's runner (its own process) against rampart scan "
        f"agentdojo (concurrency {args.concurrency}), load average {_loadavg()}"
    )
    columns = ("suite", "delay s", "pairs", "AgentDojo whole s", "rampart whole s", "ratio")
    columns += ("AgentDojo pairs s", "rampart pairs s", "AgentDojo rest s", "rampart rest s")
    columns += ("AgentDojo CPU s", "rampart CPU s")
    _row((*columns, "identical", "ERROR", "result"))
    ok = True
    for suite_name in args.suites.split(","):
        every = list(load_suite(suite_name).user_tasks)
        count = args.user_tasks or (20 if suite_name == "workspace" else len(every))
        user_tasks = every[:count]
        for delay in (0.0, args.delay):
            before = _children_cpu()
            reference_whole, reference_pairs, expected = agentdojo_process(
                suite_name, user_tasks, delay
            )
            agent: tuple[str, ...] = ("--pipeline", "bench_pipeline:build")
            if suite_name == "workspace" and delay > 0:
                agent += ("-n", "2")
            between = _children_cpu()
            whole, pairs_s, verdicts, errors = scan_whole(
                suite_name, user_tasks, delay, args.concurrency, agent
            )
            cpu = (between - before, _children_cpu() - between)
            identical = verdicts == expected
            # At zero latency: no slower than AgentDojo's own runner, whole process.
            met = identical and errors == 0 and (delay > 0 or whole <= reference_whole)
            cells = (suite_name, f"{delay:g}", str(len(expected)), f"{reference_whole:.1f}")
            cells += (f"{whole:.1f}", f"{whole / reference_whole:.2f}x")
            cells += (f"{reference_pairs:.1f}", f"{pairs_s:.1f}")
            # Outside the pairs: the process's start and imports (and rampart's pytest
            # session and reports), where a miss at zero latency would come from.
            cells += (f"{reference_whole - reference_pairs:.1f}", f"{whole - pairs_s:.1f}")
            cells += (f"{cpu[0]:.1f}", f"{cpu[1]:.1f}", str(identical), str(errors))
            _row((*cells, ("PASS" if met else "MISS") if delay == 0 else ("ok" if met else "MISS")))
            ok &= met
    return ok


if __name__ == "__main__":
    main()
