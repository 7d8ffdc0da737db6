"""Where a limiter's token bucket lives: the ``LimitBackend`` protocol and two backends.

A backend makes one decision, atomically: *reserve a token from bucket ``key`` and
say how long to wait for it* (see ``rampart.limits._policy._bucket``). Because the whole
read-modify-write happens inside the backend (under a lock, a file lock or a Redis
script), limiters in different tasks, threads, processes or hosts that use the same
key share one budget. The backend also owns the clock the bucket is measured with, so
every participant agrees on it; the caller only sleeps the returned relative delay.

* ``MemoryBackend``: this process only (the default).
* ``FileBackend(directory)``: every process on this machine that uses the directory.
* ``RedisBackend(url)`` (``rampart.limits._redis``): every host that reaches the server.

The three built-in backends also implement ``StateBackend``: ``transact(key, update)``
applies a pure function to a small JSON document stored under ``key``, atomically and
with the backend's clock. A learned rate (``limit(adapter, adaptive=True)``) keeps its
bucket *and* its controller in one such document, so every participant learns one rate
(``RedisBackend`` keeps it as a hash instead, so a reservation is one script:
``rampart.limits._shared_rate``). Stored state is input: it is read with the codec's
strict JSON policy and bounded (``MAX_BACKLOG``) before it is used.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import anyio
import anyio.to_thread

from rampart._checks import check_callable, check_path, check_text, invalid
from rampart.limits._clock import RUN_CLOCK
from rampart.limits._policy._bucket import BucketState, reserve

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = [
    "LIMITS_DIR_ENV",
    "LIMITS_REDIS_URL_ENV",
    "FileBackend",
    "LimitBackend",
    "MemoryBackend",
    "StateBackend",
]

T = TypeVar("T")


LIMITS_REDIS_URL_ENV = "RAMPART_LIMITS_REDIS_URL"
"""Environment variable: when set, ``limit(...)`` shares its bucket through this Redis URL."""

LIMITS_DIR_ENV = "RAMPART_LIMITS_DIR"
"""Environment variable: when set (and no Redis URL is), buckets live in files here."""


@runtime_checkable
class LimitBackend(Protocol):
    """Holds token buckets by key and reserves tokens from them atomically."""

    @property
    def description(self) -> str:
        """A short human-readable location (``"memory"``, ``"file:/tmp/x"``, ...)."""
        ...

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        """Reserve one token from bucket ``key``; return the seconds to wait before using it.

        ``rate`` (tokens per second) and ``burst`` (capacity) describe the bucket; all
        users of one key should pass the same values. The reservation is final: a
        caller that stops waiting forfeits its token (the budget is never exceeded).
        """
        ...


@runtime_checkable
class StateBackend(LimitBackend, Protocol):
    """A ``LimitBackend`` that can also update a shared JSON document atomically
    (what a learned rate needs)."""

    async def transact(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        """Apply ``update(document, now)`` to the document stored under ``key``
        (``None`` if there is none) atomically, store the new document, return the result.

        ``now`` is the backend's clock (the one every participant shares). ``update``
        must be a pure, quick, synchronous function: a backend may call it more than
        once (Redis retries it when another host wrote first). Documents are separate
        from ``acquire``'s buckets even under the same key.
        """
        ...


_CLOCK = "a callable returning seconds"


class MemoryBackend:
    """Buckets in this process's memory; the default backend.

    ``clock`` (seconds, monotonic) defaults to the running event loop's clock, continued
    from one event loop to the next (``rampart.limits._clock.RUN_CLOCK``), so a trio
    ``MockClock`` drives it too, and a bucket outlives the event loop it was used on.
    Limiters of one name in a run share one instance (the run's ``default_backend()``,
    or the one you pass).
    """

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        check_callable("MemoryBackend", "clock", clock, expected=_CLOCK, optional=True)
        self._clock = clock
        self._buckets: dict[str, BucketState] = {}
        self._documents: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"MemoryBackend(buckets={len(self._buckets)})"

    @property
    def description(self) -> str:
        return "memory"

    def reserve_now(self, key: str, *, rate: float, burst: int, now: float) -> float:
        """Synchronous reservation at an explicit ``now`` (for tests and sync callers)."""
        with self._lock:
            state, wait = reserve(self._buckets.get(key), now=now, rate=rate, burst=burst)
            self._buckets[key] = state
        return wait

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        check_text("MemoryBackend.acquire", "key", key)
        now = self._clock() if self._clock is not None else RUN_CLOCK.sync()
        return self.reserve_now(key, rate=rate, burst=burst, now=now)

    def transact_now(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
        *,
        now: float,
    ) -> T:
        """Synchronous ``transact`` at an explicit ``now`` (for tests and sync callers)."""
        with self._lock:
            document, result = update(self._documents.get(key), now)
            self._documents[key] = document
        return result

    async def transact(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        check_text("MemoryBackend.transact", "key", key)
        now = self._clock() if self._clock is not None else RUN_CLOCK.sync()
        return self.transact_now(key, update, now=now)


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class FileBackend:
    """Buckets in small JSON files under ``directory``, shared by every local process.

    Each key has its own file (a readable prefix of the key plus a hash). A
    reservation opens the file, takes an exclusive ``fcntl.flock``, reads the state,
    applies the bucket arithmetic, writes it back and unlocks -- in a worker thread
    (``anyio.to_thread``), so it works on asyncio and trio. ``clock`` defaults to
    ``time.monotonic``, which all processes on one machine share. A bucket file that
    cannot be parsed (it was never written completely) restarts *empty*, so a damaged
    file can delay requests but never lets more through. POSIX only (needs ``fcntl``).
    """

    def __init__(
        self, directory: str | os.PathLike[str], *, clock: Callable[[], float] | None = None
    ) -> None:
        path = check_path("FileBackend", "directory", directory)
        try:
            import fcntl  # noqa: F401
        except ImportError:  # pragma: no cover - Windows
            raise RuntimeError(
                "FileBackend needs fcntl.flock (POSIX); use MemoryBackend or RedisBackend"
            ) from None
        if path.exists() and not path.is_dir():
            raise invalid(
                "FileBackend",
                "directory",
                "a directory",
                directory,
                error=ValueError,
                shown=f"{str(path)!r}, which exists and is not a directory",
            )
        check_callable("FileBackend", "clock", clock, expected=_CLOCK, optional=True)
        self._directory = path
        self._clock = clock or time.monotonic

    def __repr__(self) -> str:
        return f"FileBackend({str(self._directory)!r})"

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def description(self) -> str:
        return f"file:{self._directory}"

    def bucket_path(self, key: str) -> Path:
        """The file that holds bucket ``key``."""
        readable = _UNSAFE.sub("_", key)[:64]
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        return self._directory / f"{readable}-{digest}.bucket"

    def reserve_now(self, key: str, *, rate: float, burst: int) -> float:
        """The blocking reservation (runs in a worker thread from ``acquire``)."""
        return self._reserve(key, rate=rate, burst=burst)[1]

    def _reserve(self, key: str, *, rate: float, burst: int) -> tuple[float, float]:
        """``(now, wait)``: the reservation and the clock reading it was made at."""
        import fcntl

        self._directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.bucket_path(key), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 4096):
                raw += chunk
            # Read the clock only while holding the lock: reservations are then
            # ordered by time as well as by the lock.
            now = self._clock()
            state = _parse_state(raw, now=now, rate=rate)
            new_state, wait = reserve(state, now=now, rate=rate, burst=burst)
            data = json.dumps({"tokens": new_state.tokens, "stamp": new_state.stamp}).encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)  # closing the descriptor releases the lock
        return now, wait

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        check_text("FileBackend.acquire", "key", key)
        return await anyio.to_thread.run_sync(self._reserve_call, key, rate, burst)

    def _reserve_call(self, key: str, rate: float, burst: int) -> float:
        return self.reserve_now(key, rate=rate, burst=burst)

    def state_path(self, key: str) -> Path:
        """The file that holds ``transact``'s document for ``key``."""
        return self.bucket_path(key).with_suffix(".state")

    def transact_now(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        """The blocking ``transact`` (runs in a worker thread from ``transact``).

        A document that cannot be parsed is passed to ``update`` as ``None``.
        """
        import fcntl

        self._directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.state_path(key), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            raw = b""
            while chunk := os.read(fd, 4096):
                raw += chunk
            now = self._clock()
            document, result = update(_parse_document(raw), now)
            data = json.dumps(document, allow_nan=False).encode()
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, data)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)
        return result

    async def transact(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        check_text("FileBackend.transact", "key", key)
        return await anyio.to_thread.run_sync(self.transact_now, key, update)


MAX_STATE_BYTES = 1 << 20
"""A state file larger than this is not one rampart wrote: it counts as unreadable."""

MAX_BACKLOG = 3600.0
"""Seconds: a stored bucket whose debt (``-tokens / rate``) or stamp lies further away
than this is damaged (or hostile), not a real queue, and restarts empty."""


def read_state_json(raw: bytes) -> object:
    """The JSON value of a shared state file, or ``None`` when it is unreadable.

    Shared state is input like any other file (another process, or a hostile one,
    wrote it): it is read with the codec's strict JSON policy (finite numbers, no
    duplicate keys), bounded in size, and anything the policy refuses -- including
    nesting too deep to decode, a ``RecursionError`` -- counts as no state.
    """
    from rampart.codec import parse_strict_json

    if not raw or len(raw) > MAX_STATE_BYTES:
        return None
    try:
        return parse_strict_json(data=raw.decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, ValueError):  # SchemaError is a ValueError
        return None


def _parse_state(raw: bytes, *, now: float, rate: float) -> BucketState | None:
    """The stored state; ``None`` for a new (empty) file; an empty bucket if unreadable
    or beyond the sanity bounds (``MAX_BACKLOG``)."""
    if not raw:
        return None
    data = read_state_json(raw)
    try:
        tokens = float(data["tokens"])  # type: ignore[index]
        stamp = float(data["stamp"])  # type: ignore[index]
    except (ValueError, KeyError, TypeError, IndexError):
        return BucketState(tokens=0.0, stamp=now)
    sane = (
        math.isfinite(tokens)
        and math.isfinite(stamp)
        and tokens >= -rate * MAX_BACKLOG
        and abs(stamp - now) <= 1e9
        and stamp <= now + MAX_BACKLOG
    )
    if not sane:
        return BucketState(tokens=0.0, stamp=now)
    return BucketState(tokens=tokens, stamp=stamp)


def _parse_document(raw: bytes) -> dict[str, Any] | None:
    document = read_state_json(raw)
    return document if isinstance(document, dict) else None
