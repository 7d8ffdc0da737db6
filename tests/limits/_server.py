"""The agent-side fixtures of the limiter tests: a recording server behind a
``ScriptedAgent``, server-side rate limits, jitter sources and a spying backend."""

from __future__ import annotations

import random
from collections import deque
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response
from rampart.limits import MemoryBackend, RateLimitedError
from rampart.testing import ScriptedAgent

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from rampart.limits import LimitedAdapter


class TopJitter(random.Random):
    """``uniform`` returns the top of its range: backoff delays become exact."""

    def uniform(self, a: float, b: float) -> float:
        return b


class NoJitter(random.Random):
    """``uniform`` returns the bottom of its range: backoffs last only ``retry_after``."""

    def uniform(self, a: float, b: float) -> float:
        return a


class AgentServer:
    """The server side of a limiter test's agent: a ``ScriptedAgent`` script function.

    Every attempt is recorded (``starts`` in clock time, ``outcomes``, ``in_flight``).
    ``failures`` are raised, one per attempt, before any success (shared by all
    sessions). ``refuse`` is consulted on every attempt and may return an exception to
    raise (e.g. a server-side rate limit). ``latency`` is slept per attempt; ``hang``
    makes attempts wait forever (until cancelled). Successful attempts answer
    ``"echo: <prompt>"``.
    """

    def __init__(
        self,
        *,
        failures: list[BaseException] | None = None,
        latency: float = 0.0,
        refuse: Callable[[AgentServer], BaseException | None] | None = None,
        hang: bool = False,
    ) -> None:
        self.failures: deque[BaseException] = deque(failures or [])
        self.latency = latency
        self.refuse = refuse
        self.hang = hang
        self.gate: Callable[[], Awaitable[None]] | None = None
        self.starts: list[float] = []
        self.outcomes: list[str] = []
        self.in_flight = 0

    async def __call__(self, request: Request, turn: int) -> Response:
        self.starts.append(anyio.current_time())
        self.in_flight += 1
        try:
            if self.hang:
                await anyio.sleep_forever()
            if self.gate is not None:
                await self.gate()
            refusal = self.refuse(self) if self.refuse is not None else None
            if refusal is None and self.failures:
                refusal = self.failures.popleft()
            if self.latency:
                await anyio.sleep(self.latency)
            if refusal is not None:
                self.outcomes.append(type(refusal).__name__)
                raise refusal
            self.outcomes.append("ok")
            return Response(text=f"echo: {request.prompt}")
        finally:
            self.in_flight -= 1


def recording_agent(**server: Any) -> tuple[ScriptedAgent, AgentServer]:
    """A response-only ``ScriptedAgent`` answering through an ``AgentServer(**server)``."""
    backend = AgentServer(**server)
    agent = ScriptedAgent(
        backend,
        observability=ObservabilityLevel.RESPONSE_ONLY,
        manifest=AppManifest(name="recording", description="records attempts"),
    )
    return agent, backend


class ServerBucket:
    """A server-side token bucket: ``refuse`` hook raising 429 when it is empty."""

    def __init__(self, *, rate: float, burst: int, retry_after: float | None = None) -> None:
        self.rate = rate
        self.burst = burst
        self.retry_after = retry_after
        self.tokens = float(burst)
        self.stamp: float | None = None
        self.refused = 0

    def __call__(self, server: AgentServer) -> BaseException | None:
        now = anyio.current_time()
        if self.stamp is not None:
            self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens >= 1.0 - 1e-9:
            self.tokens -= 1.0
            return None
        self.refused += 1
        return RateLimitedError("429 Too Many Requests", retry_after=self.retry_after)


class ConcurrencyCeiling:
    """A ``refuse`` hook: 429 whenever more than ``limit`` attempts are in flight."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.refused = 0

    def __call__(self, server: AgentServer) -> BaseException | None:
        if server.in_flight > self.limit:
            self.refused += 1
            return RateLimitedError("too many concurrent requests")
        return None


class SpyBackend(MemoryBackend):
    """A ``MemoryBackend`` that records every reservation and the limiter's state then.

    ``acquire`` yields once before reserving, so reservations made by requests that do
    not wait for one another overlap (``peak_acquiring`` counts how many did).
    """

    def __init__(self) -> None:
        super().__init__()
        self.limiter: LimitedAdapter | None = None
        self.grants: list[float] = []
        self.in_flight_at_acquire: list[int] = []
        self.acquiring = 0
        self.peak_acquiring = 0

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        if self.limiter is not None:
            self.in_flight_at_acquire.append(self.limiter.statistics().in_flight)
        self.acquiring += 1
        self.peak_acquiring = max(self.peak_acquiring, self.acquiring)
        try:
            await anyio.lowlevel.checkpoint()
            now = anyio.current_time()
            wait = self.reserve_now(key, rate=rate, burst=burst, now=now)
        finally:
            self.acquiring -= 1
        self.grants.append(now + wait)
        return wait
