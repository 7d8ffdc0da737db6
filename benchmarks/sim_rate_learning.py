"""Virtual-time simulation of ``limit(adapter, adaptive=True)`` against a token-bucket agent.

Runs the real limiter (slots, learned rate, AIMD window, retries, Retry-After pauses)
under trio's ``MockClock`` against a simulated agent that behaves like the test
server: a token bucket (``rate``, ``burst``) answers ``429`` at once with
``retry-after-ms`` when empty, otherwise the request takes ``latency`` seconds. With
``--headers`` the agent also states its limit the way OpenAI does
(``x-ratelimit-*-requests``) on every answer. No sockets, no wall clock: a cell of the
benchmark grid runs in a second or two and gives the same numbers every time, so the
controller can be studied (and tuned) without loopback noise.

``python benchmarks/sim_rate_learning.py`` prints the grid of ``bench_concurrency.py``
(rate x latency x burst) with the same targets, and its short-run cell: 200 trials at
40/s x 20 ms x burst 5, where the time slow start takes is most of the run (target:
at most ``SHORT_TARGET`` times the ideal time). ``--cell 200,5,10`` (repeatable; a
fourth number sets the trials, ``40,0.02,5,200``) runs only the cells named, such as
the 5 s rows; ``--jitter S`` adds uniform random network delay of up to S seconds
before the agent sees each request. Besides throughput and refusals, each row gives
``x ideal`` (the run's time over the shortest possible, ``_ramp.ideal_wall``) and
``to rate``: the seconds until the agent admitted 90 % of its rate
(``_ramp.time_to_rate``).

``--stall P,S`` models what the wall clock adds: stalls (a garbage collection, a
process descheduled) starting at random, ``P`` per second on average, each lasting
``S`` seconds; a request that would reach the agent during one reaches it when the
stall ends, together with the others held. ``--hosts N`` splits the trials over ``N``
limiters sharing one learned rate (one ``MemoryBackend``), as ``bench_fleet.py``'s
hosts share one through Redis; each host stalls on its own. ``--late S`` wakes each
send up to ``S`` seconds late (uniformly at random), as a busy event loop does: a
limiter's spacing turnstile then sends later than its schedule.

``--calls K`` makes each trial a conversation of ``K`` requests one after another (a
real agent's model calls: ``bench_real_agent.py``'s makes 3) and ``--concurrency C``
runs at most ``C`` trials at once (default: all). ``--real-agent`` runs that
benchmark's burst-1 cell instead of the grid: 100 trials of 3 calls at concurrency 10
and 50 against 20/s x 0.5 s x burst 1, with 3 ms of arrival jitter and sends up to
2 ms late (loopback and a busy event loop); its target is the share of the rate the
agent served from its first request to its last answer (the test server's
``served_per_second``), at least ``REAL_AGENT_TARGET``, averaged over ``--seeds``.
"""

from __future__ import annotations

import argparse
import bisect
import math
import random
import sys
from typing import Self

import attrs
import trio
import trio.testing
from _ramp import ideal_wall, time_to_rate

from rampart._runs import Run
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response
from rampart.limits import (
    MemoryBackend,
    RateLimitedError,
    parse_rate_limit_headers,
    report_rate_limit,
)
from rampart.limits._limiter import LimitedAdapter, _build
from rampart.testing.server import TokenBucket
from rampart.testing.server._app import openai_quota_headers

RATES = (5.0, 20.0, 50.0, 200.0)
LATENCIES = (0.01, 0.1, 1.0)
BURSTS = (1, 10)
THROUGHPUT_TARGET = 0.90
REFUSED_TARGET = 0.05
WARMUP = 0.20
SHORT_CELL = (40.0, 0.02, 5, 200)
"""The short run: rate, latency, burst, trials."""
SHORT_TARGET = 1.15
REAL_AGENT_CELLS = ((20.0, 0.5, 1, 100, 3, 10), (20.0, 0.5, 1, 100, 3, 50))
"""``bench_real_agent.py``'s burst-1 cells: rate, latency, burst, trials, calls a
trial, trials at once."""
REAL_AGENT_JITTER = 0.003
REAL_AGENT_LATE = 0.002
REAL_AGENT_TARGET = 0.85


