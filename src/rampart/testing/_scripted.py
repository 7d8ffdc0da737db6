"""``ScriptedAgent``: an adapter that replays explicit responses, for unit tests.

Each session replays the script from its first entry, so a fresh session behaves
exactly like the previous one did. Everything the agent receives is recorded, and
``statistics()`` counts sessions, requests in flight and errors raised.
"""

from __future__ import annotations

import copy as _copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, TypeAlias

import anyio
import attrs

from rampart._checks import check_instance, check_optional_instance, check_seconds, invalid
from rampart.adapters._internal import GuardedSession
from rampart.core.errors import RampartError
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response

if TYPE_CHECKING:
    from types import TracebackType

__all__ = [
    "ScriptEntry",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptStep",
    "ScriptedAgent",
    "ScriptedAgentStatistics",
    "ScriptedSession",
]

ScriptStep: TypeAlias = Callable[[Request], Response | str | Awaitable[Response | str]]
"""One scripted request handled by code: called with the request, may be a coroutine
function (to sleep, hang or wait for an event) and may raise."""

ScriptEntry: TypeAlias = Response | str | Exception | ScriptStep
"""One scripted reply: a ``Response``, a plain text (shorthand for ``Response(text=...)``),
an exception instance to raise for that request, or a ``ScriptStep`` callable."""

ScriptFunction: TypeAlias = Callable[[Request, int], Response | str | Awaitable[Response | str]]
"""Computes the reply to ``(request, turn_index)``; may be a coroutine function."""


_OWNER = "ScriptedAgent"


class ScriptExhaustedError(RampartError):
    """A session received more requests than the script has entries (a bug in the test)."""


@attrs.frozen(kw_only=True)
class ScriptedAgentStatistics:
    """A snapshot of what a ``ScriptedAgent`` has done so far (``agent.statistics()``).

    ``in_flight`` / ``peak_in_flight`` count ``send_async`` calls under way (the peak is
    how many ran at once); ``errors_raised`` counts sends that raised (scripted
    exceptions, raising steps and script exhaustion; cancellation is not counted).
    """

    sessions_created: int
    sessions_closed: int
    requests: int
    in_flight: int
    peak_in_flight: int
    errors_raised: int

    @property
    def sessions_open(self) -> int:
        """Sessions created and not closed yet."""
        return self.sessions_created - self.sessions_closed


def _as_response(value: object, *, where: str) -> Response:
    if isinstance(value, Response):
        return value
    if isinstance(value, str):
        return Response(text=value)
    raise invalid(_OWNER, where, "a Response or str", value)


def _fresh(error: Exception) -> Exception:
    """A copy of a scripted exception, so concurrent sessions never share one instance.

    The copy keeps the original's explicit cause (``raise ... from``) and notes.
    """
    try:
        copy = _copy.copy(error)
    except Exception:
        return error.with_traceback(None)
    if type(copy) is not type(error) or copy.args != error.args:
        return error
    copy.__cause__ = error.__cause__
    copy.__suppress_context__ = error.__suppress_context__
    return copy


def _check_entry(index: int, entry: object) -> None:
    if isinstance(entry, type) or not (
        isinstance(entry, Response | str | Exception) or callable(entry)
    ):
        raise invalid(_OWNER, f"script[{index}]", "a Response, str, Exception or callable", entry)


