"""Fleet benchmark: several hosts share one learned rate through Redis.

For 4 and 8 processes (standing in for hosts) x agent rate R in {100, 200, 400} req/s:
one rampart test server in its own process (R req/s, burst 10, 1 s latency, seed 1;
``--headers``: stating its bucket in OpenAI's ``x-ratelimit-*`` headers) and a real
``redis-server``. Every host runs its share of ``n`` single-turn XPIA trials (host
``h`` of ``H`` takes trial indices h, h + H, h + 2H, ...; trial ``i`` sends request seed
``i``) through ``limit(ChatCompletionsAdapter(...), adaptive=True,
backend=RedisBackend(url), name="fleet")``: no rate given, one learned rate for the
whole fleet. The hosts start together (each reports ready, then all are told to go).

Printed per cell: the aggregate steady-state throughput (trials finished after the
first 20 % of the run, over the whole fleet, per second) as % of R; the share of the
requests the server saw that it answered 429; ERROR results; and the verdict of every
trial index against a single-process sequential run with the same seeds. Targets:
>= 90 % of R, <= 5 % 429, 0 ERROR, identical verdicts. The load average is printed
with each cell: on a 2-core machine 8 hosts and the server compete for CPU.

Usage: ``python benchmarks/bench_fleet.py`` (about 15 minutes), ``--quick`` (2 and 4
hosts at 50/s and 100 ms, a minute), or ``--hosts 4 --rate 200 --seconds 30``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from typing import Any

import anyio
from _fleet import redis_server, together

from rampart import BaseExecution, SafetyStatus, execute_trials_async

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BURST = 10
LATENCY = 1.0
RATES = (100.0, 200.0, 400.0)
HOSTS = (4, 8)
SECONDS = 30.0
THROUGHPUT_TARGET = 0.90
REFUSED_TARGET = 0.05
WARMUP = 0.20
NAME = "fleet"


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def cpu_times() -> tuple[float, float]:
    """``(busy, total)`` CPU time of the whole machine since boot, from ``/proc/stat``
    (``(0, 0)`` where there is none): a cell's busy share says whether the machine,
    not the limiter, was the bottleneck (8 hosts and the server share 2 cores here)."""
    try:
        with open("/proc/stat") as stat:
            fields = [float(x) for x in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0, 0.0
    idle = fields[3] + fields[4]  # idle and iowait
    return sum(fields) - idle, sum(fields)


# --------------------------------------------------------------------------- one host


async def _host(url: str, redis: str, indices: list[int]) -> dict[str, Any]:
    from bench_concurrency import TRIAL_INDEX, _TimedAdapter, _Timeline, make_attack, trial_seed

    from rampart.adapters import ChatCompletionsAdapter
    from rampart.limits import RedisBackend, limit

    http = ChatCompletionsAdapter(
        base_url=url, model="simulated-agent", seed=trial_seed, max_connections=2000, timeout=120
    )
    timeline = _Timeline()  # when each trial's last attempt ended (the loop's clock:
    # time.monotonic on asyncio, which every process on this machine shares)
    limited = limit(
        _TimedAdapter(http, timeline),
        adaptive=True,
        max_retries=30,
        name=NAME,
        backend=RedisBackend(redis),
    )
    counter = itertools.count()

    def indexed_attack() -> BaseExecution:
        # Called in each trial's own task, in index order: the global index it sets is
        # the seed this trial's session sends.
        TRIAL_INDEX.set(indices[next(counter)])
        return make_attack()

    async with http:
        await http.create_session_async()  # open the client before the clock starts
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
        population = await execute_trials_async(
            execution_factory=indexed_attack,
            adapter=limited,
            n=len(indices),
            threshold=0.5,
        )
    stats = limited.statistics()
    return {
        "statuses": {
            str(indices[r.population.index]): r.status.value
            for r in population.results
            if r.population is not None
        },
        "finished": {str(i): t for i, t in timeline.last.items()},
        "errors": [r.summary for r in population.results if r.status is SafetyStatus.ERROR],
        "learned": None if stats.learned is None else stats.learned.rate,
        "backend": stats.backend,
    }


# --------------------------------------------------------------------------- the fleet


def run_fleet(url: str, redis: str, hosts: int, n: int) -> tuple[float, list[dict[str, Any]]]:
    """``hosts`` processes over ``n`` trials; returns (start, each host's report)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAMPART_LIMITS")}
    worker = [sys.executable, __file__, "--url", url, "--redis", redis, "--n", str(n)]
    commands = [[*worker, "--host", str(host), "--of", str(hosts)] for host in range(hosts)]
    here = os.path.dirname(os.path.abspath(__file__))
    return together(commands, timeout=3600, env=env, cwd=here)


def steady_rate(start: float, reports: list[dict[str, Any]]) -> float:
    """Trials finished after the first 20 % of the fleet's run, per second of the rest."""
    times = [t for report in reports for t in report["finished"].values()]
    if not times:
        return 0.0
    wall = max(times) - start
    begin = start + WARMUP * wall
    late = sum(1 for t in times if t > begin)
    return late / (wall * (1 - WARMUP)) if wall > 0 else 0.0


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 and 4 hosts, 50/s, 100 ms")
    parser.add_argument("--hosts", type=int, action="append", help="hosts (repeatable)")
    parser.add_argument("--rate", type=float, action="append", help="agent rate (repeatable)")
    parser.add_argument("--seconds", type=float, default=None, help="run length at the rate")
    parser.add_argument("--headers", action="store_true", help="server sends x-ratelimit-*")
    parser.add_argument("--host", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--of", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--redis", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.host is not None:
        indices = list(range(args.host, args.n, args.of))
        print(json.dumps(anyio.run(_host, args.url, args.redis, indices)))
        return 0

    from bench_concurrency import COMPLIANCE, SERVER_SEED, sequential_reference

    from rampart.testing.server import server_process

    hosts = args.hosts or ([2, 4] if args.quick else list(HOSTS))
    rates = args.rate or ([50.0] if args.quick else list(RATES))
    latency = 0.1 if args.quick else LATENCY
    seconds = args.seconds or (10.0 if args.quick else SECONDS)
    cells = [(h, r) for r in rates for h in hosts]
    n_max = max(round(r * seconds) for r in rates)
    print(
        f"rampart fleet benchmark (python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"load average {load_average()}); agent burst {BURST}, latency {latency:g} s, "
        f"{seconds:g} s of trials at its rate; "
        f"{'x-ratelimit-* headers' if args.headers else '429 + Retry-After only'}",
        flush=True,
    )
    reference = sequential_reference(n_max)
    print(f"sequential reference: {len(reference)} trials, one process, unlimited server")
    rows = []
    passed = 0
    for hosts_count, rate in cells:
        n = round(rate * seconds)
        with (
            redis_server() as redis,
            server_process(
                rate=rate,
                burst=BURST,
                latency=latency,
                seed=SERVER_SEED,
                compliance=COMPLIANCE,
                rate_limit_headers="openai" if args.headers else "none",
            ) as server,
        ):
            busy_before, total_before = cpu_times()
            start, reports = run_fleet(server.url, redis, hosts_count, n)
            busy_after, total_after = cpu_times()
            observed = server.statistics()
        spent = total_after - total_before
        busy = (busy_after - busy_before) / spent if spent > 0 else float("nan")
        statuses = {int(i): s for report in reports for i, s in report["statuses"].items()}
        differ = sum(1 for i in range(n) if statuses.get(i) != reference[i].value)
        errors = sum(len(report["errors"]) for report in reports)
        share = steady_rate(start, reports) / rate
        refused = observed["rate_limited"] / observed["requests"] if observed["requests"] else 0
        ok = (
            share >= THROUGHPUT_TARGET
            and refused <= REFUSED_TARGET
            and errors == 0
            and differ == 0
            and len(statuses) == n
        )
        passed += ok
        learned = [report["learned"] for report in reports if report["learned"] is not None]
        verdicts = "same" if differ == 0 else f"{differ} differ"
        outcome = "PASS" if ok else "MISS"
        rows.append(
            [
                f"{hosts_count}",
                f"{rate:g}",
                f"{n}",
                f"{share:.0%}",
                f"{observed['requests']}",
                f"{observed['rate_limited']}",
                f"{refused:.1%}",
                f"{min(learned, default=0):.0f}-{max(learned, default=0):.0f}",
                f"{errors}",
                verdicts,
                f"{busy:.0%}",
                f"{os.getloadavg()[0]:.1f}",
                outcome,
            ]
        )
        print(
            f"  {hosts_count} hosts, {rate:g}/s: {share:.0%} of the rate, {refused:.1%} 429, "
            f"{errors} ERROR, verdicts {verdicts} -> {outcome}",
            flush=True,
        )
        for report in reports:
            if report["errors"]:
                print(f"    first ERROR: {report['errors'][0][:200]}")
                break
    print()
    print(
        _table(
            [
                "hosts",
                "rate/s",
                "n",
                "% rate",
                "requests",
                "429",
                "% 429",
                "learned/s",
                "ERROR",
                "verdicts",
                "CPU busy",
                "load",
                "",
            ],
            rows,
        )
    )
    print(
        "  % rate = the fleet's trials finished after the first 20 % of the run, per second\n"
        "  of the rest, over the agent's rate (target >= 90 %); requests and 429 = the\n"
        "  server's counts (target <= 5 % 429); learned/s = the range of the learned rate\n"
        "  the hosts ended with; verdicts = per trial index against one sequential process;\n"
        "  CPU busy = the whole machine's busy share during the cell (hosts, server, Redis)."
    )
    print(f"targets: {passed}/{len(cells)} cells PASS; load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    raise SystemExit(main())
