"""What LLM clients did: per-name counters that outlive the clients, and their snapshots.

Clients with the same ``name`` share one ``LLMUsage`` record (as they share a token
bucket when they share a backend), so a run's totals survive clients being garbage
collected between tests. ``llm_statistics()`` lists every name this process used;
the pytest plugin writes them to the report's ``metadata["llm"]``.
"""

from __future__ import annotations

import threading

import attrs

from rampart._redact import redact

__all__ = ["LLMStatistics", "LLMUsage", "llm_statistics", "usage_for"]

_LOCK = threading.Lock()
_USAGE: dict[str, LLMUsage] = {}


@attrs.frozen(kw_only=True)
class LLMStatistics:
    """A snapshot of one client name's counters (``LLMClient.statistics()``).

    ``calls`` counts ``complete()`` calls; ``cache_hits`` of them were answered from
    the response cache and ``cache_misses`` were looked up and not found (calls made
    without a cache count in neither); ``requests`` went to the model (through the
    limiter, whose own statistics count attempts and retries); ``cache_writes``
    stored a reply. ``empty_replies`` and ``failures`` count requests whose reply was
    empty or that raised; token counts add up the ``usage`` the endpoint reported.
    """

    name: str
    model: str
    endpoint: str
    calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    cache_writes: int = 0
    empty_replies: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, object]:
        """The snapshot as a JSON-ready dict (for report metadata)."""
        return attrs.asdict(self)


class LLMUsage:
    """The mutable counters behind ``LLMStatistics`` for one client name."""

    __slots__ = (
        "cache_hits",
        "cache_misses",
        "cache_writes",
        "calls",
        "completion_tokens",
        "empty_replies",
        "endpoint",
        "failures",
        "model",
        "name",
        "prompt_tokens",
        "requests",
    )

    def __init__(self, *, name: str, model: str, endpoint: str) -> None:
        self.name = name
        self.model = model
        self.endpoint = endpoint
        self.calls = 0
        self.requests = 0
        self.cache_hits = 0
        self.cache_misses = 0
        self.cache_writes = 0
        self.empty_replies = 0
        self.failures = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def add_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for field in ("prompt_tokens", "completion_tokens"):
            value = usage.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                setattr(self, field, getattr(self, field) + value)

    def snapshot(self) -> LLMStatistics:
        # Statistics go to the report's metadata: their text passes the redaction policy.
        return LLMStatistics(
            name=redact(self.name),
            model=redact(self.model),
            endpoint=redact(self.endpoint),
            calls=self.calls,
            requests=self.requests,
            cache_hits=self.cache_hits,
            cache_misses=self.cache_misses,
            cache_writes=self.cache_writes,
            empty_replies=self.empty_replies,
            failures=self.failures,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


def usage_for(*, name: str, model: str, endpoint: str) -> LLMUsage:
    """The shared counters of client name ``name`` (created on first use)."""
    with _LOCK:
        usage = _USAGE.get(name)
        if usage is None:
            usage = _USAGE[name] = LLMUsage(name=name, model=model, endpoint=endpoint)
        return usage


def llm_statistics() -> list[LLMStatistics]:
    """A snapshot of every client name this process has used, sorted by name."""
    with _LOCK:
        return [usage.snapshot() for _, usage in sorted(_USAGE.items())]
