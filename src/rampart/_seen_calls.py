"""rampart's channel for the tool calls an agent's model traffic shows.

An agent built on a model SDK runs tools between its model calls, and a turn's tools
reach rampart only in the turn's answer (``Response.tool_calls``). When the agent fails
before that answer (its next model call is refused for good), the tools it already ran
would be lost. ``rampart.limits.LimitedTransport`` sits under the agent's model client
and sees that traffic: the calls the model asked for (in its answers) and the results
the agent sent back (in its next request: the call ran). It reports each as a
``SeenCall``; the error boundary of the running execution (``rampart.engine``) listens
and judges them with the turns, so that no finding is lost.

Outside a listener a report is a no-op (and ``listening()`` says whether reading the
traffic is worth it). The listener lives in a context variable, which child tasks
inherit; only the innermost one hears a report.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import TracebackType

__all__ = ["SeenCall", "listen", "listening", "report"]


@attrs.frozen(kw_only=True)
class SeenCall:
    """One piece of a tool call, matched to the others by ``call_id``: what the model
    asked for (``name`` and ``arguments``) or what the agent sent back (``output``)."""

    call_id: str
    name: str | None = None
    arguments: dict[str, Any] | None = None
    output: str | None = None


_LISTENER: contextvars.ContextVar[Callable[[Sequence[SeenCall]], None] | None] = (
    contextvars.ContextVar("rampart_seen_calls_listener", default=None)
)


def listening() -> bool:
    """True when a report made here reaches someone (skip reading the traffic otherwise)."""
    return _LISTENER.get() is not None


def report(calls: Sequence[SeenCall]) -> None:
    """Pass ``calls`` to this context's listener, if any."""
    listener = _LISTENER.get()
    if listener is not None and calls:
        listener(calls)


class listen:
    """Within the block, reports go to ``listener``.

    A class rather than a generator-based context manager: every execution opens one
    (``rampart.engine``), and this costs a fraction of what ``@contextmanager`` does."""

    __slots__ = ("_listener", "_token")

    def __init__(self, listener: Callable[[Sequence[SeenCall]], None]) -> None:
        self._listener = listener

    def __enter__(self) -> None:
        self._token = _LISTENER.set(self._listener)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        _LISTENER.reset(self._token)
