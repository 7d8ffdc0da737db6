"""``GuardedSession``: the enter-once, send-inside lifecycle rampart's own sessions share.

A session is entered with ``async with``, takes requests only inside that block, and
cannot be entered again once it has been closed. ``ScriptedSession``,
``SimulatedSession`` and ``ChatCompletionsSession`` all follow these rules with the
same messages, so the state and its checks live here once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from rampart._checks import invalid
from rampart.core.types import Request

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["GuardedSession"]


class GuardedSession:
    """``index`` (creation order), ``entered`` and ``closed``, and the checks on them.

    Subclasses call ``_check_send(request)`` first thing in ``send_async`` and may
    override ``_on_close`` (run once, on the first exit).
    """

    __slots__ = ("closed", "entered", "index")

    def __init__(self, *, index: int) -> None:
        self.index = index
        """Position of this session in its agent's (or adapter's) creation order."""
        self.entered = False
        self.closed = False

    async def __aenter__(self) -> Self:
        if self.closed:
            raise RuntimeError(
                f"{type(self).__name__} {self.index} is closed and cannot be re-entered"
            )
        self.entered = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.closed:
            self.closed = True
            self._on_close()

    def _on_close(self) -> None:
        """Called once, when the session is first closed."""

    def _check_send(self, request: object) -> None:
        """Reject a non-``Request`` and a send outside the ``async with`` block."""
        if not isinstance(request, Request):
            raise invalid(f"{type(self).__name__}.send_async", "request", "a Request", request)
        if not self.entered or self.closed:
            state = "closed" if self.closed else "not entered"
            raise RuntimeError(
                f"{type(self).__name__} {self.index} is {state}; "
                "send only inside `async with session`"
            )