def trials_for(rate: float, latency: float) -> int:
    """Trials per cell: long enough to learn and settle, short enough to run (at least
    200 trials, 20 s, and 40 latencies at the agent's rate)."""
    return round(max(200.0, rate * 20.0, rate * 40.0 * latency))


def openai_headers(bucket: TokenBucket, now: float) -> dict[str, str]:
    """What the test server sends with ``rate_limit_headers="openai"``."""
    pairs = openai_quota_headers(tokens=bucket.tokens(now), rate=bucket.rate, burst=bucket.burst)
    return {name.decode(): value.decode() for name, value in pairs}


def stall_windows(rng: random.Random, per_second: float, length: float, span: float) -> list[float]:
    """Start times of stalls over ``span`` seconds: a Poisson process, ``per_second``."""
    starts: list[float] = []
    at = 0.0
    while per_second > 0.0:
        at += rng.expovariate(per_second)
        if at >= span:
            break
        starts.append(at)
    return starts


@attrs.define
class Host:
    """One host's view of the agent: its own stalls hold its requests back."""

    agent: Agent
    stalls: list[float]
    stall: float
    epoch: float = 0.0

    @property
    def manifest(self) -> AppManifest:
        return AppManifest(name="sim")

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return ObservabilityLevel.RESPONSE_ONLY

    async def create_session_async(self) -> Session:
        return Session(self.agent, self)

    def held_until(self, now: float) -> float:
        """When a request that would arrive at ``now`` arrives (the end of a stall)."""
        at = now - self.epoch
        index = bisect.bisect_right(self.stalls, at) - 1
        if index >= 0 and at < self.stalls[index] + self.stall:
            return self.epoch + self.stalls[index] + self.stall
        return now


@attrs.define
class Agent:
    """The simulated agent: one bucket, one latency, answers recorded. Limiters reach
    it through ``Host`` views (the adapters), one per host."""

    bucket: TokenBucket
    latency: float
    headers: bool
    jitter: float
    rng: random.Random
    refusal_latency: float = 0.0
    accepted: list[float] = attrs.field(factory=list)
    completed: list[float] = attrs.field(factory=list)
    refused: int = 0
    first: float | None = None


class Session:
    def __init__(self, agent: Agent, host: Host) -> None:
        self._agent = agent
        self._host = host

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *args: object) -> None:
        return None

    async def send_async(self, request: Request) -> Response:
        agent = self._agent
        if agent.jitter:
            await trio.sleep(agent.rng.uniform(0.0, agent.jitter))
        await trio.sleep_until(self._host.held_until(trio.current_time()))
        now = trio.current_time()
        if agent.first is None:
            agent.first = now
        wait = agent.bucket.take(now)
        headers = openai_headers(agent.bucket, now) if agent.headers else {}
        if wait > 0.0:
            agent.refused += 1
            if agent.refusal_latency:
                await trio.sleep(agent.refusal_latency)
            headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
            signal = parse_rate_limit_headers(headers)
            raise RateLimitedError(
                "429", retry_after=signal.retry_after if signal else None, signal=signal
            )
        agent.accepted.append(now)
        await trio.sleep(agent.latency)
        agent.completed.append(trio.current_time())
        if agent.headers:
            report_rate_limit(parse_rate_limit_headers(headers))
        return Response(text="ok")


