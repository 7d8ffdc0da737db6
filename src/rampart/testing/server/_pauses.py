"""Short garbage-collection pauses for the test server's own process.

The server stands in for a provider's API, whose rate limiter sees each request as it
arrives. Ours sees it when its event loop gets to it, so a pause of that loop bunches
the requests that arrived meanwhile, and an agent with a small burst refuses the
bunch: a stall of the stand-in, which the client under test is then blamed for.

The largest pauses were full collections. The server remembers up to
``max_conversations`` open conversations (10,000 by default), and each full
collection walked all of them: at 4,000 conversations, pauses of 47 and 100 ms, each
followed by refusals of requests the client had sent 17 ms apart (a burst-1 agent at
100/s; sampled at the server's bucket and at the client's socket writes).

``freeze_survivors`` moves what survived a full collection out of the collector's
reach (``gc.freeze``), so the next full collection walks only what arrived since.
Reference counting still frees everything that is not part of a cycle; a cycle that
was frozen stays until the process ends, which a test server's lifetime allows. It is
installed only by ``python -m rampart.testing.server`` (a process of its own), never
when the app runs inside someone else's process.
"""

from __future__ import annotations

import gc
from typing import Any

__all__ = ["freeze_survivors"]


def _after_full_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def freeze_survivors() -> None:
    """After every full collection, freeze what survived it (see the module docstring).
    Idempotent."""
    if _after_full_collection not in gc.callbacks:
        gc.callbacks.append(_after_full_collection)
