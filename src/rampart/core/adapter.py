"""How rampart talks to an agent: an adapter makes sessions, a session exchanges turns."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rampart.core.manifest import AppManifest
    from rampart.core.types import ObservabilityLevel, Request, Response

__all__ = ["AgentAdapter", "Session"]


@runtime_checkable
class Session(AbstractAsyncContextManager["Session", None], Protocol):
    """One bounded interaction with the agent; fresh state means a fresh session.

    ``__aenter__`` returns the session; ``__aexit__`` is idempotent and must not raise.
    ``send_async`` fills ``tool_calls`` / ``side_effects`` with everything it observes.
    """

    async def send_async(self, request: Request) -> Response: ...


@runtime_checkable
class AgentAdapter(Protocol):
    """A factory for sessions plus what the agent declares and what rampart can see."""

    async def create_session_async(self) -> Session: ...

    @property
    def manifest(self) -> AppManifest: ...

    @property
    def observability_profile(self) -> ObservabilityLevel: ...
