"""Rate-aware execution: pace, bound and retry an agent adapter's requests.

``limit(adapter, rate=..., burst=..., max_concurrency=..., adaptive=...)`` wraps any
``AgentAdapter``; its sessions take a concurrency slot, then a token, per attempt, and
retry rate-limited and transient failures with backoff. With ``adaptive=True`` the
bucket's rate is learned from the agent's rate-limit answers and headers (which
adapters report with ``report_rate_limit_headers``). The token bucket, and a learned
rate, live in a backend (memory, a directory of lock files, or Redis) so several
processes or hosts share one budget. See ``docs/limits.md``.
"""

from rampart._aimd import DEFAULT_ADAPTIVE_CAP, AimdWindow
from rampart.limits._backends import (
    LIMITS_DIR_ENV,
    LIMITS_REDIS_URL_ENV,
    FileBackend,
    LimitBackend,
    MemoryBackend,
    StateBackend,
)
from rampart.limits._default import default_backend
from rampart.limits._errors import RateLimitedError
from rampart.limits._limiter import LimitedAdapter, LimitedSession, limit, live_limiters
from rampart.limits._policy._limiter_core import FailureKind, classify
from rampart.limits._redis import RedisBackend
from rampart.limits._shared_rate import LearnedRateStatistics
from rampart.limits._signals import (
    Quota,
    RateLimitSignal,
    parse_rate_limit_headers,
    parse_retry_after,
    report_rate_limit,
    report_rate_limit_headers,
)
from rampart.limits._stats import LimiterStatistics

__all__ = [
    "AimdWindow",
    "DEFAULT_ADAPTIVE_CAP",
    "FailureKind",
    "FileBackend",
    "LIMITS_DIR_ENV",
    "LIMITS_REDIS_URL_ENV",
    "LearnedRateStatistics",
    "LimitBackend",
    "LimitedAdapter",
    "LimitedSession",
    "LimiterStatistics",
    "MemoryBackend",
    "Quota",
    "RateLimitSignal",
    "RateLimitedError",
    "RedisBackend",
    "StateBackend",
    "classify",
    "default_backend",
    "limit",
    "live_limiters",
    "parse_rate_limit_headers",
    "parse_retry_after",
    "report_rate_limit",
    "report_rate_limit_headers",
]
