"""The one-slot mailbox the trace runner's tasks hand prompts and turns over with."""

from __future__ import annotations

import anyio
import pytest

from rampart.engine._mailbox import Mailbox

pytestmark = pytest.mark.anyio


async def test_an_item_already_there_is_taken_at_once() -> None:
    """get() returns a waiting item without waiting, and the slot is free again."""
    box: Mailbox[str] = Mailbox()
    box.put("a")
    assert await box.get() == "a"
    box.put("b")  # the slot was emptied, so a second put is fine
    assert await box.get() == "b"


async def test_get_waits_for_the_put() -> None:
    """A receiver waiting on an empty slot wakes with the item another task puts."""
    box: Mailbox[int] = Mailbox()
    log: list[str] = []

    async def receive() -> None:
        log.append("waiting")
        log.append(f"got {await box.get()}")

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.wait_all_tasks_blocked()
        log.append("put")
        box.put(7)
    assert log == ["waiting", "put", "got 7"]


async def test_close_ends_the_stream_after_what_is_left() -> None:
    """A closed mailbox still hands over its item, then raises EndOfStream."""
    box: Mailbox[str] = Mailbox()
    box.put("last")
    box.close()
    assert await box.get() == "last"
    with pytest.raises(anyio.EndOfStream):
        await box.get()


async def test_close_wakes_a_waiting_receiver() -> None:
    """Closing an empty mailbox ends the wait of its receiver with EndOfStream."""
    box: Mailbox[str] = Mailbox()
    outcome: list[str] = []

    async def receive() -> None:
        try:
            await box.get()
        except anyio.EndOfStream:
            outcome.append("end of stream")

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.wait_all_tasks_blocked()
        box.close()
    assert outcome == ["end of stream"]


async def test_put_into_a_full_or_closed_mailbox_is_refused() -> None:
    """The hand-off is one at a time: a second put is a bug, a put after close too."""
    box: Mailbox[int] = Mailbox()
    box.put(1)
    with pytest.raises(RuntimeError, match="slot is full"):
        box.put(2)
    assert await box.get() == 1
    box.close()
    with pytest.raises(anyio.ClosedResourceError):
        box.put(3)


async def test_a_cancelled_wait_leaves_the_mailbox_usable() -> None:
    """Cancelling a waiting get() propagates; the next put and get still work."""
    box: Mailbox[str] = Mailbox()
    with anyio.move_on_after(0.01) as scope:
        await box.get()
    assert scope.cancelled_caught
    box.put("after")
    assert await box.get() == "after"


async def test_the_backends_own_event_class_serves_a_wait() -> None:
    """Given the backend's Event class (as a trace run gives it), a receiver that has
    to wait makes one event with it and wakes on the put; one that need not wait
    makes none."""
    made: list[anyio.Event] = []
    event_type = type(anyio.Event())

    def event() -> anyio.Event:
        made.append(event_type())
        return made[-1]

    box: Mailbox[int] = Mailbox(event)
    box.put(1)
    assert await box.get() == 1
    assert made == []
    got: list[int] = []

    async def receive() -> None:
        got.append(await box.get())

    async with anyio.create_task_group() as tg:
        tg.start_soon(receive)
        await anyio.wait_all_tasks_blocked()
        box.put(2)
    assert got == [2]
    assert len(made) == 1
    assert made[0].is_set()
