"""The opt-in on-disk response cache: identical LLM calls are answered from disk.

A judge's verdict on a saved trace, a generator's variants and an attacker's next
prompt are all functions of the request; with the cache on, re-running a suite or
re-judging saved traces pays for each distinct request once.

* **Key**: SHA-256 of the canonical JSON of the request body, that is the model
  (the deployment, on Azure), the messages and every generation parameter sent
  (``temperature``, ``seed``, ``response_format``, ...), and of the caller's ``tag``
  (a judge's attempt number, a generator's variant index), so distinct calls never
  share an entry. The endpoint is not part of the key: the same model answers the
  same request wherever it is served (a test server on a fresh port, a proxy). The
  api key is never part of the key or of an entry.
* **Layout**: ``<directory>/<key[:2]>/<key>.json`` holding
  ``{"version": "rampart.llm-cache.v1", "model", "text", "usage", "created"}``.
* **Writes** are atomic: a temporary file in the same directory, then a rename, so a
  concurrent reader (another xdist worker) sees a whole entry or none.
* An unreadable or malformed entry is a miss (and is overwritten on the next write).
* Empty replies are not cached: they are failures, and a later run should ask again.

Off by default: ``--rampart-llm-cache DIR``, the ``rampart_llm_cache`` ini option or
the ``RAMPART_LLM_CACHE`` environment variable turn it on for every client that was
not given an explicit ``cache=``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.to_thread
import attrs

from rampart import _runs
from rampart._checks import check_path

__all__ = [
    "CACHE_VERSION",
    "LLM_CACHE_ENV",
    "CachedCompletion",
    "ResponseCache",
    "configure_cache",
    "default_cache",
    "reset_cache_configuration",
]

CACHE_VERSION = "rampart.llm-cache.v1"
LLM_CACHE_ENV = "RAMPART_LLM_CACHE"
"""Environment variable: a directory that turns the response cache on."""


@attrs.define
class _Setting:
    """``configure_cache``'s choice, one per run (``rampart._runs``): the plugin sets it
    from ``--rampart-llm-cache`` and an in-process pytester run cannot leak its own."""

    cache: ResponseCache | None = None
    chosen: bool = False


def _setting() -> _Setting:
    return _runs.current().state(__name__, _Setting)


@attrs.frozen(kw_only=True)
class CachedCompletion:
    """A cache entry: the completion text, the model that wrote it, its usage and the
    tool calls it asked for (``{"id", "name", "arguments"}`` each)."""

    text: str
    model: str | None = None
    usage: dict[str, Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None


def _is_call(call: object) -> bool:
    return (
        isinstance(call, dict)
        and isinstance(call.get("id"), str | None)
        and isinstance(call.get("name"), str)
        and isinstance(call.get("arguments"), dict)
    )


class ResponseCache:
    """A directory of cached completions (see the module docstring)."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self._directory = check_path("ResponseCache", "directory", directory)

    def __repr__(self) -> str:
        return f"ResponseCache({str(self._directory)!r})"

    @property
    def directory(self) -> Path:
        return self._directory

    @staticmethod
    def key(*, body: dict[str, Any], tag: str = "") -> str:
        """The cache key of one request (``body`` as it is sent)."""
        material = {"body": body, "tag": tag, "v": CACHE_VERSION}
        encoded = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(encoded.encode("utf-8")).hexdigest()

    def path(self, key: str) -> Path:
        return self._directory / key[:2] / f"{key}.json"

    def get_blocking(self, key: str) -> CachedCompletion | None:
        from rampart.codec import parse_strict_json  # the one JSON reading policy

        try:
            raw = self.path(key).read_text(encoding="utf-8")
            entry = parse_strict_json(data=raw)
        except (OSError, ValueError):  # unreadable, not UTF-8, or refused: a miss
            return None
        if not isinstance(entry, dict) or entry.get("version") != CACHE_VERSION:
            return None
        text = entry.get("text")
        model = entry.get("model")
        usage = entry.get("usage")
        calls = entry.get("tool_calls")
        if not isinstance(calls, list) or not all(_is_call(call) for call in calls):
            calls = None
        if not isinstance(text, str) or not (text.strip() or calls):
            return None
        return CachedCompletion(
            text=text,
            model=model if isinstance(model, str) else None,
            usage=usage if isinstance(usage, dict) else None,
            tool_calls=calls,
        )

    def put_blocking(self, key: str, completion: CachedCompletion) -> Path:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "version": CACHE_VERSION,
            "model": completion.model,
            "text": completion.text,
            "usage": completion.usage,
            "tool_calls": completion.tool_calls,
            "created": datetime.now(UTC).isoformat(timespec="milliseconds"),
        }
        data = json.dumps(entry, ensure_ascii=False, indent=1).encode("utf-8")
        handle, temporary = tempfile.mkstemp(prefix=f".{key[:16]}-", dir=target.parent)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        return target

    async def get(self, key: str) -> CachedCompletion | None:
        """The entry for ``key``, or ``None`` (read in a worker thread)."""
        return await anyio.to_thread.run_sync(self.get_blocking, key)

    async def put(self, key: str, completion: CachedCompletion) -> Path:
        """Store ``completion`` under ``key`` atomically (in a worker thread)."""
        return await anyio.to_thread.run_sync(self.put_blocking, key, completion)


def configure_cache(directory: str | os.PathLike[str] | None) -> ResponseCache | None:
    """Set the default cache of the current run (``None`` turns it off, overriding the
    env var); outside pytest the run is the process.

    The pytest plugin calls this for ``--rampart-llm-cache`` / ``rampart_llm_cache``.
    Returns the cache now in force.
    """
    setting = _setting()
    setting.cache = None if directory is None else ResponseCache(directory)
    setting.chosen = True
    return setting.cache


def reset_cache_configuration() -> None:
    """Forget ``configure_cache`` (the environment variable decides again)."""
    setting = _setting()
    setting.cache = None
    setting.chosen = False


def default_cache() -> ResponseCache | None:
    """The cache clients use by default: ``configure_cache``'s, else ``RAMPART_LLM_CACHE``."""
    setting = _setting()
    if setting.chosen:
        return setting.cache
    directory = os.environ.get(LLM_CACHE_ENV, "").strip()
    return ResponseCache(directory) if directory else None
