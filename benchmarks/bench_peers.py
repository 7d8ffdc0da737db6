"""Peers benchmark: rampart's defaults beside Inspect AI's on the same rate-limited work.

The work: ``--n`` single-turn requests (default 400) to one test server that
admits ``--rate`` requests per second (20) with a burst of ``--burst`` (5) and answers
in ``--latency`` seconds (1 s), once with ``x-ratelimit-*`` headers on every answer and
once without. Each row is a **whole process** (interpreter start to exit), and the
rows run interleaved, ``--rounds`` times (default 3), so a drift of the machine's speed
spreads over all of them.

Rows:

* rampart, ``default``: ``execute_trials_async`` inside ``run_concurrency`` of the
  run's default setting (``rampart._pacing.DEFAULT_CONCURRENCY``, what the pytest
  plugin and the scans use when no ``--rampart-concurrency`` is given), on
  ``limit(ChatCompletionsAdapter(...), adaptive=True)`` with no other argument;
* rampart, ``auto``, ``32`` and ``64`` (``--settings`` changes the list): the same with
  that concurrency;
* Inspect AI (optional peer): ``eval()`` of a task of ``--n`` samples with
  ``generate(tool_calls="none")`` (one request a sample, as rampart's rows send) and
  Inspect's default connections (adaptive), against the same server's chat
  completions route through its ``openai`` provider. Inspect lives in a virtual
  environment of its own (it is large); give its interpreter with ``--inspect-python`` (it needs
  ``inspect-ai`` and ``openai``). Without it, or when that interpreter cannot import
  them, the peer rows are skipped with a line that says why.

Columns: the whole process's wall time (median over the rounds), its share of the
ideal (``(n - burst) / rate + latency``: the burst goes at once, then one request per
``1 / rate``, the last answered ``latency`` later; a whole process also starts an
interpreter, so about 96 % is the ceiling), the ``429`` answers the server sent (min-max
over the rounds), the requests it served, and the process's CPU seconds (user + system,
median). Every request must be served once: a row whose process fails or serves fewer
than ``n`` says so.

Target: rampart's ``default`` row >= 80 % of the ideal, with fewer 429s than
Inspect's default. ``python benchmarks/bench_peers.py --n 20 --rounds 1 --rate 20
--latency 0.1`` is a smoke run of a few seconds; the measured figures come from the
full size on a quiet machine (the load average is printed with the table).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODEL = "simulated-agent"
PROMPT = "Summarise this document for me."
SETTINGS = ("default", "auto", "32", "64")
TARGET = 0.80

INSPECT_CHILD = """
import sys, tempfile
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.solver import generate

n, url = int(sys.argv[1]), sys.argv[2]
samples = [Sample(input=sys.argv[3]) for _ in range(n)]
task = Task(dataset=samples, solver=generate(tool_calls="none"))
with tempfile.TemporaryDirectory() as logs:
    (log,) = eval(task, model="openai/" + sys.argv[4], model_base_url=url,
                  model_args={"responses_api": False}, display="none", log_dir=logs,
                  log_samples=False)
if log.status != "success":
    sys.exit(f"inspect: the eval ended {log.status}: {log.error}")
"""

INSPECT_PROBE = "import inspect_ai, openai; print(inspect_ai.__version__)"


def rampart_child(url: str, setting: str, n: int) -> None:
    """One rampart row's whole work (run in a process of its own)."""
    import anyio

    from rampart import Attacks, Request, SafetyStatus, execute_trials_async
    from rampart._pacing import DEFAULT_CONCURRENCY, parse_concurrency, run_concurrency
    from rampart.adapters import ChatCompletionsAdapter
    from rampart.evaluators import ToolCalled
    from rampart.limits import limit

    chosen = DEFAULT_CONCURRENCY if setting == "default" else parse_concurrency(setting)
    if chosen is None:
        raise SystemExit(f"--settings: {setting!r} is not 'default', 'auto' or an integer >= 1")

    async def main() -> None:
        async with ChatCompletionsAdapter(base_url=url, model=MODEL) as agent:
            population = await execute_trials_async(
                execution_factory=lambda: Attacks.xpia(
                    trigger=Request(prompt=PROMPT), evaluator=ToolCalled("send_email")
                ),
                adapter=limit(agent, adaptive=True),
                n=n,
                threshold=0.5,
            )
        errors = [r.summary for r in population.results if r.status is SafetyStatus.ERROR]
        if errors:
            raise SystemExit(f"{len(errors)} ERROR results; the first: {errors[0]}")

    with run_concurrency(chosen):
        anyio.run(main)


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def inspect_version(python: str | None) -> tuple[str | None, str]:
    """Inspect's version, or ``None`` and why the peer rows are skipped."""
    if python is None:
        return None, "no --inspect-python given"
    if not Path(python).exists():
        return None, f"--inspect-python {python} does not exist"
    probe = subprocess.run(
        [python, "-c", INSPECT_PROBE], capture_output=True, text=True, check=False
    )
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"{python} cannot import inspect_ai and openai ({last})"
    return probe.stdout.strip(), ""


