"""Rate-aware execution: pace, bound and retry an agent adapter's requests.

``limit(adapter, rate=..., burst=..., max_concurrency=..., adaptive=...)`` wraps any
``AgentAdapter``; its sessions take a concurrency slot, then a token, per attempt, and
retry rate-limited and transient failures with backoff. With ``adaptive=True`` the
bucket's rate is learned from the agent's rate-limit answers and headers (which
adapters report with ``report_rate_limit_headers``). The token bucket, and a learned
rate, live in a backend (memory, a directory of lock files, or Redis) so several
processes or hosts share one budget. A name is one ``Limiter`` per run, whatever number
of ``limit()`` calls use it. ``LimitedTransport`` / ``LimitedSyncTransport`` put the
same limiter under an agent's own httpx-based model client (loaded on first use:
they need httpx). See ``docs/limits.md`` and ``docs/real-agents.md``.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes
from rampart._pacing import DEFAULT_ADAPTIVE_CAP, AimdWindow
from rampart._runs import new_run
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
from rampart.limits._limiter import LimitedAdapter, LimitedSession, limit
from rampart.limits._policy._limiter_core import (
    DEFAULT_MAX_RETRY_AFTER,
    DEFAULT_RETRY_BUDGET,
    FailureKind,
    classify,
)
from rampart.limits._redis import RedisBackend
from rampart.limits._registry import live_limiters
from rampart.limits._shared_rate import LearnedRateStatistics
from rampart.limits._shell import Limiter
from rampart.limits._signals import (
    Quota,
    RateLimitSignal,
    parse_rate_limit_headers,
    parse_retry_after,
    report_rate_limit,
    report_rate_limit_headers,
)
from rampart.limits._stats import LimiterStatistics

if TYPE_CHECKING:
    from rampart.limits._transport import LimitedSyncTransport, LimitedTransport

# The transports need httpx (an optional dependency): loaded on first access.
__getattr__, __dir__ = lazy_attributes(
    __name__,
    globals(),
    {
        "LimitedSyncTransport": "rampart.limits._transport",
        "LimitedTransport": "rampart.limits._transport",
    },
)

__all__ = [
    "AimdWindow",
    "DEFAULT_ADAPTIVE_CAP",
    "DEFAULT_MAX_RETRY_AFTER",
    "DEFAULT_RETRY_BUDGET",
    "FailureKind",
    "FileBackend",
    "LIMITS_DIR_ENV",
    "LIMITS_REDIS_URL_ENV",
    "LearnedRateStatistics",
    "LimitBackend",
    "LimitedAdapter",
    "LimitedSession",
    "LimitedSyncTransport",
    "LimitedTransport",
    "Limiter",
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
    "new_run",
    "parse_rate_limit_headers",
    "parse_retry_after",
    "report_rate_limit",
    "report_rate_limit_headers",
]
