"""Surfaces plant payloads where the agent will find them; handles activate and remove them.

A handle is an async context manager: ``__aenter__`` activates (writes) the payload and
``__aexit__`` removes it; removal is idempotent and must not raise. A handle may also
define a readiness wait, either ``wait_until_ready_async()`` or ``wait_until_ready()``;
the engine awaits whichever one the handle defines, once per handle after activation
(``wait_until_ready``, RAMPART's name, when both exist; see ``readiness_wait``).

Client code subclasses ``InjectionHandle`` (or just implements its methods). A class
that subclasses it answers to both readiness names: one that defines neither gets a
readiness that returns at once, one that defines one name gets the other as an alias
of it. The two methods are not members of the protocol, so an object that defines
neither still counts as an ``InjectionHandle``; the protocol class still answers to
both names (``_HandleMeta``), so ``AsyncMock(spec=InjectionHandle)`` has them as
async methods, as with RAMPART's protocol.
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


_ProtocolMeta: type = type(Protocol)


class _HandleMeta(_ProtocolMeta):  # type: ignore[misc]
    """``InjectionHandle``'s metaclass: the class answers to the readiness names (for
    ``dir`` and attribute reads, so a ``spec=InjectionHandle`` mock has them) without
    making them protocol members, which a structural handle would then need."""

    def __getattr__(cls, name: str) -> object:
        if name in _READINESS_NAMES:
            return _ready_at_once
        raise AttributeError(name)

    def __dir__(cls) -> list[str]:
        return sorted({*super().__dir__(), *_READINESS_NAMES})


@runtime_checkable
class InjectionHandle(Protocol, metaclass=_HandleMeta):
    """A prepared injection: activated on enter, removed on exit.

    A subclass answers to ``wait_until_ready_async()`` and ``wait_until_ready()`` (see
    the module docstring): by default both return at once.
    """

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__dict__.get("_is_protocol", False):
            _add_readiness(cls)

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


# RAMPART's name first: a handle with both (an alias, or a mock) is awaited through it.
_READINESS_NAMES = ("wait_until_ready", "wait_until_ready_async")


_PROVIDED = "_rampart_provided_readiness"


async def _ready_at_once(self: object) -> None:
    """Nothing to wait for: the injection is readable as soon as it is written."""


setattr(_ready_at_once, _PROVIDED, True)


def _alias(target: str) -> Callable[[object], Awaitable[object]]:
    async def readiness(self: object) -> object:
        return await getattr(self, target)()

    readiness.__name__ = readiness.__qualname__ = target
    setattr(readiness, _PROVIDED, True)
    return readiness


def _add_readiness(cls: type) -> None:
    """Give a handle class both readiness names: aliases of the one it defines, or a
    readiness that returns at once when it defines neither.

    Only methods the class (or a base) wrote count as defined; what this function
    provided to a base does not, so a subclass that defines one name is never shadowed
    by a base's default under the other name.
    """
    defined = [
        name
        for name in _READINESS_NAMES
        if callable(method := getattr(cls, name, None)) and not getattr(method, _PROVIDED, False)
    ]
    if len(defined) == len(_READINESS_NAMES):
        return
    for name in _READINESS_NAMES:
        if name not in defined:
            setattr(cls, name, _alias(defined[0]) if defined else _ready_at_once)


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