class ScriptedAgent:
    """An ``AgentAdapter`` whose sessions answer from a fixed script.

    ``script`` is either a sequence of entries consumed one per request -- a
    ``Response``, a ``str``, an ``Exception`` to raise (as a fresh copy each time) or a
    ``ScriptStep`` callable ``(request) -> Response | str`` (sync or async, may raise) --
    or a function ``(request, turn_index) -> Response | str`` (sync or async) that
    answers every request. ``observability`` is what ``observability_profile``
    declares; responses are returned exactly as scripted. ``close_delay`` seconds are
    slept when a session closes (an agent whose teardown takes time); a close cancelled
    during that sleep does not count as closed.
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry] | ScriptFunction,
        *,
        observability: ObservabilityLevel = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        manifest: AppManifest | None = None,
        close_delay: float = 0.0,
    ) -> None:
        if callable(script):
            self._function: ScriptFunction | None = script
            self._entries: tuple[ScriptEntry, ...] = ()
        elif isinstance(script, Sequence) and not isinstance(script, str):
            for index, entry in enumerate(script):
                _check_entry(index, entry)
            self._function = None
            self._entries = tuple(script)
        else:
            raise invalid(
                _OWNER,
                "script",
                "a sequence of responses or a function (request, turn_index) -> Response",
                script,
            )
        self._observability = check_instance(
            _OWNER,
            "observability",
            observability,
            ObservabilityLevel,
            expected="an ObservabilityLevel",
        )
        manifest = check_optional_instance(
            _OWNER, "manifest", manifest, AppManifest, expected="an AppManifest"
        )
        if manifest is None:
            manifest = AppManifest(name="scripted-agent")
        self._close_delay = check_seconds(_OWNER, "close_delay", close_delay)
        self._manifest = manifest
        self.requests: list[Request] = []
        """Every request received, across all sessions, in arrival order."""
        self.sessions: list[ScriptedSession] = []
        """Every session created, in creation order."""
        self.sessions_closed = 0
        self._in_flight = 0
        self._peak_in_flight = 0
        self._errors_raised = 0

    def __repr__(self) -> str:
        kind = "function" if self._function is not None else f"{len(self._entries)} entries"
        return f"ScriptedAgent(script={kind}, sessions={len(self.sessions)})"

    @property
    def manifest(self) -> AppManifest:
        return self._manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return self._observability

    @property
    def sessions_created(self) -> int:
        return len(self.sessions)

    def statistics(self) -> ScriptedAgentStatistics:
        """A frozen snapshot of the counters (sessions, requests, concurrency, errors)."""
        return ScriptedAgentStatistics(
            sessions_created=len(self.sessions),
            sessions_closed=self.sessions_closed,
            requests=len(self.requests),
            in_flight=self._in_flight,
            peak_in_flight=self._peak_in_flight,
            errors_raised=self._errors_raised,
        )

    async def create_session_async(self) -> ScriptedSession:
        session = ScriptedSession(agent=self, index=len(self.sessions))
        self.sessions.append(session)
        return session

    async def _answer(self, session: ScriptedSession, request: Request, turn: int) -> Response:
        self._in_flight += 1
        self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            return await self._reply(session, request, turn)
        except Exception:
            self._errors_raised += 1
            raise
        finally:
            self._in_flight -= 1

    async def _reply(self, session: ScriptedSession, request: Request, turn: int) -> Response:
        if self._function is not None:
            value = self._function(request, turn)
            if inspect.isawaitable(value):
                value = await value
            return _as_response(value, where=f"the script function's reply to turn {turn}")
        if turn >= len(self._entries):
            raise ScriptExhaustedError(
                f"ScriptedAgent: session {session.index} received request #{turn + 1} "
                f"(prompt={request.prompt!r}) but the script has only "
                f"{len(self._entries)} response(s)"
            )
        entry = self._entries[turn]
        if isinstance(entry, Exception):
            raise _fresh(entry)
        if isinstance(entry, Response | str):
            return _as_response(entry, where=f"script[{turn}]")
        value = entry(request)
        if inspect.isawaitable(value):
            value = await value
        return _as_response(value, where=f"the reply of script[{turn}]")


class ScriptedSession(GuardedSession):
    """One replay of the script; usable only inside its ``async with`` block."""

    def __init__(self, *, agent: ScriptedAgent, index: int) -> None:
        super().__init__(index=index)
        self._agent = agent
        self.requests: list[Request] = []

    def __repr__(self) -> str:
        return f"ScriptedSession(index={self.index}, requests={len(self.requests)})"

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.closed and self._agent._close_delay:
            await anyio.sleep(self._agent._close_delay)
        await super().__aexit__(exc_type, exc, tb)

    def _on_close(self) -> None:
        self._agent.sessions_closed += 1

    async def send_async(self, request: Request) -> Response:
        self._check_send(request)
        turn = len(self.requests)
        self.requests.append(request)
        self._agent.requests.append(request)
        return await self._agent._answer(self, request, turn)
