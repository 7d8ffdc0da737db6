"""``Mailbox``: the one-slot hand-off between the tasks of one execution.

The tasks of a trace run take strict turns: the producer hands the session actor one
prompt decision and waits for one turn back before it asks the driver again. A
channel between them never holds more than one item, so it needs neither a buffer
nor a queue of waiting senders, only a slot and a way to wake the one task waiting
on it. That is what ``Mailbox`` is: a slot plus an ``anyio.Event`` made only when the
receiver actually has to wait.

Why not a memory object stream: a blocking ``receive()`` on one first yields to the
scheduler (a checkpoint) and only then parks on an event it registers in two
containers, so when the other side really has to be waited for (an agent that takes
time to answer) every hand-off costs two scheduler passes instead of one. On trio the
stream-based structure cost about 30 us more per 2-turn execution than this one
(``benchmarks/bench_engine.py``), for a generality (buffers, clones, several senders)
this hand-off never uses.

The event is made by ``event``. The default, ``anyio.Event``, looks up the running
backend on every call, and its ``__new__`` returns the backend's subclass, whose
``__init__`` Python then runs a second time (two native events for one). A trace run
passes its mailboxes the backend's own ``Event`` class, looked up once per backend
(``type(anyio.Event())``, ``rampart.engine._trace``): each wait's event then costs less
than half as much.

Semantics: ``put`` never blocks (a full slot is a protocol bug and raises
``RuntimeError``); ``get`` returns the item, waiting if the slot is empty, and raises
``anyio.EndOfStream`` once the mailbox is closed and empty. ``get`` checkpoints only
when it has to wait; waiting is cancellable like any anyio wait. A mailbox holds no
resource: closing it is only the end-of-stream signal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Generic, TypeVar

import anyio

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Mailbox"]

T = TypeVar("T")

_EMPTY: object = object()


class Mailbox(Generic[T]):
    """A one-slot, single-consumer mailbox; see the module docstring."""

    __slots__ = ("_closed", "_event", "_item", "_waiter")

    def __init__(self, event: Callable[[], anyio.Event] = anyio.Event) -> None:
        self._event = event
        self._item: object = _EMPTY
        self._waiter: anyio.Event | None = None
        self._closed = False

    def put(self, item: T) -> None:
        """Leave ``item`` in the slot and wake the receiver, if it is waiting."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._item is not _EMPTY:
            raise RuntimeError("Mailbox.put: the slot is full (the hand-off is one at a time)")
        self._item = item
        self._wake()

    def close(self) -> None:
        """No more items: the receiver gets what is left, then ``EndOfStream``."""
        self._closed = True
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            waiter.set()

    async def get(self) -> T:
        """The next item; waits while the slot is empty and the mailbox open."""
        item = self._item
        if item is _EMPTY:
            if self._closed:
                raise anyio.EndOfStream
            waiter = self._waiter = self._event()
            try:
                await waiter.wait()
            finally:
                if self._waiter is waiter:  # cancelled while waiting
                    self._waiter = None
            item = self._item
            if item is _EMPTY:
                raise anyio.EndOfStream
        self._item = _EMPTY
        return item  # type: ignore[return-value]
