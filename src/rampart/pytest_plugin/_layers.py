"""The library layers in a pytest run: rate limiters and LLM clients.

**Rate limiters.** Under ``pytest -n N`` the controller creates one directory per run
and hands it to every worker, which exports it as ``RAMPART_LIMITS_DIR`` (unless the
user configured a budget backend already). ``rampart.limits.limit(...)`` then keeps
its token bucket in that directory, so the configured rate holds for the whole run,
not per worker. The session is a run (``rampart._runs``, opened by ``_session``): a
limiter is one per name in it, whatever number of ``limit()`` calls and transports use
the name, and ``live_limiters()`` lists them. Statistics are snapshotted after every
test and written to the report's ``metadata["limits"]``: one entry per name, merged
across processes.

**LLM clients.** ``--rampart-llm-cache DIR`` (or the ``rampart_llm_cache`` ini option,
relative to the rootdir) turns on the on-disk response cache for every ``LLMClient``
of the run that was not given ``cache=`` (``rampart.llm.configure_cache``); without
either, the ``RAMPART_LLM_CACHE`` environment variable decides. xdist workers parse
the same options, so they share the directory (writes are atomic). The counters of
every LLM client name used during the run (calls, requests, cache hits and misses,
tokens, ...) go into the report's ``metadata["llm"]``. The limiters behind the
clients appear in ``metadata["limits"]`` like any other.

Both layers' statistics are merged across processes by name (``merge_by_name``: counters
summed, ``processes`` counted); the xdist transport carries a worker's to the
controller (``_xdist``). Nothing here imports either layer unless a cache is
configured or a test used it.
"""

from __future__ import annotations

import itertools
import os
import sys
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart.pytest_plugin._options import add_option

if TYPE_CHECKING:
    from types import ModuleType

    import pytest

__all__ = [
    "LIMITS_OUTPUT_KEY",
    "LLMRunStatistics",
    "LLM_OUTPUT_KEY",
    "LimitTracker",
    "WORKERINPUT_KEY",
    "add_options",
    "cache_directory",
    "export_shared_directory",
    "merge_by_name",
    "merge_limit_statistics",
]

WORKERINPUT_KEY = "rampart_limits_dir"
LIMITS_OUTPUT_KEY = "rampart_limits"
LLM_OUTPUT_KEY = "rampart_llm"

_SUMMED = (
    "requests",
    "retries",
    "rate_limited",
    "transient_failures",
    "failed",
    "rate_limit_episodes",
    "wait_seconds",
    "in_flight",
)
_COUNTERS = (
    "calls",
    "requests",
    "cache_hits",
    "cache_misses",
    "cache_writes",
    "empty_replies",
    "failures",
    "prompt_tokens",
    "completion_tokens",
)


def add_options(parser: pytest.Parser) -> None:
    """``--rampart-llm-cache`` and its ini option."""
    add_option(
        parser,
        "rampart_llm_cache",
        metavar="DIR",
        help="Cache LLM judge/attacker/generator replies on disk in DIR (default: off).",
        ini="Directory of the on-disk LLM response cache, relative to the rootdir (default: off).",
    )


def merge_by_name(
    snapshots: list[dict[str, Any]], *, summed: tuple[str, ...], maxed: tuple[str, ...] = ()
) -> dict[str, dict[str, Any]]:
    """One entry per ``name``: ``summed`` counters summed, ``maxed`` peaks maxed,
    ``processes`` counted."""
    merged: dict[str, dict[str, Any]] = {}
    for snapshot in snapshots:
        name = str(snapshot.get("name", "?"))
        entry = merged.get(name)
        if entry is None:
            merged[name] = {**snapshot, "processes": 1}
            continue
        entry["processes"] += 1
        for key in summed:
            entry[key] = entry.get(key, 0) + snapshot.get(key, 0)
        for key in maxed:
            entry[key] = max(entry.get(key, 0), snapshot.get(key, 0))
    return merged


# -- rate limiters ----------------------------------------------------------------------


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
    """``metadata["limits"]``: one entry per limiter name, across processes."""
    return merge_by_name(snapshots, summed=_SUMMED, maxed=("peak_in_flight",))


# -- LLM clients ------------------------------------------------------------------------


def cache_directory(config: pytest.Config) -> Path | None:
    """The cache directory the options name (CLI first, then ini), or ``None``."""
    option = config.getoption("rampart_llm_cache", None)
    if option:
        return Path(option).expanduser().resolve()
    ini = str(config.getini("rampart_llm_cache") or "").strip()
    if ini:
        path = Path(ini).expanduser()
        return path if path.is_absolute() else (config.rootpath / path).resolve()
    return None


def _snapshot() -> dict[str, dict[str, Any]]:
    if "rampart.llm" not in sys.modules:
        return {}
    from rampart.llm import llm_statistics

    return {stats.name: stats.as_dict() for stats in llm_statistics()}


class LLMRunStatistics:
    """Per-run LLM counters: this process's (minus what ran before the run) and workers'.

    ``configure`` applies the cache option (``cache``: the directory it names, or None);
    ``close`` undoes it (an in-process pytester run must not leak its cache setting).
    """

    def __init__(self, *, cache: Path | None = None) -> None:
        self.cache = cache
        self.cache_configured = False
        self.baseline = _snapshot()
        self.worker_statistics: list[dict[str, Any]] = []

    def configure(self) -> None:
        """Turn the response cache on for the run's clients, when the options name one."""
        if self.cache is not None and not self.cache_configured:
            from rampart.llm import configure_cache

            configure_cache(self.cache)
            self.cache_configured = True

    def close(self) -> None:
        if self.cache_configured:
            self.cache_configured = False
            from rampart.llm import reset_cache_configuration

            reset_cache_configuration()

    def local(self) -> list[dict[str, Any]]:
        """This process's counters since the run began, for names used in the run."""
        used = []
        for name, now in _snapshot().items():
            before = self.baseline.get(name, {})
            delta = dict(now)
            for key in _COUNTERS:
                delta[key] = int(now.get(key, 0)) - int(before.get(key, 0))
            if delta["calls"] > 0:
                used.append(delta)
        return used

    def add_worker(self, received: object) -> None:
        """A worker's ``local()``, from its workeroutput (``_xdist``)."""
        if isinstance(received, list):
            self.worker_statistics.extend(item for item in received if isinstance(item, dict))

    def metadata(self) -> dict[str, dict[str, Any]]:
        """``metadata["llm"]``: one entry per client name, counters summed across processes."""
        return merge_by_name([*self.local(), *self.worker_statistics], summed=_COUNTERS)
