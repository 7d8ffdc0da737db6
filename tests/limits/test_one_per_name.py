"""A name is one limiter per run: every ``limit()`` of it shares one bucket, learned
rate, window and set of statistics, on asyncio and trio, across the run's event loops."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
import trio
import trio.testing

from rampart.core.types import Request
from rampart.limits import (
    FileBackend,
    MemoryBackend,
    default_backend,
    limit,
    live_limiters,
    new_run,
)
from tests._builders import replying_agent
from tests.limits._server import ServerBucket, recording_agent

if TYPE_CHECKING:
    from pathlib import Path

    from rampart.limits import LimitedAdapter


async def _send(limited: LimitedAdapter, prompt: str = "x") -> str:
    async with await limited.create_session_async() as session:
        return (await session.send_async(Request(prompt=prompt))).text


class TestOneLimiterPerName:
    @pytest.mark.anyio
    async def test_wrappers_of_one_name_share_the_limiter_not_the_adapter(self) -> None:
        """Two limit() calls of one name: each sends to its own adapter, through one
        window (max_concurrency=1 holds across both) and one set of statistics."""
        first_agent, first = recording_agent(latency=0.01)
        second_agent, second = recording_agent(latency=0.01)
        a = limit(first_agent, max_concurrency=1, name="agent")
        b = limit(second_agent, max_concurrency=1, name="agent")
        assert a.limiter is b.limiter
        assert a.adapter is first_agent
        assert b.adapter is second_agent
        async with anyio.create_task_group() as group:
            for limited in (a, b, a, b):
                group.start_soon(_send, limited)
        assert (len(first.outcomes), len(second.outcomes)) == (2, 2)
        stats = a.statistics()
        assert stats == b.statistics()
        assert (stats.requests, stats.peak_in_flight) == (4, 1)
        assert [item.name for item in live_limiters()] == ["agent"]

    def test_a_limiter_per_trial_clone_is_one_learned_rate(self) -> None:
        """30 clones, each wrapping the agent itself (a function-scoped fixture), against
        a 20/s burst-1 agent: one limiter learns one rate and every request is answered.
        As 30 limiters each slow-starting at 4/s they sent 120/s. Virtual time."""
        bucket = ServerBucket(rate=20, burst=1)
        agent, server = recording_agent(refuse=bucket, latency=0.05)
        results: list[str] = []

        async def clone(index: int) -> None:
            limited = limit(agent, adaptive=True, name="agent")  # the fixture, per clone
            for turn in range(3):
                results.append(await _send(limited, f"{index}-{turn}"))

        async def main() -> None:
            async with anyio.create_task_group() as group:
                for index in range(30):
                    group.start_soon(clone, index)

        trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
        limiters = live_limiters()
        assert len(limiters) == 1
        stats = limiters[0].statistics()
        assert len(results) == 90
        assert (stats.requests, stats.failed) == (90, 0)
        assert stats.rate_limited == bucket.refused
        assert bucket.refused <= 9  # one rate learning the agent's, not 30 overshooting it
        assert server.outcomes.count("ok") == 90

    @pytest.mark.parametrize(
        ("first", "second", "named"),
        [
            ({"rate": 10}, {"rate": 20}, "rate=20.0 (it has rate=10.0)"),
            ({"rate": 10}, {"rate": 10, "burst": 2}, "burst=2 (it has burst=1)"),
            ({"adaptive": True}, {}, "adaptive=False (it has adaptive=True)"),
            ({"max_concurrency": 4}, {}, "max_concurrency=None (it has max_concurrency=4)"),
            ({"retry_budget": 5}, {}, "retry_budget=60.0 (it has retry_budget=5.0)"),
            ({"max_retries": 3}, {}, "max_retries=None (it has max_retries=3)"),
            ({"max_retry_after": 5}, {}, "max_retry_after=60.0 (it has max_retry_after=5.0)"),
            (
                {"rate": 1, "backend": MemoryBackend()},
                {"rate": 1, "backend": MemoryBackend()},
                "it has another backend: memory",
            ),
            ({"rate": 1, "backend": MemoryBackend()}, {"rate": 1}, "the run's default backend"),
        ],
    )
    def test_other_settings_for_a_name_are_refused_by_name(
        self, first: dict[str, Any], second: dict[str, Any], named: str
    ) -> None:
        """A name cannot be two limiters: a second limit() asking for other settings
        fails, naming each setting that differs and what the limiter has."""
        limit(replying_agent(), name="agent", **first)
        with pytest.raises(ValueError, match="name='agent' is already a limiter") as raised:
            limit(replying_agent(), name="agent", **second)
        assert named in str(raised.value)
        assert "give them the same settings, or another name" in str(raised.value)

    def test_backends_of_one_place_are_one_backend(self, tmp_path: Path) -> None:
        """Each use of RAMPART_LIMITS_DIR makes a FileBackend: one directory, one limiter."""
        a = limit(replying_agent(), rate=5, name="agent", backend=FileBackend(tmp_path))
        b = limit(replying_agent(), rate=5, name="agent", backend=FileBackend(str(tmp_path)))
        assert a.limiter is b.limiter
        c = limit(replying_agent(), rate=5, name="other")
        d = limit(replying_agent(), rate=5, name="other", backend=default_backend())
        assert c.limiter is d.limiter

    def test_each_run_has_its_own_limiters(self) -> None:
        """A new run (a pytest session; here ``new_run()``) starts without limiters, and a
        wrapper made before it (an LLM client kept across runs) uses the run's own."""
        kept = limit(replying_agent(), rate=5, name="agent")
        outer = kept.limiter
        with new_run():
            assert live_limiters() == ()
            inner = kept.limiter
            assert inner is not outer
            assert [item.name for item in live_limiters()] == ["agent"]
            assert inner.backend is not outer.backend  # the run's own default backend
        assert kept.limiter is outer


