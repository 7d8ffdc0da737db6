"""Helpers for tests that talk to the test server's simulated models."""

from __future__ import annotations

import json
from typing import Any

from rampart.core.llm import LLMConfig

FAKE_KEY = "sk-rampart-PLANTED-fake-key-6f1c2d9e"
"""A fake api key planted in tests; no output may ever contain it."""


def config(url: str, model: str = "sim-judge", **kwargs: Any) -> LLMConfig:
    """An ``LLMConfig`` for a simulated model at the test server ``url``."""
    return LLMConfig(model=model, endpoint=url, **kwargs)


def recorder() -> tuple[Any, list[dict[str, Any]]]:
    """An ASGI app recording each request's path, query, headers, body and client
    address (one port per connection); answers 'ok'."""
    seen: list[dict[str, Any]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                done = message["type"] == "lifespan.shutdown"
                await send({"type": message["type"] + ".complete"})
                if done:
                    return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        seen.append(
            {
                "path": scope["path"],
                "client": tuple(scope["client"]),
                "query": scope["query_string"].decode(),
                "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
                "body": json.loads(b"".join(chunks)),
            }
        )
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]})
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body.encode()})

    return app, seen
