"""``ScriptedAgent``: an adapter that replays explicit responses, for unit tests.

Each session replays the script from its first entry, so a fresh session behaves
exactly like the previous one did. Everything the agent receives is recorded.
"""

from __future__ import annotations

import copy as _copy
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias

from rampart._checks import check_instance, check_optional_instance, invalid
from rampart._session import GuardedSession
from rampart.core.errors import RampartError
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response

__all__ = [
    "ScriptEntry",
    "ScriptExhaustedError",
    "ScriptFunction",
    "ScriptedAgent",
    "ScriptedSession",
]

ScriptEntry: TypeAlias = Response | str | Exception
"""One scripted reply: a ``Response``, a plain text (shorthand for ``Response(text=...)``),
or an exception instance to raise for that request."""

ScriptFunction: TypeAlias = Callable[[Request, int], Response | str | Awaitable[Response | str]]
"""Computes the reply to ``(request, turn_index)``; may be a coroutine function."""


_OWNER = "ScriptedAgent"


class ScriptExhaustedError(RampartError):
    """A session received more requests than the script has entries (a bug in the test)."""


def _as_response(value: object, *, where: str) -> Response:
    if isinstance(value, Response):
        return value
    if isinstance(value, str):
        return Response(text=value)
    raise invalid(_OWNER, where, "a Response or str", value)


def _fresh(error: Exception) -> Exception:
    """A copy of a scripted exception, so concurrent sessions never share one instance."""
    try:
        copy = _copy.copy(error)
    except Exception:
        return error.with_traceback(None)
    return copy if type(copy) is type(error) and copy.args == error.args else error


class ScriptedAgent:
    """An ``AgentAdapter`` whose sessions answer from a fixed script.

    ``script`` is either a sequence of entries (a ``Response``, a ``str``, or an
    ``Exception`` to raise, as a fresh copy each time) consumed one per request, or a function
    ``(request, turn_index) -> Response`` (sync or async). ``observability`` is what
    ``observability_profile`` declares; responses are returned exactly as scripted.
    """

    def __init__(
        self,
        script: Sequence[ScriptEntry] | ScriptFunction,
        *,
        observability: ObservabilityLevel = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        manifest: AppManifest | None = None,
    ) -> None:
        if callable(script):
            self._function: ScriptFunction | None = script
            self._entries: tuple[ScriptEntry, ...] = ()
        elif isinstance(script, Sequence) and not isinstance(script, str):
            for index, entry in enumerate(script):
                if not isinstance(entry, Response | str | Exception):
                    raise invalid(_OWNER, f"script[{index}]", "a Response, str or Exception", entry)
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
        self._manifest = manifest
        self.requests: list[Request] = []
        """Every request received, across all sessions, in arrival order."""
        self.sessions: list[ScriptedSession] = []
        """Every session created, in creation order."""
        self.sessions_closed = 0

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

    async def create_session_async(self) -> ScriptedSession:
        session = ScriptedSession(agent=self, index=len(self.sessions))
        self.sessions.append(session)
        return session

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
        return _as_response(entry, where=f"script[{turn}]")


class ScriptedSession(GuardedSession):
    """One replay of the script; usable only inside its ``async with`` block."""

    def __init__(self, *, agent: ScriptedAgent, index: int) -> None:
        super().__init__(index=index)
        self._agent = agent
        self.requests: list[Request] = []

    def __repr__(self) -> str:
        return f"ScriptedSession(index={self.index}, requests={len(self.requests)})"

    def _on_close(self) -> None:
        self._agent.sessions_closed += 1

    async def send_async(self, request: Request) -> Response:
        self._check_send(request)
        turn = len(self.requests)
        self.requests.append(request)
        self._agent.requests.append(request)
        return await self._agent._reply(self, request, turn)