class TestEventLoops:
    def test_the_next_event_loop_continues_the_limiters_time(self) -> None:
        """A limiter (and the run's default backend) used by one event loop and then by
        the next, whose clock starts elsewhere (trio: a random origin; here a virtual
        clock started over at 0 after 1,000 s): the bucket's next token is due one
        spacing after the last send, not 1,000 s later nor at once."""
        limited = limit(replying_agent(), rate=0.5, name="agent")  # one every 2 s
        waited: list[float] = []

        async def first_loop() -> None:
            await trio.sleep(1000.0)
            await _send(limited)

        async def next_loop() -> None:
            began = trio.current_time()
            await _send(limited)
            waited.append(trio.current_time() - began)

        trio.run(first_loop, clock=trio.testing.MockClock(autojump_threshold=0))
        trio.run(next_loop, clock=trio.testing.MockClock(autojump_threshold=0))
        assert 1.5 <= waited[0] <= 2.0 + 1e-6
        assert limited.statistics().requests == 2

    def test_the_learned_rate_survives_from_one_event_loop_to_the_next(self) -> None:
        """Slow start's progress made on one loop is where the next loops' requests
        start (one learned rate per run), not 4/s again: a virtual clock, then trio's
        own (its origin thousands of seconds away), then a virtual one started over at
        0. (On the raw loop clocks that jump overflowed the latency floor's decay.)"""
        limited = limit(replying_agent(), adaptive=True, name="agent")
        rates: list[float] = []

        async def loop(requests: int) -> None:
            async with anyio.create_task_group() as group:
                for _ in range(requests):
                    group.start_soon(_send, limited)
            learned = limited.statistics().learned
            assert learned is not None
            rates.append(learned.rate)

        trio.run(loop, 200, clock=trio.testing.MockClock(autojump_threshold=0))
        trio.run(loop, 20)
        trio.run(loop, 20, clock=trio.testing.MockClock(autojump_threshold=0))
        assert rates[0] > 8.0  # slow start doubled from 4/s
        assert rates == sorted(rates)  # nothing refused: it only grows
        assert limited.statistics().requests == 240

    def test_two_event_loops_at_once_are_refused(self) -> None:
        """A request from a second event loop while the first one's is inside the
        limiter: a RuntimeError naming it (its queues would mix the loops' tasks)."""
        inside = threading.Event()
        release = threading.Event()

        async def held(request: Request, turn: int) -> str:
            inside.set()
            await anyio.to_thread.run_sync(release.wait)
            return "ok"

        from rampart.testing import ScriptedAgent

        limited = limit(ScriptedAgent(held), max_concurrency=4, name="agent")
        errors: list[BaseException] = []

        def other_loop() -> None:
            inside.wait()
            try:
                anyio.run(_send, limited, backend="trio")
            except RuntimeError as error:
                errors.append(error)
            finally:
                release.set()

        thread = threading.Thread(target=other_loop)
        thread.start()
        assert anyio.run(_send, limited, backend="asyncio") == "ok"
        thread.join()
        assert len(errors) == 1
        assert "used from a second event loop" in str(errors[0])
        assert "'agent'" in str(errors[0])