@attrs.frozen(kw_only=True)
class Cell:
    rate: float
    latency: float
    burst: int
    n: int
    wall: float
    steady: float
    refused: int
    requests: int
    errors: int
    learned: float
    cuts: int
    to_rate: float
    served_share: float = 0.0
    """Answers over the time from the first request to the last answer, as a share of
    the rate (the test server's ``served_per_second`` over its rate)."""
    calls: int = 1

    @property
    def ideal(self) -> float:
        return ideal_wall(
            self.n * self.calls, rate=self.rate, burst=self.burst, latency=self.latency
        )

    @property
    def refused_fraction(self) -> float:
        return self.refused / self.requests if self.requests else 0.0

    @property
    def ok(self) -> bool:
        return (
            self.steady >= THROUGHPUT_TARGET * self.rate
            and self.refused_fraction <= REFUSED_TARGET
            and self.errors == 0
        )


def steady_throughput(completed: list[float], start: float, end: float) -> float:
    """Answers per second after the first ``WARMUP`` of the run."""
    begin = start + WARMUP * (end - start)
    count = sum(1 for t in completed if t > begin)
    return count / (end - begin) if end > begin else 0.0


def _wake_late(limited: LimitedAdapter, late: float, rng: random.Random) -> None:
    """Make ``limited``'s spacing turnstile wake up to ``late`` seconds late."""
    shell = limited.limiter
    on_time = shell._sleep_until

    async def sleep_until(deadline: float) -> None:
        await on_time(deadline)
        await trio.sleep(rng.uniform(0.0, late))

    shell._sleep_until = sleep_until  # type: ignore[method-assign]


def run_cell(
    rate: float,
    latency: float,
    burst: int,
    *,
    headers: bool,
    jitter: float,
    seed: int,
    trials: int | None = None,
    refusal_latency: float = 0.0,
    hosts: int = 1,
    stall: tuple[float, float] = (0.0, 0.0),
    late: float = 0.0,
    calls: int = 1,
    concurrency: int | None = None,
) -> Cell:
    n = trials or trials_for(rate, latency)
    agent = Agent(
        bucket=TokenBucket(rate=rate, burst=burst, now=0.0),
        latency=latency,
        headers=headers,
        jitter=jitter,
        rng=random.Random(seed),
        refusal_latency=refusal_latency,
    )
    per_second, length = stall
    span = 10.0 * (n / rate + latency + 10.0)
    views = [
        Host(
            agent=agent,
            stalls=stall_windows(random.Random(seed * 1000 + i), per_second, length, span),
            stall=length,
        )
        for i in range(hosts)
    ]
    backend = MemoryBackend(clock=trio.current_time)
    fleet = [
        _build(
            view,
            adaptive=True,
            max_retries=30,
            rng=random.Random(seed + i),
            backend=backend,
            name="sim",
            run=Run(),  # each host a process of its own (in one run, one limiter)
        )
        for i, view in enumerate(views)
    ]
    if late:
        for i, limited in enumerate(fleet):
            _wake_late(limited, late, random.Random(seed * 7 + i))
    errors = 0
    # Without a bound, no gate: its checkpoint would reorder the grid's tasks.
    gate = None if concurrency is None else trio.CapacityLimiter(concurrency)

    async def conversation(limited: LimitedAdapter) -> None:
        nonlocal errors
        session = await limited.create_session_async()
        async with session:
            try:
                for _ in range(calls):
                    await session.send_async(Request(prompt="x"))
            except Exception:
                errors += 1

    async def one(limited: LimitedAdapter) -> None:
        if gate is None:
            await conversation(limited)
            return
        async with gate:
            await conversation(limited)

    async def main() -> tuple[float, float]:
        agent.bucket = TokenBucket(rate=rate, burst=burst, now=trio.current_time())
        start = trio.current_time()
        for view in views:
            view.epoch = start
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(one, fleet[i % hosts])
        return start, trio.current_time()

    # trio shuffles the tasks it schedules at once (so code cannot rely on an order):
    # seed that too, so a cell gives the same figures on every run with one seed.
    scheduler = getattr(getattr(trio, "_core", None), "_run", None)
    if isinstance(getattr(scheduler, "_r", None), random.Random):
        scheduler._r.seed(seed)  # type: ignore[union-attr]
    start, end = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    learned = fleet[0].statistics().learned
    assert learned is not None
    served = len(agent.completed)
    window = agent.completed[-1] - agent.first if served and agent.first is not None else 0.0
    return Cell(
        rate=rate,
        latency=latency,
        burst=burst,
        n=n,
        wall=end - start,
        steady=steady_throughput(agent.completed, start, end),
        refused=agent.refused,
        requests=agent.refused + len(agent.accepted),
        errors=errors,
        learned=learned.rate,
        cuts=learned.cuts,
        to_rate=time_to_rate(agent.accepted, rate=rate, start=start),
        served_share=served / window / rate if window > 0 else 0.0,
        calls=calls,
    )


