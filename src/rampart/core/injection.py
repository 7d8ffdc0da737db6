"""Surfaces plant payloads where the agent will find them; handles activate and remove them.

A handle is an async context manager: ``__aenter__`` activates (writes) the payload and
``__aexit__`` removes it; removal is idempotent and must not raise. A handle may also
define a readiness wait, either ``wait_until_ready_async()`` or ``wait_until_ready()``;
the engine calls whichever one the handle's class defines (see ``readiness_wait``).
Client code subclasses ``InjectionHandle``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from types import TracebackType

    from rampart.core.types import Payload

__all__ = [
    "InjectionHandle",
    "Surface",
    "readiness_wait",
    "sleep_until_ready",
    "sleep_until_ready_async",
]


@runtime_checkable
class InjectionHandle(Protocol):
    """A prepared injection: activated on enter, removed on exit."""

    @property
    def payload_id(self) -> str | None: ...

    @property
    def surface_name(self) -> str: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None: ...


@runtime_checkable
class Surface(Protocol):
    """A place an agent reads (a mailbox, a drive). ``inject`` only prepares a handle."""

    def inject(self, *, payload: Payload) -> InjectionHandle: ...


_READINESS_NAMES = ("wait_until_ready_async", "wait_until_ready")


def readiness_wait(handle: object) -> Callable[[], Awaitable[object]] | None:
    """The handle's readiness coroutine function, whichever name it uses, or None."""
    for name in _READINESS_NAMES:
        method = getattr(handle, name, None)
        if callable(method):
            return method  # type: ignore[no-any-return]
    return None


async def sleep_until_ready_async(delay: float) -> None:
    """Readiness by waiting: for surfaces that cannot be polled (indexing delays)."""
    import anyio  # here, not at module level: importing the model stays free of anyio

    await anyio.sleep(delay)


async def sleep_until_ready(delay: float) -> None:
    """The original name of ``sleep_until_ready_async``; same behaviour."""
    await sleep_until_ready_async(delay)
