"""The session actor, and the adapter contract checks it relies on.

The actor is the one task that touches the adapter's ``Session``: it opens it
(``AdapterSession``), takes prompt decisions from its request mailbox one at a time,
sends each request, and emits one raw ``Turn`` per response into the turn-event
mailbox (``serve_session``). The session is closed when the request mailbox closes
(or the actor is cancelled); closing is cleanup, so it is shielded from
cancellation.

Adapters are user code. Every place the engine relies on the adapter contract checks
it and raises ``AdapterContractError`` naming what is wrong, so a mis-implemented
adapter gives an ERROR result with a useful summary instead of an ``AttributeError``
from deep inside the engine. The session checks live in ``rampart.core._contract``,
shared with ``rampart.limits``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio

from rampart.core._contract import (
    check_entered,
    create_session,
    enter_session,
    exit_session,
    send_checked,
    type_name,
)
from rampart.core.errors import AdapterContractError
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Turn

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from rampart.core.adapter import Session
    from rampart.core.driver import PromptDecision
    from rampart.engine._mailbox import Mailbox

__all__ = [
    "AdapterSession",
    "manifest_of",
    "observability_of",
    "serve_session",
]

_MISSING = object()


def observability_of(adapter: object) -> ObservabilityLevel:
    """The adapter's declared observability level, checked."""
    level = getattr(adapter, "observability_profile", _MISSING)
    if level is _MISSING:
        raise AdapterContractError(
            f"adapter {type_name(adapter)} has no observability_profile; an AgentAdapter "
            "must declare one (a rampart.ObservabilityLevel)"
        )
    if not isinstance(level, ObservabilityLevel):
        raise AdapterContractError(
            f"adapter.observability_profile returned {type_name(level)}, "
            "expected rampart.ObservabilityLevel"
        )
    return level


def manifest_of(adapter: object) -> AppManifest | None:
    """The adapter's manifest (``None`` allowed), checked."""
    manifest = getattr(adapter, "manifest", _MISSING)
    if manifest is _MISSING:
        raise AdapterContractError(
            f"adapter {type_name(adapter)} has no manifest; an AgentAdapter must declare "
            "one (a rampart.AppManifest)"
        )
    if manifest is not None and not isinstance(manifest, AppManifest):
        raise AdapterContractError(
            f"adapter.manifest returned {type_name(manifest)}, expected rampart.AppManifest"
        )
    return manifest


class AdapterSession:
    """Async context manager: create the adapter's session, enter it, close it shielded.

    ``around`` is what must stay open around the session (a strategy's trace scope,
    e.g. XPIA's live injections): it is entered before the session is created and left
    after the session is closed, **in the same shielded scope** as the close, so all of
    an execution's cleanup costs one cancel scope (on trio a cancel scope is about 5 %
    of an execution's CPU; ``benchmarks/bench_engine.py``). Leaving ``around`` sees the
    exception the close ended with, as a nested ``async with`` would. If the session
    cannot be opened, ``around`` is left (shielded) with that error.

    Neither the session's nor ``around``'s ``__aexit__`` return value is used: they
    cannot swallow the engine's exceptions (or its cancellations).
    """

    __slots__ = ("_adapter", "_around", "_session")

    def __init__(
        self, adapter: object, *, around: AbstractAsyncContextManager[object] | None = None
    ) -> None:
        self._adapter = adapter
        self._around = around
        self._session: Session | None = None

    async def __aenter__(self) -> Session:
        around = self._around
        if around is not None:
            await around.__aenter__()
        try:
            session = await create_session(self._adapter)
            entered = await enter_session(session)
        except BaseException as error:
            await self._close(None, error)
            raise
        try:
            checked = check_entered(session, entered)
        except AdapterContractError as error:
            # The session is closed as a clean exit (it did nothing wrong inside the
            # block); ``around`` is left with the error, which is what ends the run.
            await self._close(session, None, around_exc=error)
            raise
        self._session = session
        return checked

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session, self._session = self._session, None
        await self._close(session, exc)

    async def _close(
        self,
        session: Session | None,
        exc: BaseException | None,
        *,
        around_exc: BaseException | None = None,
    ) -> None:
        """Close ``session`` (if any), then leave ``around``: one shielded scope for both."""
        around = self._around
        with anyio.CancelScope(shield=True):
            if session is not None:
                try:
                    await exit_session(session, *_exc_info(exc))
                except BaseException as error:
                    if around is not None:
                        await around.__aexit__(*_exc_info(error))
                    raise
            if around is not None:
                await around.__aexit__(*_exc_info(around_exc or exc))


def _exc_info(
    exc: BaseException | None,
) -> tuple[type[BaseException] | None, BaseException | None, TracebackType | None]:
    if exc is None:
        return None, None, None
    return type(exc), exc, exc.__traceback__


async def serve_session(
    session: Session, requests: Mailbox[PromptDecision], turns: Mailbox[Turn]
) -> None:
    """Serve ``session`` as the session actor until ``requests`` closes, then close ``turns``.

    Takes one prompt decision at a time, sends its request and emits the raw turn.
    Turn numbers count from 0 in send order. ``turns`` is closed only on a normal end
    (that ends the pipeline); on failure the task group cancels everyone, so no task
    ever mistakes a failure for a normal end of stream.
    """
    turn_number = 0
    while True:
        try:
            decision = await requests.get()
        except anyio.EndOfStream:
            break
        request = decision.request
        response = await send_checked(session, request)
        turns.put(
            Turn(
                request=request,
                response=response,
                turn_number=turn_number,
                timestamp=datetime.now(UTC),
                driver_reasoning=decision.reasoning,
            )
        )
        turn_number += 1
    turns.close()
