"""Two limiters sharing one backend keep one learned-rate document: what is stored in it
(``rampart.limits._policy._learned_rate``'s state), read back from the backend."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing

from rampart._runs import Run
from rampart.core.types import Request
from rampart.limits import MemoryBackend
from rampart.limits._limiter import _build
from rampart.limits._policy import _learned_rate
from rampart.limits._policy._learned_rate import LearnedState, RatePolicy
from tests.limits._server import ServerBucket, recording_agent

if TYPE_CHECKING:
    from rampart.limits import LimitedAdapter


def _run_two(limiters: list[LimitedAdapter], n: int) -> None:
    async def one(limited: LimitedAdapter) -> None:
        session = await limited.create_session_async()
        async with session:
            await session.send_async(Request(prompt="x"))

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            for i in range(n):
                nursery.start_soon(one, limiters[i % len(limiters)])

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


class TestLimitersSharingABackend:
    @pytest.mark.parametrize("burst", [1, 10])
    def test_one_learned_rate_instead_of_two(self, burst: int) -> None:
        """Two limiters (two workers' worth) against one 20/s agent, 600 requests. Sharing
        a backend they are one controller: both see the same learned rate (each as of
        its last request), about the agent's, and every request is answered. Virtual
        time, so load-independent (trio's scheduler still varies the order, so bounds)."""
        bucket = ServerBucket(rate=20, burst=burst)
        agent, server = recording_agent(refuse=bucket, latency=0.05)
        common = MemoryBackend()
        limiters = [
            _build(
                agent,
                adaptive=True,
                name="agent",
                max_retries=50,
                backend=common,
                rng=random.Random(seed),
                run=Run(),  # two workers: each process its own run
            )
            for seed in (1, 2)
        ]
        _run_two(limiters, 600)
        assert all(limited.statistics().failed == 0 for limited in limiters)
        first, second = (limited.statistics().learned for limited in limiters)
        assert first is not None
        assert second is not None
        # One document in the backend: both saw its cuts (each up to its last request).
        stored = common.transact_now("agent", lambda document, _: (document, document), now=0.0)
        document = LearnedState.from_dict(stored)
        assert document is not None
        assert max(first.cuts, second.cuts) == document.generation >= 1
        assert 12.0 <= _learned_rate.rate_at(document, document.stamp, RatePolicy()) <= 26.0
        # 600 requests at about 20/s in all, not 2 x 20/s: the limiters did not each
        # claim the whole rate (then the run would take ~15 s and most would be refused).
        span = max(server.starts) - min(server.starts)
        assert span >= 600 / 20 * 0.9
        assert bucket.refused <= 60
