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


def hammer(
    kind: str, location: str, key: str, *, rate: float, burst: int, count: int, workers: int = 2
) -> list[list[tuple[float, float]]]:
    """Run ``workers`` processes reserving ``count`` tokens each, started together."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "tests.limits._hammer", kind, location, key]
    command += [str(rate), str(burst), str(count)]
    processes = [
        subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = []
        for process in processes:
            out, _ = process.communicate(timeout=60)
            assert process.returncode == 0
            results.append([tuple(pair) for pair in json.loads(out)])
        return results
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


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
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "tests.limits._counter", kind, location, key, str(count)]
    processes = [
        subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(workers)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        for process in processes:
            out, _ = process.communicate(timeout=120)
            assert process.returncode == 0
            assert out.strip() == "done"
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
