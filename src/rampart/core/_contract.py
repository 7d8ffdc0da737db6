"""Checks of the adapter contract at the points where rampart calls adapter code.

Adapters are user code. Wherever rampart creates, enters or sends on a session it goes
through these helpers, which raise ``AdapterContractError`` naming what is wrong, so a
mis-implemented adapter gives an ERROR result with a useful summary instead of a
``TypeError`` or ``AttributeError`` from deep inside the engine. The session actor and
``rampart.limits`` (which sends on the wrapped adapter's sessions itself) share them, so
a wrapped adapter is checked exactly like a bare one.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from rampart.core.errors import AdapterContractError
from rampart.core.types import Response

if TYPE_CHECKING:
    from rampart.core.adapter import Session
    from rampart.core.types import Request

__all__ = ["check_entered", "check_session", "create_session", "send_checked", "type_name"]

_SESSION_METHODS = ("send_async", "__aenter__", "__aexit__")


def type_name(value: object) -> str:
    """The name of ``value``'s type, for messages."""
    return type(value).__name__


def check_session(session: object, *, source: str) -> None:
    """Raise unless ``session`` (returned by ``source``) has the ``Session`` methods."""
    missing = [name for name in _SESSION_METHODS if not callable(getattr(session, name, None))]
    if missing:
        raise AdapterContractError(
            f"{source} returned {type_name(session)}, expected rampart.Session "
            f"(an async context manager with send_async); missing {', '.join(missing)}"
        )


async def create_session(adapter: object) -> Session:
    """Call ``adapter.create_session_async()`` and check what it gives back."""
    factory = getattr(adapter, "create_session_async", None)
    if not callable(factory):
        raise AdapterContractError(
            f"adapter {type_name(adapter)} has no create_session_async(); an AgentAdapter "
            "must define async def create_session_async(self) -> Session"
        )
    pending = factory()
    if not inspect.isawaitable(pending):
        raise AdapterContractError(
            f"adapter.create_session_async returned {type_name(pending)}, which is not "
            "awaitable; define it with async def"
        )
    session = await pending
    check_session(session, source="adapter.create_session_async")
    return session  # type: ignore[no-any-return]


def check_entered(session: Session, entered: object) -> Session:
    """``entered`` (what ``session.__aenter__`` returned) checked as a session.

    The caller still owns ``session`` and must close it if this raises.
    """
    if entered is session:
        return session
    if entered is None:
        raise AdapterContractError(
            f"{type_name(session)}.__aenter__ returned None; a Session's "
            "__aenter__ must return the session (return self)"
        )
    check_session(entered, source=f"{type_name(session)}.__aenter__")
    return entered  # type: ignore[return-value]


async def send_checked(session: Session, request: Request) -> Response:
    """``await session.send_async(request)``, checking it is awaitable and gives a Response."""
    pending: Any = session.send_async(request)
    if not inspect.isawaitable(pending):
        raise AdapterContractError(
            f"adapter.send_async returned {type_name(pending)}, which is not awaitable; "
            "define it with async def"
        )
    response = await pending
    if not isinstance(response, Response):
        raise AdapterContractError(
            f"adapter.send_async returned {type_name(response)}, expected rampart.Response"
        )
    return response
