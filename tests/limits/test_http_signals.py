"""The whole path over HTTP: the test server states its bucket, ChatCompletionsAdapter
reports the headers, and the learned rate takes the stated rate (real server on
127.0.0.1; no timing assertions)."""

from __future__ import annotations

import math

import anyio
import pytest

from rampart.adapters import ChatCompletionsAdapter
from rampart.core.types import Request
from rampart.limits import MemoryBackend, RateLimitedError, limit
from rampart.testing.server import serve

pytestmark = pytest.mark.anyio


async def _send(adapter: ChatCompletionsAdapter, limited: object, count: int) -> None:
    async def one() -> None:
        session = await limited.create_session_async()  # type: ignore[attr-defined]
        async with session:
            await session.send_async(Request(prompt="hello"))

    async with adapter, anyio.create_task_group() as group:
        for _ in range(count):
            group.start_soon(one)


@pytest.mark.parametrize("style", ["openai", "ietf"])
async def test_the_stated_rate_reaches_the_learned_rate(style: str) -> None:
    """Each answer's headers go through the adapter to the limiter: after the first
    answer the learned rate is 97 % of the server's 40/s, without slow start."""
    async with serve(rate=40.0, burst=5, rate_limit_headers=style) as server:
        adapter = ChatCompletionsAdapter(base_url=server.url, model="m")
        limited = limit(adapter, adaptive=True, max_retries=20, backend=MemoryBackend())
        await _send(adapter, limited, 30)
    learned = limited.statistics().learned
    assert learned is not None
    assert learned.stated_rate == pytest.approx(40.0, rel=0.1)
    assert learned.phase == "probe"
    assert learned.rate <= 40.0


async def test_a_refusal_carries_its_headers() -> None:
    """A 429's rate-limit headers travel on RateLimitedError.signal."""
    async with serve(rate=0.01, burst=1, rate_limit_headers="openai") as server:
        adapter = ChatCompletionsAdapter(base_url=server.url, model="m")
        async with adapter:
            session = await adapter.create_session_async()
            async with session:
                await session.send_async(Request(prompt="first"))
                with pytest.raises(RateLimitedError) as refused:
                    await session.send_async(Request(prompt="second"))
    signal = refused.value.signal
    assert signal is not None
    assert signal.retry_after is not None
    (quota,) = signal.quotas
    assert (quota.unit, quota.limit, quota.remaining) == ("requests", 1, 0)
    assert quota.rate == pytest.approx(0.01, rel=0.05)


async def test_a_stated_capacity_becomes_the_clients_burst() -> None:
    """The server states a bucket of 10 at 100/s (OpenAI headers): the limiter learns
    a client burst of half of it, bounded by 50 ms of requests at the learned rate, and
    its window's cap follows the learned rate times the measured latency (Little's law)
    instead of staying at the floor of 16."""
    async with serve(rate=100.0, burst=10, latency=0.2, rate_limit_headers="openai") as server:
        adapter = ChatCompletionsAdapter(base_url=server.url, model="m")
        limited = limit(adapter, adaptive=True, max_retries=20, backend=MemoryBackend())
        await _send(adapter, limited, 40)
    statistics = limited.statistics()
    learned = statistics.learned
    assert learned is not None
    assert learned.stated_capacity == 10
    assert learned.burst == max(1, min(5, math.ceil(learned.rate * 0.05)))
    assert learned.burst > 1
    assert learned.refused_share is None  # fewer than 50 reservations: not trusted yet
    assert limited.burst is None  # not given: learned
    # Learned about 97/s with answers taking at least 0.2 s: 2 x 97 x 0.2 + 8 = 47; at
    # 40/s it would be 2 x 40 x 0.2 + 8 = 24, above the floor of 16.
    assert statistics.window_cap is not None
    assert statistics.window_cap >= 24


async def test_without_headers_the_burst_stays_one() -> None:
    async with serve(rate=100.0, burst=10, rate_limit_headers="none") as server:
        adapter = ChatCompletionsAdapter(base_url=server.url, model="m")
        limited = limit(adapter, adaptive=True, max_retries=20, backend=MemoryBackend())
        await _send(adapter, limited, 10)
    learned = limited.statistics().learned
    assert learned is not None
    assert (learned.stated_capacity, learned.burst) == (None, 1)
