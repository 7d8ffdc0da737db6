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
Reference counting still frees everything that is not part of a cycle. A cycle that
was frozen while alive, though, is never collected once it dies: connections are such
cycles (asyncio's transports and tasks, hypercorn's and h11's protocol objects), and
under connection churn the frozen set grew by about one object and 480 bytes of
memory per connection, without end. So when the frozen set has doubled since the last
full walk, the next full collection walks everything again (``gc.unfreeze`` first) and
frees the dead cycles: memory stays within about twice the live heap, and the long
pauses come once per doubling, not once per collection. It is installed only by
``python -m rampart.testing.server`` (a process of its own), never when the app runs
inside someone else's process.
"""

from __future__ import annotations

import gc
from typing import Any

__all__ = ["freeze_survivors"]

# The frozen set's size right after the last full walk (0: none yet), and whether the
# collection under way walks everything.
_walked = [0]
_walking = [False]


def _around_full_collection(phase: str, info: dict[str, Any]) -> None:
    if info.get("generation") != 2:
        return
    if phase == "start":
        frozen = gc.get_freeze_count()
        _walking[0] = frozen == 0 or frozen > 2 * _walked[0]
        if frozen and _walking[0]:
            gc.unfreeze()  # this collection walks everything, dead frozen cycles too
    elif phase == "stop":
        gc.freeze()
        if _walking[0]:
            _walked[0] = gc.get_freeze_count()


def freeze_survivors() -> None:
    """After every full collection, freeze what survived it; walk everything again
    when the frozen set has doubled (see the module docstring). Idempotent."""
    if _around_full_collection not in gc.callbacks:
        gc.callbacks.append(_around_full_collection)
