"""What the fleet benchmarks share: a throwaway ``redis-server`` and worker processes
started together.

``bench_fleet.py``, ``bench_fleet_limits.py`` and ``bench_concurrency.py`` (its shared
part) stand hosts in with processes. Each worker prints ``ready`` once it is set up,
waits for a line on its stdin, does its work and prints its result as one JSON line,
its last; ``together`` starts them, tells them all to go at once, and collects those
lines.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import subprocess
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence


def free_port() -> int:
    """A TCP port on loopback nobody listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A ``redis-server`` on loopback without persistence; yields its ``redis://`` URL
    and stops it on exit."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    options = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen(
        [binary, "--port", str(port), *options],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


def together(
    commands: Sequence[Sequence[str]],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> tuple[float, list[dict[str, Any]]]:
    """Run one worker per command, started together; ``(go, results)``: the
    ``time.monotonic()`` at which they were told to go and each worker's JSON result,
    in the order of ``commands``. A worker that does not say ``ready`` or exits with an
    error ends the benchmark (``SystemExit`` with what it printed); none outlives this.
    """
    processes = [
        subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=None if env is None else dict(env),
            cwd=cwd,
        )
        for command in commands
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if line != "ready":
                raise SystemExit(f"a worker did not start: {line!r}")
        go = time.monotonic()
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, _ = process.communicate(timeout=timeout)
            if process.returncode != 0:
                raise SystemExit(f"a worker failed with {process.returncode}:\n{out[-3000:]}")
            results.append(json.loads(out.strip().splitlines()[-1]))
        return go, results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
