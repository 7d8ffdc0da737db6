"""The Redis backend against a real ``redis-server`` (the ``redis_server`` fixture)."""

from __future__ import annotations

import socket
import sys

import pytest
import redis

from rampart.core.errors import InfrastructureError
from rampart.core.types import Request
from rampart.limits import LIMITS_REDIS_URL_ENV, LimitBackend, MemoryBackend, RedisBackend, limit
from tests._builders import replying_agent
from tests.limits._shared import assert_one_shared_bucket, assert_within_budget, hammer


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _unique(request: pytest.FixtureRequest) -> str:
    """A bucket key of its own for each test (the server is shared by the session)."""
    return str(request.node.nodeid)


class TestRedisBackend:
    def test_is_a_limit_backend(self, redis_server: str) -> None:
        """RedisBackend satisfies the LimitBackend protocol and describes its URL."""
        backend = RedisBackend(redis_server)
        assert isinstance(backend, LimitBackend)
        assert backend.description == redis_server
        backend.close()

    def test_same_arithmetic_as_memory(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """With an injected clock the Lua script reproduces the in-process bucket exactly."""
        clock = FakeClock()
        backend = RedisBackend(redis_server, clock=clock)
        reference = MemoryBackend()
        key = _unique(request)
        got, expected = [], []
        for step in [0.0, 0.0, 0.0, 0.05, 0.0, 1.0, 0.3, 0.0, 0.0]:
            clock.now += step
            got.append(backend.reserve_now(key, rate=4.0, burst=2))
            expected.append(reference.reserve_now(key, rate=4.0, burst=2, now=clock.now))
        assert got == pytest.approx(expected, abs=1e-9)
        assert max(got) > 0.0

    def test_server_clock_by_default(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """Without a clock the server's TIME is used: burst first, then waits."""
        backend = RedisBackend(redis_server)
        key = _unique(request)
        waits = [backend.reserve_now(key, rate=1.0, burst=3) for _ in range(5)]
        assert waits[:3] == [0.0, 0.0, 0.0]
        assert 0.9 < waits[3] <= 1.0
        assert 1.9 < waits[4] <= 2.0

    def test_keys_are_prefixed_and_expire(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """Buckets live under the prefix and expire once they would be full again."""
        backend = RedisBackend(redis_server, prefix="test:buckets:")
        key = _unique(request)
        backend.reserve_now(key, rate=10.0, burst=1)
        client = redis.Redis.from_url(redis_server)
        try:
            assert client.exists("test:buckets:" + key) == 1
            assert 0 < client.pttl("test:buckets:" + key) <= 60_200
        finally:
            client.close()

    @pytest.mark.anyio
    async def test_acquire_on_both_event_loops(
        self, anyio_backend: str, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """The sync client runs in a worker thread, so asyncio and trio both work."""
        backend = RedisBackend(redis_server, clock=FakeClock())
        key = f"{_unique(request)}:{anyio_backend}"
        waits = [await backend.acquire(key, rate=10.0, burst=1) for _ in range(3)]
        assert waits == pytest.approx([0.0, 0.1, 0.2])

    def test_two_processes_never_exceed_the_budget(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """Two processes (standing in for two hosts) share one budget through Redis."""
        rate, burst, count = 50.0, 5, 250
        results = hammer(
            "redis", redis_server, _unique(request), rate=rate, burst=burst, count=count
        )
        grants = [now + wait for worker in results for now, wait in worker]
        assert len(grants) == 2 * count
        assert_within_budget(grants, rate=rate, burst=burst)
        assert_one_shared_bucket(results, rate=rate, burst=burst, count=count)

    @pytest.mark.anyio
    async def test_limit_uses_redis_from_the_environment(
        self,
        anyio_backend: str,
        redis_server: str,
        request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """RAMPART_LIMITS_REDIS_URL makes limit(...) pace through Redis."""
        monkeypatch.setenv(LIMITS_REDIS_URL_ENV, redis_server)
        agent = replying_agent()
        limited = limit(agent, rate=1000, burst=3, name=f"{_unique(request)}:{anyio_backend}")
        assert isinstance(limited.backend, RedisBackend)
        assert limited.statistics().backend == redis_server
        session = await limited.create_session_async()
        async with session:
            for _ in range(5):
                await session.send_async(Request(prompt="hi"))
        assert agent.statistics().requests == 5
        client = redis.Redis.from_url(redis_server)
        try:
            assert client.exists(f"rampart:limits:{limited.name}") == 1
        finally:
            client.close()


class TestRedisFailures:
    def test_unreachable_server_is_an_infrastructure_error(self) -> None:
        """A server that is not there fails the request, naming the URL."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        backend = RedisBackend(f"redis://127.0.0.1:{port}/0")
        with pytest.raises(InfrastructureError, match=f"127.0.0.1:{port}"):
            backend.reserve_now("k", rate=1.0, burst=1)

    def test_password_is_redacted(self) -> None:
        """Statistics and messages never show the password."""
        backend = RedisBackend("redis://user:hunter2@127.0.0.1:6390/0")
        assert "hunter2" not in backend.description
        assert "hunter2" not in repr(backend)
        assert backend.description == "redis://user:***@127.0.0.1:6390/0"

    @pytest.mark.parametrize(
        ("url", "error"),
        [("http://localhost", ValueError), ("", ValueError), (None, TypeError)],
    )
    def test_bad_urls(self, url: object, error: type[Exception]) -> None:
        """Only redis URLs are accepted."""
        with pytest.raises(error, match=r"^RedisBackend: url must be "):
            RedisBackend(url)  # type: ignore[arg-type]

    def test_missing_redis_package_says_which_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without redis-py installed the error names the extra to install."""
        monkeypatch.setitem(sys.modules, "redis", None)
        with pytest.raises(ImportError, match=r"rampart\[redis\]"):
            RedisBackend("redis://127.0.0.1:6379/0")
