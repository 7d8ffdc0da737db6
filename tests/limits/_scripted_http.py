"""A scripted HTTP endpoint for the transport tests: answers from a script, records bodies.

``ScriptedEndpoint(answers)`` is an ASGI app (served with ``serve_asgi``); each request
gets the next answer (the last repeats): ``(status, headers, body)``, or ``SSE`` for an
answer streamed as server-sent events in several chunks. It records every request's
path and body, in order.
"""

from __future__ import annotations

import json
from typing import Any

from tests._asgi import lifespan, read_body

Answer = tuple[int, dict[str, str], bytes]

SSE = (200, {"content-type": "text/event-stream"}, b"")
"""An answer streamed as three server-sent events, one chunk each."""

SSE_EVENTS = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\n', b"data: [DONE]\n\n"]

OK: Answer = (200, {"content-type": "application/json"}, b'{"ok": true}')


def refusal(status: int = 429, *, retry_after_ms: int | None = 1, body: bytes = b"") -> Answer:
    """A 429 (or 503) with an optional ``retry-after-ms`` and a JSON error body."""
    headers = {"content-type": "application/json"}
    if retry_after_ms is not None:
        headers["retry-after-ms"] = str(retry_after_ms)
    content = body or json.dumps({"error": {"message": "slow down", "code": status}}).encode()
    return status, headers, content


class ScriptedEndpoint:
    """See the module docstring."""

    def __init__(self, answers: list[Answer]) -> None:
        self._answers = answers
        self.paths: list[str] = []
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        body = await read_body(receive)
        index = min(len(self.bodies), len(self._answers) - 1)
        self.paths.append(scope["path"])
        self.bodies.append(body)
        status, headers, content = self._answers[index]
        raw = [(name.encode(), value.encode()) for name, value in headers.items()]
        await send({"type": "http.response.start", "status": status, "headers": raw})
        if (status, headers, content) == SSE:
            for event in SSE_EVENTS:
                await send({"type": "http.response.body", "body": event, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.body", "body": content})
