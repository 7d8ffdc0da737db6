"""One learned rate shared by every participant: ``transact`` on each backend, limiters
sharing a backend, and separate processes (standing in for hosts) sharing through a
directory or a real ``redis-server``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rampart.limits import FileBackend, MemoryBackend, RedisBackend, StateBackend
from tests.limits._shared import ROOT, child_env, count_together

if TYPE_CHECKING:
    from pathlib import Path


def _increment(document: dict[str, Any] | None, now: float) -> tuple[dict[str, Any], float]:
    count = 1 + (0 if document is None else int(document["count"]))
    return {"count": count, "at": now}, now


def _count(backend: StateBackend, key: str) -> int:
    def read(document: dict[str, Any] | None, now: float) -> tuple[dict[str, Any], int]:
        assert document is not None
        return document, int(document["count"])

    return trio.run(backend.transact, key, read)


class TestTransact:
    def test_memory_uses_its_clock(self) -> None:
        times = iter([5.0, 7.5])
        backend = MemoryBackend(clock=lambda: next(times))
        assert isinstance(backend, StateBackend)
        assert trio.run(backend.transact, "k", _increment) == 5.0
        assert trio.run(backend.transact, "k", _increment) == 7.5
        assert backend.transact_now("other", _increment, now=1.0) == 1.0

    def test_file_documents_live_beside_the_buckets(self, tmp_path: Path) -> None:
        backend = FileBackend(tmp_path, clock=lambda: 3.0)
        assert trio.run(backend.transact, "agent", _increment) == 3.0
        assert json.loads(backend.state_path("agent").read_text()) == {"count": 1, "at": 3.0}
        assert backend.state_path("agent") != backend.bucket_path("agent")

    def test_a_damaged_file_document_restarts(self, tmp_path: Path) -> None:
        backend = FileBackend(tmp_path)
        backend.state_path("agent").write_text("{not json")
        trio.run(backend.transact, "agent", _increment)
        assert _count(backend, "agent") == 1

    def test_two_processes_lose_no_update_in_a_directory(self, tmp_path: Path) -> None:
        count_together("file", str(tmp_path), "shared", count=150)
        assert _count(FileBackend(tmp_path), "shared") == 300

    def test_two_processes_lose_no_update_in_redis(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """Optimistic compare-and-set: concurrent updates are retried, never lost."""
        key = f"count:{request.node.nodeid}"
        count_together("redis", redis_server, key, count=150)
        backend = RedisBackend(redis_server)
        assert _count(backend, key) == 300
        assert backend.document_key(key).startswith("rampart:limits:state:")


HOST = textwrap.dedent(
    """
    import json
    import os

    import pytest

    from rampart.core.types import Request
    from rampart.limits import RateLimitedError, limit
    from rampart.testing import ScriptedAgent

    SENT = []


    def answer(request, turn):
        SENT.append(request.prompt)
        if request.prompt == "refuse":
            raise RateLimitedError("429 Too Many Requests")
        return "ok"


    @pytest.mark.anyio
    @pytest.mark.parametrize("anyio_backend", ["trio"])
    async def test_host(anyio_backend):
        name = "shared-agent" + os.environ.get("HOST_SUFFIX", "")
        limited = limit(ScriptedAgent(answer), adaptive=True, name=name, max_retries=0)
        prompts = os.environ["HOST_PROMPTS"].split(",")
        for prompt in prompts:
            session = await limited.create_session_async()
            async with session:
                try:
                    await session.send_async(Request(prompt=prompt))
                except RateLimitedError:
                    pass
        learned = limited.statistics().learned
        with open(os.environ["HOST_OUT"], "w") as out:
            json.dump({"cuts": learned.cuts, "phase": learned.phase, "peak": learned.peak}, out)
    """
)


def _host(directory: Path, env: dict[str, str], prompts: str, out: Path) -> dict[str, Any]:
    """Run the host suite in its own pytest process; its learned state as it ended."""
    (directory / "test_host.py").write_text(HOST)
    environment = {
        k: v for k, v in child_env(ROOT / "src").items() if not k.startswith("RAMPART_LIMITS")
    }
    environment |= env | {"HOST_PROMPTS": prompts, "HOST_OUT": str(out)}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", str(directory), "-q", "-p", "no:cacheprovider"],
        cwd=directory,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stdout[-3000:] + completed.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


class TestSeparateProcesses:
    """Two pytest processes, one after the other: the second starts from what the first
    learned (it does not slow-start on its own), through a directory or Redis."""

    @pytest.mark.parametrize("kind", ["file", "redis"])
    def test_the_second_host_inherits_the_first_hosts_cut(
        self, kind: str, tmp_path: Path, redis_server: str
    ) -> None:
        if kind == "file":
            env = {"RAMPART_LIMITS_DIR": str(tmp_path / "limits")}
        else:
            # A key of this run's own: the server is shared by the session.
            env = {"RAMPART_LIMITS_REDIS_URL": redis_server, "HOST_SUFFIX": uuid.uuid4().hex}
        first_dir = tmp_path / "first"
        second_dir = tmp_path / "second"
        first_dir.mkdir()
        second_dir.mkdir()
        first = _host(first_dir, env, "a,b,refuse", tmp_path / "first.json")
        assert (first["cuts"], first["phase"]) == (1, "probe")
        second = _host(second_dir, env, "c", tmp_path / "second.json")
        assert second == first | {"peak": second["peak"]}
        assert second["peak"] == pytest.approx(first["peak"])

    def test_alone_each_host_starts_over(self, tmp_path: Path) -> None:
        """The control: without a shared backend the second process knows nothing."""
        first_dir = tmp_path / "first"
        second_dir = tmp_path / "second"
        first_dir.mkdir()
        second_dir.mkdir()
        first = _host(first_dir, {}, "a,b,refuse", tmp_path / "first.json")
        second = _host(second_dir, {}, "c", tmp_path / "second.json")
        assert first["cuts"] == 1
        assert (second["cuts"], second["phase"]) == (0, "start")
