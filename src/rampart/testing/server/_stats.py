"""``ServerStatistics``: what the test server has done, for tests and benchmarks."""

from __future__ import annotations

from typing import Any

import attrs

__all__ = ["ServerStatistics"]


@attrs.frozen(kw_only=True)
class ServerStatistics:
    """A snapshot of the server's counters (also served as JSON at ``GET /stats``).

    ``requests`` counts every ``POST /v1/chat/completions`` and ``POST /v1/responses``
    (and their Azure forms); each one ends as exactly one
    of ``served`` (200), ``rate_limited`` (429), ``errors`` (injected 5xx),
    ``hangs`` (never answered) or ``bad_requests`` (4xx other than 429), or is still
    ``in_flight``. ``broken`` counts the served answers sent as a broken ``200`` body
    (``ServerOptions.broken_rate``; they are counted in ``served`` too).
    ``max_in_flight`` is the most requests handled at once.
    ``served_per_second`` is ``served`` over the time from the first request to the
    last served one (``window_seconds``); times are on the server's event-loop clock.
    ``model_requests`` counts requests that reached a simulated model rather than the
    agent (they are counted in the other fields too). ``unknown_routes`` counts
    requests to no route of the server (``404``) or with the wrong method (``405``);
    they are not in ``requests``. ``stored_responses`` is how many Responses API
    answers are stored for ``previous_response_id`` now.
    """

    requests: int
    served: int
    rate_limited: int
    errors: int
    hangs: int
    bad_requests: int
    in_flight: int
    max_in_flight: int
    conversations: int
    window_seconds: float
    served_per_second: float
    rate: float | None
    burst: int
    model_requests: int = 0
    broken: int = 0
    unknown_routes: int = 0
    stored_responses: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The snapshot as a JSON-ready dict."""
        return attrs.asdict(self)