def _parse_cell(text: str) -> tuple[float, float, int, int | None]:
    """``RATE,LATENCY,BURST[,TRIALS]`` (``ValueError`` if it is not)."""
    parts = text.split(",")
    if len(parts) not in (3, 4):
        raise ValueError(text)
    trials = int(parts[3]) if len(parts) == 4 else None
    return float(parts[0]), float(parts[1]), int(parts[2]), trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--headers", action="store_true", help="the agent states its limit")
    parser.add_argument("--jitter", type=float, default=0.0, help="max network delay (s)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--refusal-latency",
        type=float,
        default=0.0,
        help="seconds the agent takes to refuse (default 0: at once, as rate limiters do)",
    )
    parser.add_argument(
        "--trials",
        type=int,
        default=None,
        help="trials per cell (default: enough to learn and settle; bench_concurrency.py "
        "runs 60 s of the agent's rate in its 5 s rows)",
    )
    parser.add_argument("--hosts", type=int, default=1, help="limiters sharing the rate")
    parser.add_argument("--calls", type=int, default=1, help="requests a trial makes in turn")
    parser.add_argument("--concurrency", type=int, default=None, help="trials at once")
    parser.add_argument(
        "--real-agent",
        action="store_true",
        help="run bench_real_agent.py's burst-1 cells (see the module docstring)",
    )
    parser.add_argument(
        "--seeds", type=int, default=5, help="seeds (from --seed on) per --real-agent cell"
    )
    parser.add_argument("--late", type=float, default=0.0, help="max send lateness (s)")
    parser.add_argument(
        "--stall",
        default="0,0",
        metavar="PER_SECOND,SECONDS",
        help="random stalls per host (e.g. 1,0.05: one 50 ms stall a second on average)",
    )
    parser.add_argument(
        "--cell",
        action="append",
        metavar="RATE,LATENCY,BURST[,TRIALS]",
        help="run only these cells (repeatable), e.g. 200,5,10 for 200/s at 5 s, burst 10",
    )
    args = parser.parse_args(argv)
    cells: list[tuple[float, float, int, int | None]] = [
        (r, lat, b, None) for r in RATES for lat in LATENCIES for b in BURSTS
    ]
    cells.append(SHORT_CELL)
    if args.cell:
        try:
            cells = [_parse_cell(text) for text in args.cell]
        except ValueError:
            parser.error("--cell: expected RATE,LATENCY,BURST[,TRIALS], e.g. 200,5,10")
    try:
        per_second, length = (float(part) for part in args.stall.split(","))
    except ValueError:
        parser.error("--stall: expected PER_SECOND,SECONDS, e.g. 1,0.05")
    if args.hosts < 1:
        parser.error("--hosts: expected a whole number >= 1")
    if args.calls < 1 or (args.concurrency is not None and args.concurrency < 1):
        parser.error("--calls and --concurrency: expected whole numbers >= 1")
    if args.real_agent:
        return real_agent(args.seed, args.seeds)
    print(
        f"virtual time; headers {'on' if args.headers else 'off'}; jitter {args.jitter:g} s; "
        f"refusals after {args.refusal_latency:g} s; {args.hosts} host(s), "
        f"stalls {per_second:g}/s of {length:g} s; sends up to {args.late:g} s late; "
        f"targets: steady >= {THROUGHPUT_TARGET:.0%} of the rate, <= {REFUSED_TARGET:.0%} 429"
    )
    print(
        f"{'rate':>5} {'lat':>5} {'burst':>5} {'n':>6} {'wall':>7} {'xideal':>6} "
        f"{'steady':>7} {'%rate':>6} {'torate':>6} {'429':>6} {'%429':>6} {'learned':>8} "
        f"{'cuts':>5} {'ERR':>4}  verdict"
    )
    misses = 0
    for rate, latency, burst, trials in cells:
        cell = run_cell(
            rate,
            latency,
            burst,
            headers=args.headers,
            jitter=args.jitter,
            seed=args.seed,
            trials=trials or args.trials,
            refusal_latency=args.refusal_latency,
            hosts=args.hosts,
            stall=(per_second, length),
            late=args.late,
            calls=args.calls,
            concurrency=args.concurrency,
        )
        ok = cell.ok
        if (rate, latency, burst, trials) == SHORT_CELL:  # its time is the target
            ok = cell.wall <= SHORT_TARGET * cell.ideal and cell.errors == 0
        misses += not ok
        print(
            f"{rate:5g} {latency:5g} {burst:5d} {cell.n:6d} {cell.wall:7.1f} "
            f"{cell.wall / cell.ideal:6.2f} {cell.steady:7.1f} {cell.steady / rate:6.0%} "
            f"{cell.to_rate:6.2f} {cell.refused:6d} {cell.refused_fraction:6.1%} "
            f"{cell.learned:8.1f} {cell.cuts:5d} {cell.errors:4d}  {'PASS' if ok else 'MISS'}",
            flush=True,
        )
    print(
        f"{len(cells) - misses}/{len(cells)} cells pass (the short run's target is its "
        f"time: <= {SHORT_TARGET:g} x ideal)"
    )
    return 0


