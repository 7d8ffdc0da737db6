"""HTTP throughput benchmark: hundreds of chat-completions requests in flight.

An endpoint that answers every ``POST /v1/chat/completions`` after ``--latency``
seconds (1 s) runs in its own process(es). For each number of requests in flight
(200, 500 and 1,000), each client runs in a fresh process: ``c`` workers, each sending
one request after another for ``--duration`` seconds, after one warm-up round that opens
the connections. Clients:

* ``reference``: a plain aiohttp ``ClientSession`` (one connector of ``c`` connections)
  posting the same body and decoding the JSON answer: the endpoint's own ceiling on
  this machine, measured in the same run;
* ``asyncio``: ``ChatCompletionsAdapter`` on asyncio (its default transport there:
  aiohttp through httpx-aiohttp), each request in its own session;
* ``trio``: the same adapter on trio (its default there: sharded httpcore pools);
* with ``--baseline``: the adapter on both backends over httpx's own single pool
  (``RAMPART_HTTP_TRANSPORT=httpx``), the transport before this benchmark existed.

Printed per run: requests/s, % of the ideal (``c / latency``), % of the reference, the
client's CPU time per request (process user + system time over the measured window,
divided by the requests it finished), errors, and the 1-minute load average. Targets:
asyncio >= 95 % of the reference at 200 and 500 in flight, trio >= 85 %, and <= 0.5 ms
of client CPU per request on both backends at 200 and 500.

``--repeat N`` runs every client N times, interleaved (reference, asyncio, trio,
reference, ...), and keeps the best of each: the highest rate and, separately, the
lowest CPU per request, which is what a shared machine disturbs least.
``--profile N`` runs each adapter client once more under cProfile, timed by process
CPU time (a run left out of the table), and prints its N functions with the most CPU
time of their own, in microseconds per request (cProfile slows the client down several
times over: compare the shares, not the totals with an unprofiled run's).

The endpoint (``--endpoint lean``, the default) is a bare ASGI app under hypercorn,
listening with a backlog of 4,096 in ``--servers`` processes sharing one port
(``SO_REUSEPORT``): check that the reference reaches the ideal, else the endpoint is the
bottleneck and every percentage is of that ceiling. ``--endpoint test-server`` uses
rampart's test server (``server_process(latency=...)``) instead.

Usage: ``python benchmarks/bench_http.py`` (about 5 minutes), ``--quick`` (in flight 50
and 200, 4 s windows: under a minute), or ``--inflight 200,500 --duration 15``.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import io
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parent.parent
MODEL = "bench-model"
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Here is your summary."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13},
    }
).encode()
BODY = {"model": MODEL, "messages": [{"role": "user", "content": "Summarise my inbox."}]}
TARGETS = {"asyncio": 0.95, "trio": 0.85}
CPU_TARGET_MS = 0.5
#: Where the CPU target applies (in flight), on both backends.
CPU_TARGET_LEVELS = (200, 500)


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


# --------------------------------------------------------------------------- endpoint


def lean_app(latency: float) -> Any:
    """A bare ASGI app: every POST is answered with one fixed completion after ``latency``.

    It notes when each POST arrived (``time.monotonic()``, the clock every process on
    this machine shares) and its last message; ``GET /arrivals`` returns those pairs as
    JSON (``benchmarks/bench_concurrency.py`` measures the loopback jitter with it).
    """
    import time

    import anyio

    arrivals: list[tuple[float, str]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["method"] == "GET":
            body = json.dumps(arrivals).encode()
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": body})
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        # When it arrived (after its body, where the test server takes its token) and
        # which request it was (its last message).
        request = json.loads(b"".join(chunks))
        arrivals.append((time.monotonic(), request["messages"][-1]["content"]))
        await anyio.sleep(latency)
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(COMPLETION)).encode()),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": COMPLETION})

    return app


def serve_lean(port: int, latency: float) -> None:
    """Child process: serve the lean app on ``port`` (shared with sibling processes)."""
    import asyncio

    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(4096)
    config = Config()
    config.bind = [f"fd://{sock.detach()}"]
    config.accesslog = None
    config.keep_alive_timeout = 30.0
    stop = asyncio.Event()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, stop.set)
        print("ready", flush=True)
        await serve(lean_app(latency), config, shutdown_trigger=stop.wait)  # type: ignore[arg-type]

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def endpoint(kind: str, latency: float, servers: int) -> Iterator[str]:
    """The API root of a running endpoint (see the module docstring)."""
    if kind == "test-server":
        from rampart.testing.server import server_process

        with server_process(latency=latency, model=MODEL) as server:
            yield server.url
        return
    port = _free_port()
    command = [sys.executable, __file__, "--serve", str(port), "--latency", str(latency)]
    processes = [
        subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(servers)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise SystemExit("the endpoint did not start")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --------------------------------------------------------------------------- clients


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _top_functions(profile: cProfile.Profile, requests: int, top: int) -> list[str]:
    """The ``top`` functions with the most CPU time of their own, per request."""
    import pstats

    stats = pstats.Stats(profile, stream=io.StringIO())
    rows = []
    for (path, line, name), (_, calls, own, total, _) in stats.stats.items():  # type: ignore[attr-defined]
        where = f"{Path(path).name}:{line}({name})" if line else name
        rows.append((own, total, calls, where))
    rows.sort(reverse=True)
    per = 1e6 / max(requests, 1)
    return [
        f"{own * per:8.1f} {total * per:9.1f} {calls / max(requests, 1):7.1f}  {where}"
        for own, total, calls, where in rows[:top]
    ]


async def _drive(send: Any, inflight: int, duration: float, profile: int = 0) -> dict[str, Any]:
    """One warm-up round of ``inflight`` requests, then ``inflight`` workers for
    ``duration`` seconds; counts what finished inside the window. With ``profile``, the
    workers' phase runs under cProfile (timed by process CPU time), and its ``profile``
    top functions are returned."""
    import anyio

    errors: list[str] = []

    async def one() -> bool:
        try:
            await send()
        except Exception as exc:
            if len(errors) < 3:
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
            errors.append("")
            return False
        return True

    async with anyio.create_task_group() as group:
        for _ in range(inflight):
            group.start_soon(one)
    warmup_errors = errors.count("")
    done = finished = 0
    deadline = anyio.current_time() + duration

    async def worker() -> None:
        nonlocal done, finished
        while anyio.current_time() < deadline:
            if await one():
                finished += 1
                done += anyio.current_time() <= deadline

    profiler = cProfile.Profile(time.process_time) if profile else None
    cpu = _cpu()
    started = anyio.current_time()
    if profiler is not None:
        profiler.enable()
    async with anyio.create_task_group() as group:
        for _ in range(inflight):
            group.start_soon(worker)
    if profiler is not None:
        profiler.disable()
    elapsed = anyio.current_time() - started
    cpu = _cpu() - cpu
    failed = errors.count("") - warmup_errors
    top = [] if profiler is None else _top_functions(profiler, finished, profile)
    return {
        "profile": top,
        "done": done,
        "finished": finished,
        "window": duration,
        "elapsed": elapsed,
        "cpu": cpu,
        "errors": failed,
        "warmup_errors": warmup_errors,
        "first_errors": [e for e in errors if e],
    }


async def _reference(url: str, inflight: int, duration: float) -> dict[str, Any]:
    import aiohttp

    connector = aiohttp.TCPConnector(limit=inflight)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def send() -> None:
            async with session.post(f"{url}/chat/completions", json=BODY) as reply:
                reply.raise_for_status()
                data = await reply.json()
                if not data["choices"][0]["message"]["content"]:
                    raise RuntimeError("empty answer")

        return await _drive(send, inflight, duration)


async def _adapter(url: str, inflight: int, duration: float, profile: int) -> dict[str, Any]:
    from rampart.adapters import ChatCompletionsAdapter
    from rampart.core.types import Request

    adapter = ChatCompletionsAdapter(
        base_url=url, model=MODEL, max_connections=inflight, timeout=120.0
    )
    request = Request(prompt="Summarise my inbox.")
    async with adapter:

        async def send() -> None:
            async with await adapter.create_session_async() as session:
                reply = await session.send_async(request)
                if not reply.text:
                    raise RuntimeError("empty answer")

        result = await _drive(send, inflight, duration, profile)
        client = adapter._client
        result["transport"] = type(client._transport).__name__ if client else "?"
    return result


def run_client(
    kind: str, url: str, inflight: int, duration: float, profile: int = 0
) -> dict[str, Any]:
    """Child process: one client run; returns its measurements."""
    import anyio

    if kind == "reference":
        return anyio.run(_reference, url, inflight, duration, backend="asyncio")
    backend = kind.split("-")[0]
    if kind.endswith("-httpx"):
        os.environ["RAMPART_HTTP_TRANSPORT"] = "httpx"
    return anyio.run(_adapter, url, inflight, duration, profile, backend=backend)


def client_process(
    kind: str, url: str, inflight: int, duration: float, profile: int = 0
) -> dict[str, Any]:
    command = [sys.executable, __file__, "--client", kind, "--url", url]
    command += ["--inflight", str(inflight), "--duration", str(duration)]
    command += ["--profile", str(profile)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"client {kind} failed:\n{done.stdout}\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["load"] = os.getloadavg()[0]
    return result


# --------------------------------------------------------------------------- main


def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="in flight 50 and 200, 4 s")
    parser.add_argument("--inflight", default=None, help="comma-separated (200,500,1000)")
    parser.add_argument("--duration", type=float, default=None, help="seconds per run (15)")
    parser.add_argument("--latency", type=float, default=1.0, help="endpoint latency (1 s)")
    parser.add_argument("--endpoint", choices=("lean", "test-server"), default="lean")
    parser.add_argument("--servers", type=int, default=1, help="lean endpoint processes")
    parser.add_argument("--baseline", action="store_true", help="also httpx's single pool")
    parser.add_argument("--repeat", type=int, default=1, help="runs per client, interleaved")
    parser.add_argument("--profile", type=int, default=0, help="print N top functions")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--client", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--url", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve_lean(args.serve, args.latency)
        return 0
    duration = args.duration or (4.0 if args.quick else 15.0)
    if args.client is not None:
        inflight = int(args.inflight)
        print(json.dumps(run_client(args.client, args.url, inflight, duration, args.profile)))
        return 0
    default = "50,200" if args.quick else "200,500,1000"
    levels = [int(x) for x in (args.inflight or default).split(",")]
    kinds = ["reference", "asyncio", "trio"]
    if args.baseline:
        kinds += ["asyncio-httpx", "trio-httpx"]
    print(
        f"rampart HTTP benchmark (python {sys.version.split()[0]}, {os.cpu_count()} cpus, "
        f"load average {load_average()}); endpoint: {args.endpoint}"
        f"{f' x {args.servers} processes' if args.endpoint == 'lean' else ''}, "
        f"{args.latency:g} s latency; {duration:g} s per run after a warm-up round",
        flush=True,
    )
    rows = []
    verdicts: list[str] = []
    notes: list[str] = []
    profiles: list[str] = []
    with endpoint(args.endpoint, args.latency, args.servers) as url:
        for inflight in levels:
            ideal = inflight / args.latency
            runs: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
            for _ in range(args.repeat):
                for kind in kinds:
                    result = client_process(kind, url, inflight, duration)
                    runs[kind].append(result)
                    finished = result["finished"]
                    cpu_ms = 1000 * result["cpu"] / finished if finished else float("nan")
                    print(
                        f"  {inflight} in flight, {kind}: "
                        f"{result['done'] / result['window']:.0f} req/s, "
                        f"{cpu_ms:.2f} ms CPU/request, {result['errors']} errors, "
                        f"load {result['load']:.1f}"
                        + (
                            f" (first: {result['first_errors'][0]})"
                            if result["first_errors"]
                            else ""
                        ),
                        flush=True,
                    )
            for kind in kinds[1:] if args.profile else ():  # extra runs, not in the table
                result = client_process(kind, url, inflight, duration, args.profile)
                profiles.append(
                    f"{inflight} in flight, {kind} (load {result['load']:.1f}; cProfile, CPU "
                    "time; us/request: own, cumulative; calls/request (coroutine steps)):"
                )
                profiles += [f"  {line}" for line in result["profile"]]
            reference = max(r["done"] for r in runs["reference"]) / duration
            if reference < 0.9 * ideal:
                notes.append(
                    f"{inflight} in flight: the reference reached {reference / ideal:.0%} of "
                    "the ideal: the endpoint (or this machine) is the bottleneck there; "
                    "try --servers 2, and compare only on a quiet machine"
                )
            for kind in kinds:
                # The best of the runs: the highest rate, and (separately) the lowest
                # CPU over every request of the workers' phase (the window and the tail
                # of requests still in flight at its end).
                rate = max(r["done"] / r["window"] for r in runs[kind])
                cpu_ms = min(
                    1000 * r["cpu"] / r["finished"] if r["finished"] else float("inf")
                    for r in runs[kind]
                )
                share = rate / reference if reference else float("nan")
                target = ""
                if kind in TARGETS and inflight in (200, 500):
                    ok = share >= TARGETS[kind]
                    if inflight in CPU_TARGET_LEVELS:
                        ok = ok and cpu_ms <= CPU_TARGET_MS
                    target = "PASS" if ok else "MISS"
                    verdicts.append(target)
                rows.append(
                    [
                        f"{inflight}",
                        kind,
                        runs[kind][-1].get("transport", "aiohttp"),
                        f"{rate:.0f}",
                        f"{rate / ideal:.0%}",
                        "-" if kind == "reference" else f"{share:.0%}",
                        f"{cpu_ms:.2f}",
                        f"{sum(r['errors'] for r in runs[kind])}",
                        f"{max(r['load'] for r in runs[kind]):.1f}",
                        target,
                    ]
                )
    print()
    print(
        _table(
            [
                "in flight",
                "client",
                "transport",
                "req/s",
                "% ideal",
                "% ref",
                "CPU ms/req",
                "errors",
                "load",
                "",
            ],
            rows,
        )
    )
    print(
        "  ideal = in flight / latency; % ref = against the plain aiohttp client in the same\n"
        "  run (the endpoint's ceiling here); CPU ms/req = client process CPU time over the\n"
        "  measured window / requests finished in it; with --repeat, the best rate and the\n"
        "  lowest CPU of the runs, and the highest load. Targets: asyncio >= 95 % of the\n"
        "  reference at 200 and 500, trio >= 85 %, <= 0.5 ms CPU/request on both at 200\n"
        "  and 500."
    )
    for line in profiles:
        print(line)
    for note in notes:
        print(f"  note: {note}")
    if verdicts:
        print(f"targets: {verdicts.count('PASS')}/{len(verdicts)} PASS")
    print(f"load average at the end: {load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
