"""Small agents and backends for the limiter tests; they record what happened and when."""

from __future__ import annotations

import random
from collections import deque
from typing import TYPE_CHECKING, Self

import anyio

from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response
from rampart.limits import MemoryBackend, RateLimitedError

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

    from rampart.limits import LimitedAdapter


class TopJitter(random.Random):
    """``uniform`` returns the top of its range: backoff delays become exact."""

    def uniform(self, a: float, b: float) -> float:
        return b


class NoJitter(random.Random):
    """``uniform`` returns the bottom of its range: backoffs last only ``retry_after``."""

    def uniform(self, a: float, b: float) -> float:
        return a


class RecordingAgent:
    """An ``AgentAdapter`` that records each attempt and may fail on purpose.

    ``failures`` are raised, one per attempt, before any success (shared by all
    sessions). ``refuse`` is consulted on every attempt and may return an exception to
    raise (e.g. a server-side rate limit). ``latency`` is slept per attempt.
    """

    def __init__(
        self,
        *,
        failures: list[BaseException] | None = None,
        latency: float = 0.0,
        refuse: Callable[[RecordingAgent], BaseException | None] | None = None,
        hang: bool = False,
    ) -> None:
        self.failures: deque[BaseException] = deque(failures or [])
        self.latency = latency
        self.refuse = refuse
        self.hang = hang
        self.starts: list[float] = []
        self.prompts: list[str] = []
        self.outcomes: list[str] = []
        self.in_flight = 0
        self.peak_in_flight = 0
        self.sessions_entered = 0
        self.sessions_closed = 0
        self._manifest = AppManifest(name="recording", description="records attempts")

    @property
    def manifest(self) -> AppManifest:
        return self._manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return ObservabilityLevel.RESPONSE_ONLY

    async def create_session_async(self) -> RecordingSession:
        return RecordingSession(self)


class RecordingSession:
    def __init__(self, agent: RecordingAgent) -> None:
        self.agent = agent

    async def __aenter__(self) -> Self:
        self.agent.sessions_entered += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.agent.sessions_closed += 1

    async def send_async(self, request: Request) -> Response:
        agent = self.agent
        agent.starts.append(anyio.current_time())
        agent.prompts.append(request.prompt or "")
        agent.in_flight += 1
        agent.peak_in_flight = max(agent.peak_in_flight, agent.in_flight)
        try:
            if agent.hang:
                await anyio.sleep_forever()
            refusal = agent.refuse(agent) if agent.refuse is not None else None
            if refusal is None and agent.failures:
                refusal = agent.failures.popleft()
            if agent.latency:
                await anyio.sleep(agent.latency)
            if refusal is not None:
                agent.outcomes.append(type(refusal).__name__)
                raise refusal
            agent.outcomes.append("ok")
            return Response(text=f"echo: {request.prompt}")
        finally:
            agent.in_flight -= 1


class ServerBucket:
    """A server-side token bucket: ``refuse`` hook raising 429 when it is empty."""

    def __init__(self, *, rate: float, burst: int, retry_after: float | None = None) -> None:
        self.rate = rate
        self.burst = burst
        self.retry_after = retry_after
        self.tokens = float(burst)
        self.stamp: float | None = None
        self.refused = 0

    def __call__(self, agent: RecordingAgent) -> BaseException | None:
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

    def __call__(self, agent: RecordingAgent) -> BaseException | None:
        if agent.in_flight > self.limit:
            self.refused += 1
            return RateLimitedError("too many concurrent requests")
        return None


class SpyBackend(MemoryBackend):
    """A ``MemoryBackend`` that records every reservation and the limiter's state then."""

    def __init__(self) -> None:
        super().__init__()
        self.limiter: LimitedAdapter | None = None
        self.grants: list[float] = []
        self.in_flight_at_acquire: list[int] = []
        self.slots_at_acquire: list[int] = []

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        if self.limiter is not None:
            self.in_flight_at_acquire.append(self.limiter.statistics().in_flight)
            self.slots_at_acquire.append(self.limiter._core.slots_held)
        now = anyio.current_time()
        wait = self.reserve_now(key, rate=rate, burst=burst, now=now)
        self.grants.append(now + wait)
        return wait
