"""Fixtures for the limiter tests: a real ``redis-server`` on loopback."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from rampart.limits import LIMITS_DIR_ENV, LIMITS_REDIS_URL_ENV

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(autouse=True)
def _no_shared_backend_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests choose their backends; a run-wide RAMPART_LIMITS_DIR (set by the
    plugin under xdist) must not swap a virtual-clock MemoryBackend for files."""
    monkeypatch.delenv(LIMITS_DIR_ENV, raising=False)
    monkeypatch.delenv(LIMITS_REDIS_URL_ENV, raising=False)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_server() -> Iterator[str]:
    """A throwaway ``redis-server`` on 127.0.0.1 (no persistence); yields its URL.

    A missing binary is a failure, not a skip: CI installs ``redis-server`` and the
    Redis backend must be tested against the real thing.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.fail(
            "redis-server is not installed; the Redis backend tests need it "
            "(apt-get install redis-server)"
        )
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10.0
        while not _ping(port):
            if process.poll() is not None:
                stderr = process.stderr.read().decode() if process.stderr else ""
                pytest.fail(f"redis-server exited with {process.returncode}: {stderr}")
            if time.monotonic() > deadline:
                pytest.fail(f"redis-server did not answer PING on port {port} within 10 s")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()
