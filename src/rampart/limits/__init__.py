"""Rate-aware execution: pace, bound and retry an agent adapter's requests.

``limit(adapter, rate=..., burst=..., max_concurrency=..., adaptive=...)`` wraps any
``AgentAdapter``; its sessions take a concurrency slot, then a token, per attempt, and
retry rate-limited and transient failures with backoff. The token bucket lives in a
``LimitBackend`` (memory, a directory of lock files, or Redis) so several processes or
hosts can share one budget. See ``docs/limits.md``.
"""

from rampart.limits._aimd import DEFAULT_ADAPTIVE_CAP, AimdWindow
from rampart.limits._backends import (
    LIMITS_DIR_ENV,
    LIMITS_REDIS_URL_ENV,
    FileBackend,
    LimitBackend,
    MemoryBackend,
    default_backend,
)
from rampart.limits._core import FailureKind, classify
from rampart.limits._errors import RateLimitedError
from rampart.limits._limiter import LimitedAdapter, LimitedSession, limit, live_limiters
from rampart.limits._redis import RedisBackend
from rampart.limits._stats import LimiterStatistics

__all__ = [
    "AimdWindow",
    "DEFAULT_ADAPTIVE_CAP",
    "FailureKind",
    "FileBackend",
    "LIMITS_DIR_ENV",
    "LIMITS_REDIS_URL_ENV",
    "LimitBackend",
    "LimitedAdapter",
    "LimitedSession",
    "LimiterStatistics",
    "MemoryBackend",
    "RateLimitedError",
    "RedisBackend",
    "classify",
    "default_backend",
    "limit",
    "live_limiters",
]
