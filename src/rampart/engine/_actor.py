"""The session actor, and the adapter contract checks it relies on.

The actor is the one task that touches the adapter's ``Session``: it opens it
(``AdapterSession``), takes prompt decisions from its request mailbox one at a time,
sends each request, and emits one raw ``Turn`` per response into the turn-event
mailbox (``serve_session``). The session is closed when the request mailbox closes
(or the actor is cancelled); closing is cleanup, so it is shielded from
cancellation.

Each turn owns its request and response: the actor records (and sends) its own copy
of the driver's request and keeps its own copy of the adapter's response, their lists
and metadata included. Requests and responses accept assignment (as RAMPART's do), so
without the copies a driver reusing one ``Request`` for every run, or an adapter
reusing one ``Response`` for every reply, would make one turn's record change with
another's. (Payloads, tool calls and side effects inside them are not copied.)

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
import attrs

from rampart.core._internal import (
    check_entered,
    create_session,
    enter_session,
    exit_session,
    send_checked,
    type_name,
)
from rampart.core.errors import AdapterContractError
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response, Turn

if TYPE_CHECKING:
    from types import TracebackType

    from rampart.core.adapter import Session
    from rampart.core.driver import PromptDecision
    from rampart.engine._mailbox import Mailbox
    from rampart.engine._pipeline import TraceRecord

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

    Closing is cleanup, so it is shielded from cancellation: in a shielded scope of its
    own, or, given ``cleanup``, by shielding that scope. ``cleanup`` is a cancel scope the
    caller entered around this one and around what it cleans up after the session (a
    strategy's trace scope, e.g. XPIA's injections, left right after the session
    closes): from the close onward (or from a failure to open) it stays shielded, so an
    execution's whole cleanup costs one cancel scope (on trio about 5 % of an
    execution's CPU; ``benchmarks/bench_engine.py``). Nobody cancels ``cleanup`` itself,
    so shielding it is enough.

    The session's ``__aexit__`` return value is ignored: a session cannot swallow the
    engine's exceptions (or its cancellations).
    """

    __slots__ = ("_adapter", "_cleanup", "_session")

    def __init__(self, adapter: object, *, cleanup: anyio.CancelScope | None = None) -> None:
        self._adapter = adapter
        self._cleanup = cleanup
        self._session: Session | None = None

    async def __aenter__(self) -> Session:
        try:
            session = await create_session(self._adapter)
            entered = await enter_session(session)
        except BaseException:
            await self._close(None, None, None, None)  # the caller's cleanup follows
            raise
        try:
            checked = check_entered(session, entered)
        except AdapterContractError:
            await self._close(session, None, None, None)
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
        await self._close(session, exc_type, exc, tb)

    async def _close(
        self,
        session: Session | None,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        cleanup = self._cleanup
        if cleanup is not None:
            cleanup.shield = True  # and stays so for the caller's cleanup after this
            if session is not None:
                await exit_session(session, exc_type, exc, tb)
        elif session is not None:
            with anyio.CancelScope(shield=True):
                await exit_session(session, exc_type, exc, tb)


def _own_request(request: Request) -> Request:
    """A copy of ``request`` (and of its attachment list) for one turn to keep."""
    attachments = list(request.attachments)
    if type(request) is Request:  # the common case; evolve costs twice as much
        return Request(prompt=request.prompt, attachments=attachments)
    return attrs.evolve(request, attachments=attachments)


def _own_response(response: Response) -> Response:
    """A copy of ``response`` (and of its lists and metadata) for one turn to keep."""
    tool_calls = list(response.tool_calls)
    side_effects = list(response.side_effects)
    metadata = dict(response.metadata)
    if type(response) is Response:  # the common case; evolve costs twice as much
        return Response(
            text=response.text, tool_calls=tool_calls, side_effects=side_effects, metadata=metadata
        )
    return attrs.evolve(
        response, tool_calls=tool_calls, side_effects=side_effects, metadata=metadata
    )


async def serve_session(
    session: Session, requests: Mailbox[PromptDecision], turns: Mailbox[Turn], record: TraceRecord
) -> None:
    """Serve ``session`` as the session actor until ``requests`` closes, then close ``turns``.

    Takes one prompt decision at a time, sends its request and emits the raw turn.
    Turn numbers count from 0 in send order; ``record.sent`` counts the requests sent.
    ``turns`` is closed only on a normal end (that ends the pipeline); on failure the
    task group cancels everyone, so no task ever mistakes a failure for a normal end of
    stream.
    """
    turn_number = 0
    while True:
        try:
            decision = await requests.get()
        except anyio.EndOfStream:
            break
        request = _own_request(decision.request)
        record.sent = turn_number + 1
        record.pending = request
        response = await send_checked(session, request)
        turns.put(
            Turn(
                request=request,
                response=_own_response(response),
                turn_number=turn_number,
                timestamp=datetime.now(UTC),
                driver_reasoning=decision.reasoning,
            )
        )
        turn_number += 1
    turns.close()
