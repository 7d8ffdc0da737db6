"""An in-memory surface: a mailbox-like store that injection handles plant documents in.

The surface holds no event-loop state, so one instance can serve tests on asyncio and
on trio. Handles may be reused and even entered concurrently: every ``__aenter__``
plants one document and every ``__aexit__`` removes one, so activations and removals
always pair up.

Agents that read the surface call ``mark_read`` with each document they read, so a
handle can report whether its payload was actually read (``delivered``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

import anyio

from rampart._checks import check_bool, check_instance, check_seconds, check_text
from rampart.core.errors import InfrastructureError
from rampart.core.injection import InjectionHandle
from rampart.core.types import Payload

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["InMemoryInjectionHandle", "InMemorySurface"]


class InMemorySurface:
    """A named in-memory document store an agent reads and an attack writes to.

    ``inject`` only prepares a handle; entering the handle plants the payload and
    exiting removes it. ``activation_delay``, ``ready_delay`` and ``removal_delay``
    (seconds, slept with ``anyio.sleep``) model slow infrastructure;
    ``fail_on_activate`` / ``fail_on_remove`` make activation or removal raise
    ``InfrastructureError`` so engine tests can exercise their cleanup paths.
    """

    def __init__(
        self,
        *,
        name: str = "inbox",
        ready_delay: float = 0.0,
        activation_delay: float = 0.0,
        removal_delay: float = 0.0,
        fail_on_activate: bool = False,
        fail_on_remove: bool = False,
    ) -> None:
        owner = "InMemorySurface"
        self._name = check_text(owner, "name", name)
        self._ready_delay = check_seconds(owner, "ready_delay", ready_delay)
        self._activation_delay = check_seconds(owner, "activation_delay", activation_delay)
        self._removal_delay = check_seconds(owner, "removal_delay", removal_delay)
        self._fail_on_activate = check_bool(owner, "fail_on_activate", fail_on_activate)
        self._fail_on_remove = check_bool(owner, "fail_on_remove", fail_on_remove)
        self._documents: dict[int, Payload] = {}
        self._owners: dict[int, InMemoryInjectionHandle] = {}
        self._next_key = 0
        self._version = 0
        self._readable: tuple[Payload, ...] = ()
        self._readable_version = 0
        self.activations = 0
        """Documents planted successfully."""
        self.removals = 0
        """Documents removed successfully."""
        self.failed_activations = 0
        self.failed_removals = 0

    def __repr__(self) -> str:
        return f"InMemorySurface(name={self._name!r}, documents={len(self._documents)})"

    @property
    def name(self) -> str:
        return self._name

    @property
    def ready_delay(self) -> float:
        return self._ready_delay

    @property
    def activation_delay(self) -> float:
        return self._activation_delay

    @property
    def removal_delay(self) -> float:
        return self._removal_delay

    @property
    def fail_on_activate(self) -> bool:
        return self._fail_on_activate

    @property
    def fail_on_remove(self) -> bool:
        return self._fail_on_remove

    @property
    def documents(self) -> tuple[Payload, ...]:
        """The planted documents, oldest first (a snapshot; one entry per activation)."""
        return tuple(self._documents.values())

    @property
    def active(self) -> int:
        """How many documents are planted right now."""
        return len(self._documents)

    def inject(self, *, payload: Payload) -> InMemoryInjectionHandle:
        """Prepare a handle that plants ``payload`` when entered; nothing is planted yet."""
        check_instance("InMemorySurface.inject", "payload", payload, Payload, expected="a Payload")
        return InMemoryInjectionHandle(surface=self, payload=payload)

    def readable_documents(self) -> tuple[Payload, ...]:
        """The planted documents as an agent sees them: one per payload id, oldest first.

        Cached until the next plant or removal, so agents can call it on every request.
        """
        if self._readable_version != self._version:
            unique: dict[str, Payload] = {}
            for document in self._documents.values():
                unique.setdefault(document.id, document)
            self._readable = tuple(unique.values())
            self._readable_version = self._version
        return self._readable

    def mark_read(self, document: Payload) -> None:
        """Record that an agent read ``document`` (one of ``readable_documents()``).

        Every handle that has this document, or an identical copy of it (same content
        and format), planted right now then reports ``delivered=True``: parallel trials
        of one scenario plant copies of one payload, and an agent that read any of them
        has read that payload. A document that is no longer planted marks nothing.
        """
        for key, planted in self._documents.items():
            if planted is document or (
                planted.content == document.content and planted.format == document.format
            ):
                self._owners[key]._delivered = True

    def _plant(self, payload: Payload, owner: InMemoryInjectionHandle) -> int:
        key = self._next_key
        self._next_key += 1
        self._documents[key] = payload
        self._owners[key] = owner
        self._version += 1
        self.activations += 1
        return key

    def _remove(self, key: int) -> None:
        del self._documents[key]
        del self._owners[key]
        self._version += 1
        self.removals += 1


class InMemoryInjectionHandle(InjectionHandle):
    """Plants one payload in an ``InMemorySurface`` while the ``async with`` block runs.

    Exiting is idempotent: an exit without a matching activation does nothing. Only the
    surface's ``fail_on_remove`` fault makes it raise.

    ``delivered`` says whether an agent read the payload (``InMemorySurface.mark_read``):
    ``None`` before the first activation, ``False`` from an activation on, ``True`` once
    read. It is kept after removal and starts over with the next activation that finds
    nothing planted, so a handle reused for one run after another reports each run;
    entered concurrently (one handle shared by parallel runs), it reports whether any of
    them got the payload read.
    """

    def __init__(self, *, surface: InMemorySurface, payload: Payload) -> None:
        self._surface = surface
        self._payload = payload
        self._keys: list[int] = []
        self._ready: anyio.Event | None = None
        self._delivered: bool | None = None

    def __repr__(self) -> str:
        return (
            f"InMemoryInjectionHandle(surface_name={self._surface.name!r}, "
            f"payload_id={self._payload.id!r}, active={self.active}, "
            f"delivered={self._delivered})"
        )

    @property
    def payload_id(self) -> str | None:
        return self._payload.id

    @property
    def surface_name(self) -> str:
        return self._surface.name

    @property
    def payload(self) -> Payload:
        return self._payload

    @property
    def surface(self) -> InMemorySurface:
        return self._surface

    @property
    def active(self) -> bool:
        """Whether this handle has a document planted right now."""
        return bool(self._keys)

    @property
    def delivered(self) -> bool | None:
        """Whether an agent read the payload (see the class docstring)."""
        return self._delivered

    async def __aenter__(self) -> Self:
        surface = self._surface
        if surface.activation_delay:
            await anyio.sleep(surface.activation_delay)
        if surface.fail_on_activate:
            surface.failed_activations += 1
            raise InfrastructureError(
                f"InMemorySurface {surface.name!r}: activating payload {self._payload.id!r} "
                "failed (fail_on_activate=True)"
            )
        if not self._keys:
            self._delivered = False
        self._keys.append(surface._plant(self._payload, self))
        if self._ready is not None:
            self._ready.set()
            self._ready = None
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._keys:
            return
        surface = self._surface
        # Claim the document before awaiting so concurrent exits never remove it twice.
        key = self._keys.pop()
        try:
            if surface.removal_delay:
                await anyio.sleep(surface.removal_delay)
            if surface.fail_on_remove:
                surface.failed_removals += 1
                raise InfrastructureError(
                    f"InMemorySurface {surface.name!r}: removing payload {self._payload.id!r} "
                    "failed (fail_on_remove=True)"
                )
        except BaseException:
            self._keys.append(key)  # still planted: a later exit may retry
            raise
        surface._remove(key)

    async def wait_until_ready_async(self) -> None:
        """Return once the payload is planted, then after the surface's ``ready_delay``."""
        if not self._keys:
            if self._ready is None:
                self._ready = anyio.Event()
            await self._ready.wait()
        if self._surface.ready_delay:
            await anyio.sleep(self._surface.ready_delay)
