"""The LLM layer in a pytest run: the response cache option, and LLM statistics in the report.

* ``--rampart-llm-cache DIR`` (or the ``rampart_llm_cache`` ini option, relative to
  the rootdir) turns on the on-disk response cache for every ``LLMClient`` of the run
  that was not given ``cache=`` (``rampart.llm.configure_cache``); without either, the
  ``RAMPART_LLM_CACHE`` environment variable decides. xdist workers parse the same
  options, so they share the directory (writes are atomic).
* The counters of every LLM client name (calls, requests, cache hits and misses,
  tokens, ...) used during the run go into the report's ``metadata["llm"]``, one entry
  per name, summed across xdist workers. The limiters behind the clients appear in
  ``metadata["limits"]`` like any other.

Nothing here imports the LLM layer unless a cache is configured or a test used it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "LLMRunStatistics",
    "WORKEROUTPUT_KEY",
    "cache_directory",
    "configure",
    "llm_metadata",
    "unconfigure",
]

WORKEROUTPUT_KEY = "rampart_llm"
_STATE: pytest.StashKey[LLMRunStatistics] = pytest.StashKey()
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
    """Per-run LLM counters: this process's (minus what ran before the run) and workers'."""

    def __init__(self, *, cache_configured: bool) -> None:
        self.cache_configured = cache_configured
        self.baseline = _snapshot()
        self.worker_statistics: list[dict[str, Any]] = []

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

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(session.config, "workeroutput", None)
        if output is not None:
            output[WORKEROUTPUT_KEY] = self.local()

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        output = getattr(node, "workeroutput", None) or {}
        received = output.get(WORKEROUTPUT_KEY)
        if isinstance(received, list):
            self.worker_statistics.extend(item for item in received if isinstance(item, dict))


def configure(config: pytest.Config) -> None:
    """Apply the cache option and start counting (from ``pytest_configure``)."""
    directory = cache_directory(config)
    if directory is not None:
        from rampart.llm import configure_cache

        configure_cache(directory)
    state = LLMRunStatistics(cache_configured=directory is not None)
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "rampart-llm")


def unconfigure(config: pytest.Config) -> None:
    """Undo ``configure`` (an in-process pytester run must not leak its cache setting)."""
    state = config.stash.get(_STATE, None)
    if state is None:
        return
    if state.cache_configured:
        from rampart.llm import reset_cache_configuration

        reset_cache_configuration()
    if config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)
    del config.stash[_STATE]


def llm_metadata(config: pytest.Config) -> dict[str, dict[str, Any]]:
    """``metadata["llm"]``: one entry per client name, counters summed across processes."""
    state = config.stash.get(_STATE, None)
    if state is None:
        return {}
    merged: dict[str, dict[str, Any]] = {}
    for snapshot in [*state.local(), *state.worker_statistics]:
        name = str(snapshot.get("name", "?"))
        entry = merged.get(name)
        if entry is None:
            merged[name] = {**snapshot, "processes": 1}
            continue
        entry["processes"] += 1
        for key in _COUNTERS:
            entry[key] = int(entry.get(key, 0)) + int(snapshot.get(key, 0))
    return merged
