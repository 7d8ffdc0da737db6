"""ASGI pieces the tests' fake endpoints share: the lifespan exchange and the request body.

The fakes themselves differ (what they record, how they answer); serving them is the
test server's ``serve_asgi``.
"""

from __future__ import annotations

from typing import Any


async def lifespan(receive: Any, send: Any) -> None:
    """Complete the server's startup and shutdown messages, then return."""
    while True:
        message = await receive()
        await send({"type": message["type"] + ".complete"})
        if message["type"] == "lifespan.shutdown":
            return


async def read_body(receive: Any) -> bytes:
    """The whole request body, however many messages it arrives in."""
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)
