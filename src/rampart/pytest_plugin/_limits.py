"""Rate limiters in a pytest run: one shared budget under xdist, statistics in the report.

Under ``pytest -n N`` the controller creates one directory per run and hands it to every
worker, which exports it as ``RAMPART_LIMITS_DIR`` (unless the user configured a budget
backend already). ``rampart.limits.limit(...)`` then keeps its token bucket in that
directory, so the configured rate holds for the whole run, not per worker.

Statistics are snapshotted after every test (limiters built inside a test may be gone
by the end of the session), merged across processes by limiter name, and written to
the report's ``metadata["limits"]``.
"""

from __future__ import annotations

import itertools
import os
import sys
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from types import ModuleType

__all__ = [
    "LimitTracker",
    "WORKERINPUT_KEY",
    "WORKEROUTPUT_KEY",
    "export_shared_directory",
    "merge_limit_statistics",
]

WORKERINPUT_KEY = "rampart_limits_dir"
WORKEROUTPUT_KEY = "rampart_limits"

_SUMMED = (
    "requests",
    "retries",
    "rate_limited",
    "transient_failures",
    "failed",
    "rate_limit_episodes",
    "wait_seconds",
)


def _loaded_limits() -> ModuleType | None:
    """``rampart.limits`` once something in this run has imported it, else ``None``.

    The plugin does not load rate limiting at pytest start: until a test imports it,
    no limiter (and no ``LimitedAdapter``) can exist, so there is nothing to observe.
    """
    return sys.modules.get("rampart.limits")


def export_shared_directory(workerinput: dict[str, Any]) -> None:
    """On a worker: share the controller's bucket directory unless a backend is set."""
    from rampart.limits import LIMITS_DIR_ENV, LIMITS_REDIS_URL_ENV

    directory = workerinput.get(WORKERINPUT_KEY)
    if not directory or os.environ.get(LIMITS_DIR_ENV) or os.environ.get(LIMITS_REDIS_URL_ENV):
        return
    os.environ[LIMITS_DIR_ENV] = str(directory)


class LimitTracker:
    """Latest statistics of every limiter this process has seen, keyed by identity."""

    def __init__(self) -> None:
        self._latest: dict[int, dict[str, Any]] = {}
        # Our own key per limiter: id() could be reused once a limiter is collected.
        self._keys: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()
        self._next_key = itertools.count()

    def snapshot(self) -> None:
        limits = _loaded_limits()
        if limits is None:
            return
        for limiter in limits.live_limiters():
            self._record(limiter)

    def observe(self, adapters: list[object]) -> None:
        """A test or clone finished: record every live limiter. ``live_limiters()`` is
        the one way of finding them; the limiters among ``adapters`` (those the
        executions used) are alive while the caller holds them, so they are included."""
        del adapters
        self.snapshot()

    def _record(self, limiter: Any) -> None:
        key = self._keys.get(limiter)
        if key is None:
            key = self._keys[limiter] = next(self._next_key)
        self._latest[key] = limiter.statistics().as_dict()

    def statistics(self) -> list[dict[str, Any]]:
        self.snapshot()
        return list(self._latest.values())


def merge_limit_statistics(snapshots: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One entry per limiter name: counters summed, peaks maxed, ``processes`` counted."""
    merged: dict[str, dict[str, Any]] = {}
    for snapshot in snapshots:
        name = str(snapshot.get("name", "?"))
        entry = merged.get(name)
        if entry is None:
            entry = dict(snapshot)
            entry["processes"] = 1
            merged[name] = entry
            continue
        entry["processes"] += 1
        for key in _SUMMED:
            entry[key] = entry.get(key, 0) + snapshot.get(key, 0)
        entry["peak_in_flight"] = max(
            entry.get("peak_in_flight", 0), snapshot.get("peak_in_flight", 0)
        )
        entry["in_flight"] = entry.get("in_flight", 0) + snapshot.get("in_flight", 0)
    return merged