def run_process(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run ``command``: (wall seconds, CPU seconds, the error it printed or '')."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    error = ""
    if done.returncode != 0:
        error = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    return wall, cpu, error


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, default=400, help="requests per row (400)")
    parser.add_argument("--rate", type=float, default=20.0, help="the agent's rate (20/s)")
    parser.add_argument("--burst", type=int, default=5, help="the agent's burst (5)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per answer (1)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (3)")
    parser.add_argument(
        "--settings",
        default=",".join(SETTINGS),
        help="rampart rows: 'default', 'auto' or integers, comma-separated "
        f"(default {','.join(SETTINGS)})",
    )
    parser.add_argument(
        "--headers",
        choices=("both", "on", "off"),
        default="both",
        help="the server states its limit in x-ratelimit-* headers: both (default), on, off",
    )
    parser.add_argument(
        "--inspect-python",
        default=None,
        metavar="PATH",
        help="a python with inspect-ai and openai (e.g. /work/peers/inspect/bin/python); "
        "without it the Inspect rows are skipped",
    )
    parser.add_argument("--child", nargs=3, metavar=("URL", "SETTING", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        url, setting, n = args.child
        rampart_child(url, setting, int(n))
        return 0
    if args.n < 1 or args.rounds < 1 or args.rate <= 0 or args.burst < 1 or args.latency < 0:
        parser.error("--n, --rounds, --burst: integers >= 1; --rate > 0; --latency >= 0")

    from rampart.testing.server import server_process

    version, why = inspect_version(args.inspect_python)
    rows = [("rampart", s.strip()) for s in args.settings.split(",") if s.strip()]
    if version is not None:
        rows.append(("inspect", "default"))
    ideal = (args.n - min(args.burst, args.n)) / args.rate + args.latency
    modes = {"both": ("openai", "none"), "on": ("openai",), "off": ("none",)}[args.headers]
    env = {**os.environ, "OPENAI_API_KEY": "sk-bench-peers", "PYTHONUNBUFFERED": "1"}
    print(
        f"{args.n} single-turn requests; agent {args.rate:g}/s burst {args.burst}, "
        f"{args.latency:g} s latency; ideal {ideal:.2f} s; {args.rounds} round(s), "
        f"interleaved; whole processes; load average {load_average()}"
    )
    if version is None:
        print(f"Inspect AI: skipped ({why})")
    else:
        print(f"Inspect AI {version} ({args.inspect_python}), default connections")
    header = (
        f"{'tool':<8} {'setting':<8} {'headers':<8} {'wall s':>7} {'%ideal':>7} "
        f"{'429s':>8} {'served':>7} {'CPU s':>6}  note"
    )
    failures = 0
    for mode in modes:
        print(f"\nheaders: {'x-ratelimit-* (openai)' if mode == 'openai' else 'none'}")
        print(header)
        results: dict[tuple[str, str], list[tuple[float, float, int, int, str]]] = {
            row: [] for row in rows
        }
        with server_process(
            rate=args.rate,
            burst=args.burst,
            latency=args.latency,
            rate_limit_headers=mode,
        ) as server:
            for _ in range(args.rounds):
                for tool, setting in rows:
                    time.sleep(max(0.2, 2 * args.burst / args.rate))  # the bucket refills
                    server.reset_statistics()
                    if tool == "rampart":
                        command = [sys.executable, __file__, "--child", server.url, setting]
                        command.append(str(args.n))
                    else:
                        command = [args.inspect_python, "-c", INSPECT_CHILD, str(args.n)]
                        command += [server.url, PROMPT, MODEL]
                    wall, cpu, error = run_process(command, env)
                    stats = server.statistics()
                    results[tool, setting].append(
                        (wall, cpu, stats["rate_limited"], stats["served"], error)
                    )
        for (tool, setting), runs in results.items():
            wall = statistics.median(r[0] for r in runs)
            cpu = statistics.median(r[1] for r in runs)
            refused = sorted(r[2] for r in runs)
            served = min(r[3] for r in runs)
            errors = [r[4] for r in runs if r[4]]
            note = errors[0][:100] if errors else ""
            if not errors and served < args.n:
                note = f"served {served} of {args.n}"
            failures += bool(note)
            spread = f"{refused[0]}" if refused[0] == refused[-1] else f"{refused[0]}-{refused[-1]}"
            print(
                f"{tool:<8} {setting:<8} {'on' if mode == 'openai' else 'off':<8} "
                f"{wall:7.2f} {ideal / wall:7.0%} {spread:>8} {served:7d} {cpu:6.2f}  {note}"
            )
    print(
        f"\ntarget: rampart's default >= {TARGET:.0%} of ideal, with fewer 429s than "
        "Inspect's default (on the full size, quiet machine)"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
