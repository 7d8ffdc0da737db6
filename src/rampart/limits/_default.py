"""``default_backend()``: the backend the environment asks for, one per run.

Kept apart from ``_backends`` because it is the one place that knows every backend,
Redis included (``_redis`` builds on ``_shared_rate``, which builds on the backends'
protocol): with it here, no import runs in a circle.
"""

from __future__ import annotations

import os
import threading

from rampart import _runs
from rampart.limits._backends import (
    LIMITS_DIR_ENV,
    LIMITS_REDIS_URL_ENV,
    FileBackend,
    LimitBackend,
    MemoryBackend,
)

__all__ = ["default_backend"]


class _Defaults:
    """A run's default backends, one per setting of the environment."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.backends: dict[tuple[str, str], LimitBackend] = {}


def default_backend() -> LimitBackend:
    """The backend ``limit(...)`` uses when none is given, chosen from the environment.

    1. ``RAMPART_LIMITS_REDIS_URL`` set and non-empty -> ``RedisBackend(url)``;
    2. else ``RAMPART_LIMITS_DIR`` set and non-empty -> ``FileBackend(directory)``;
    3. else a ``MemoryBackend()``.

    One per run and setting: every call in a run (a pytest session; outside pytest,
    the process) that finds the same setting gets the same backend, so every limiter
    of the run without a ``backend=`` shares it (and one Redis connection pool).
    """
    url = os.environ.get(LIMITS_REDIS_URL_ENV, "")
    directory = os.environ.get(LIMITS_DIR_ENV, "")
    setting = ("redis", url) if url else ("file", directory) if directory else ("memory", "")
    defaults = _runs.current().state(__name__, _Defaults)
    backend = defaults.backends.get(setting)
    if backend is None:
        with defaults.lock:
            backend = defaults.backends.get(setting)
            if backend is None:
                backend = defaults.backends[setting] = _make(*setting)
    return backend


def _make(kind: str, where: str) -> LimitBackend:
    if kind == "redis":
        from rampart.limits._redis import RedisBackend

        return RedisBackend(where)
    if kind == "file":
        return FileBackend(where)
    return MemoryBackend()
