"""Helpers for tests that talk to the test server's simulated models."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from rampart.core.llm import LLMConfig
from tests._asgi import lifespan, read_body

if TYPE_CHECKING:
    from collections.abc import Callable

FAKE_KEY = "sk-rampart-PLANTED-fake-key-6f1c2d9e"
"""A fake api key planted in tests; no output may ever contain it."""


def config(url: str, model: str = "sim-judge", **kwargs: Any) -> LLMConfig:
    """An ``LLMConfig`` for a simulated model at the test server ``url``."""
    return LLMConfig(model=model, endpoint=url, **kwargs)


def recorder(
    reply: str | Callable[[dict[str, Any]], str] = "ok",
) -> tuple[Any, list[dict[str, Any]]]:
    """A chat-completions ASGI app that keeps each request (its path, query, headers,
    body, raw text and client address, one port per connection) and answers ``reply``,
    or ``reply(request)``."""
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        raw = await read_body(receive)
        request = {
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
            "body": json.loads(raw),
            "raw": raw.decode(),
            "client": tuple(scope["client"]),
        }
        seen.append(request)
        content = reply if isinstance(reply, str) else reply(request)
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body.encode()})

    return app, seen
