"""``default_backend()``: the backend the environment asks for.

Kept apart from ``_backends`` because it is the one place that knows every backend,
Redis included (``_redis`` builds on ``_shared_rate``, which builds on the backends'
protocol): with it here, no import runs in a circle.
"""

from __future__ import annotations

import os

from rampart.limits._backends import (
    LIMITS_DIR_ENV,
    LIMITS_REDIS_URL_ENV,
    FileBackend,
    LimitBackend,
    MemoryBackend,
)

__all__ = ["default_backend"]


def default_backend() -> LimitBackend:
    """The backend ``limit(...)`` uses when none is given, chosen from the environment.

    1. ``RAMPART_LIMITS_REDIS_URL`` set and non-empty -> ``RedisBackend(url)``;
    2. else ``RAMPART_LIMITS_DIR`` set and non-empty -> ``FileBackend(directory)``;
    3. else a fresh ``MemoryBackend()``.
    """
    url = os.environ.get(LIMITS_REDIS_URL_ENV, "")
    if url:
        from rampart.limits._redis import RedisBackend

        return RedisBackend(url)
    directory = os.environ.get(LIMITS_DIR_ENV, "")
    if directory:
        return FileBackend(directory)
    return MemoryBackend()
