"""Helpers for the shared-budget tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def assert_within_budget(grants: list[float], *, rate: float, burst: int) -> None:
    """No interval [t0, t1] holds more than ``burst + rate * (t1 - t0)`` grants.

    A hundredth of a token of slack absorbs float rounding of clock readings (server
    times are ~1e9 s, so their last bit is ~1e-7 s); a real overrun is a whole token.
    """
    ordered = sorted(grants)
    for i, start in enumerate(ordered):
        for j in range(i, len(ordered)):
            count = j - i + 1
            allowed = burst + rate * (ordered[j] - start) + 0.01
            assert count <= allowed, f"{count} grants in [{start}, {ordered[j]}]"


def child_env(*paths: Path) -> dict[str, str]:
    """This environment with ``paths`` (default: the repository root) first on PYTHONPATH."""
    env = dict(os.environ)
    first = [str(path) for path in paths or (ROOT,)]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [*first, env.get("PYTHONPATH", "")]))
    return env


def run_together(
    commands: list[list[str]], *, cwd: Path, env: dict[str, str], timeout: float
) -> list[str]:
    """Start one process per command, wait until each prints ``ready``, then say ``go``
    to all at once; each one's standard output once it has exited with 0.

    The processes are killed if anything fails (a process is never left behind).
    """
    processes = [
        subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = []
        for process in processes:
            out, err = process.communicate(timeout=timeout)
            assert process.returncode == 0, err[-3000:]
            outputs.append(out)
        return outputs
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def hammer(
    kind: str, location: str, key: str, *, rate: float, burst: int, count: int, workers: int = 2
) -> list[list[tuple[float, float]]]:
    """Run ``workers`` processes reserving ``count`` tokens each, started together."""
    command = [sys.executable, "-m", "tests.limits._hammer", kind, location, key]
    command += [str(rate), str(burst), str(count)]
    outputs = run_together([command] * workers, cwd=ROOT, env=child_env(), timeout=60)
    return [[tuple(pair) for pair in json.loads(out)] for out in outputs]


def assert_one_shared_bucket(
    results: list[list[tuple[float, float]]], *, rate: float, burst: int, count: int
) -> None:
    """The workers drew on one bucket, whatever the scheduler did with them.

    One worker alone can push its bucket at most ``(count - burst) / rate`` seconds
    into debt; a wait longer than that exists only if the other worker's grants came
    out of the same bucket. This holds whether the two ran interleaved or one after
    the other (a loaded machine may not interleave them), as long as the 2 * count
    reservations took less than that many seconds, which they do by far (each is a
    file lock or a Redis round trip, a millisecond or less).
    """
    alone = (count - burst) / rate
    assert max(wait for worker in results for _, wait in worker) > alone


def count_together(kind: str, location: str, key: str, *, count: int, workers: int = 2) -> None:
    """Run ``workers`` processes applying ``count`` transact increments each, together."""
    command = [sys.executable, "-m", "tests.limits._counter", kind, location, key, str(count)]
    outputs = run_together([command] * workers, cwd=ROOT, env=child_env(), timeout=120)
    assert [out.strip() for out in outputs] == ["done"] * workers
