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
(rate x latency x burst) with the same targets; ``--cell 200,5,10`` (repeatable) runs
only the cells named, such as the 5 s rows; ``--jitter S`` adds uniform random
network delay of up to S seconds before the agent sees each request.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from typing import Self

import attrs
import trio
import trio.testing

from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response
from rampart.limits import RateLimitedError, parse_rate_limit_headers, report_rate_limit
from rampart.limits._limiter import _build
from rampart.testing.server import TokenBucket
from rampart.testing.server._app import openai_quota_headers

RATES = (5.0, 20.0, 50.0, 200.0)
LATENCIES = (0.01, 0.1, 1.0)
BURSTS = (1, 10)
THROUGHPUT_TARGET = 0.90
REFUSED_TARGET = 0.05
WARMUP = 0.20


def trials_for(rate: float, latency: float) -> int:
    """Trials per cell: long enough to learn and settle, short enough to run (at least
    200 trials, 20 s, and 40 latencies at the agent's rate)."""
    return round(max(200.0, rate * 20.0, rate * 40.0 * latency))


def openai_headers(bucket: TokenBucket, now: float) -> dict[str, str]:
    """What the test server sends with ``rate_limit_headers="openai"``."""
    pairs = openai_quota_headers(tokens=bucket.tokens(now), rate=bucket.rate, burst=bucket.burst)
    return {name.decode(): value.decode() for name, value in pairs}


@attrs.define
class Agent:
    """The simulated agent: one bucket, one latency, answers recorded."""

    bucket: TokenBucket
    latency: float
    headers: bool
    jitter: float
    rng: random.Random
    refusal_latency: float = 0.0
    accepted: list[float] = attrs.field(factory=list)
    completed: list[float] = attrs.field(factory=list)
    refused: int = 0

    @property
    def manifest(self) -> AppManifest:
        return AppManifest(name="sim")

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return ObservabilityLevel.RESPONSE_ONLY

    async def create_session_async(self) -> Session:
        return Session(self)


class Session:
    def __init__(self, agent: Agent) -> None:
        self._agent = agent

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *args: object) -> None:
        return None

    async def send_async(self, request: Request) -> Response:
        agent = self._agent
        if agent.jitter:
            await trio.sleep(agent.rng.uniform(0.0, agent.jitter))
        now = trio.current_time()
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
    limited = _build(agent, adaptive=True, max_retries=30, rng=random.Random(seed))
    errors = 0

    async def one() -> None:
        nonlocal errors
        session = await limited.create_session_async()
        async with session:
            try:
                await session.send_async(Request(prompt="x"))
            except Exception:
                errors += 1

    async def main() -> tuple[float, float]:
        agent.bucket = TokenBucket(rate=rate, burst=burst, now=trio.current_time())
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            for _ in range(n):
                nursery.start_soon(one)
        return start, trio.current_time()

    start, end = trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    stats = limited.statistics()
    learned = stats.learned
    assert learned is not None
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
    )


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
    parser.add_argument(
        "--cell",
        action="append",
        metavar="RATE,LATENCY,BURST",
        help="run only these cells (repeatable), e.g. 200,5,10 for 200/s at 5 s, burst 10",
    )
    args = parser.parse_args(argv)
    cells = [(r, lat, b) for r in RATES for lat in LATENCIES for b in BURSTS]
    if args.cell:
        try:
            cells = [
                (float(r), float(lat), int(b)) for r, lat, b in (c.split(",") for c in args.cell)
            ]
        except ValueError:
            parser.error("--cell: expected RATE,LATENCY,BURST, e.g. 200,5,10")
    print(
        f"virtual time; headers {'on' if args.headers else 'off'}; jitter {args.jitter:g} s; "
        f"refusals after {args.refusal_latency:g} s; "
        f"targets: steady >= {THROUGHPUT_TARGET:.0%} of the rate, <= {REFUSED_TARGET:.0%} 429"
    )
    print(
        f"{'rate':>5} {'lat':>5} {'burst':>5} {'n':>6} {'wall':>7} {'steady':>7} "
        f"{'%rate':>6} {'429':>6} {'%429':>6} {'learned':>8} {'cuts':>5} {'ERR':>4}  verdict"
    )
    misses = 0
    for rate, latency, burst in cells:
        cell = run_cell(
            rate,
            latency,
            burst,
            headers=args.headers,
            jitter=args.jitter,
            seed=args.seed,
            trials=args.trials,
            refusal_latency=args.refusal_latency,
        )
        misses += not cell.ok
        print(
            f"{rate:5g} {latency:5g} {burst:5d} {cell.n:6d} {cell.wall:7.1f} "
            f"{cell.steady:7.1f} {cell.steady / rate:6.0%} {cell.refused:6d} "
            f"{cell.refused_fraction:6.1%} {cell.learned:8.1f} {cell.cuts:5d} "
            f"{cell.errors:4d}  {'PASS' if cell.ok else 'MISS'}",
            flush=True,
        )
    print(f"{len(cells) - misses}/{len(cells)} cells pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