def real_agent(first_seed: int, seeds: int) -> int:
    """``--real-agent``: each of ``REAL_AGENT_CELLS`` over ``seeds`` seeds."""
    print(
        f"virtual time; bench_real_agent.py's burst-1 cells; jitter {REAL_AGENT_JITTER:g} s; "
        f"sends up to {REAL_AGENT_LATE:g} s late; target: served >= "
        f"{REAL_AGENT_TARGET:.0%} of the rate (mean over {seeds} seeds)"
    )
    print(
        f"{'rate':>5} {'lat':>5} {'burst':>5} {'n':>4} {'calls':>5} {'conc':>4} {'seed':>4} "
        f"{'wall':>6} {'served':>7} {'429':>4} {'learned':>8} {'cuts':>5} {'ERR':>4}"
    )
    misses = 0
    for rate, latency, burst, trials, calls, concurrency in REAL_AGENT_CELLS:
        shares: list[float] = []
        for seed in range(first_seed, first_seed + seeds):
            cell = run_cell(
                rate,
                latency,
                burst,
                headers=False,
                jitter=REAL_AGENT_JITTER,
                seed=seed,
                trials=trials,
                late=REAL_AGENT_LATE,
                calls=calls,
                concurrency=concurrency,
            )
            shares.append(cell.served_share)
            misses += cell.errors > 0
            print(
                f"{rate:5g} {latency:5g} {burst:5d} {trials:4d} {calls:5d} {concurrency:4d} "
                f"{seed:4d} {cell.wall:6.1f} {cell.served_share:7.1%} {cell.refused:4d} "
                f"{cell.learned:8.1f} {cell.cuts:5d} {cell.errors:4d}",
                flush=True,
            )
        mean = sum(shares) / len(shares)
        ok = mean >= REAL_AGENT_TARGET
        misses += not ok
        print(
            f"  mean served {mean:.1%} ({min(shares):.1%}-{max(shares):.1%}): "
            f"{'PASS' if ok else 'MISS'}"
        )
    print(f"{'every cell passes' if not misses else f'{misses} miss(es)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
