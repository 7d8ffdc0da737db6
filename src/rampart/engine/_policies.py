"""Stop policies: the cancel scopes that end turn production and whole executions.

Two kinds live here:

* ``TurnProduction`` is the scope turn production runs in. The evaluator pipeline
  stops it when a stop check detects (``STOP_CONDITION_MET``) or the turn budget is
  spent (``MAX_TURNS_REACHED``); the producer finishes it when the driver has nothing
  more to say (``DRIVER_EXHAUSTED``). Why it stopped is read from its state after the
  scope has exited, never by catching a cancellation inside it.
* ``deadline`` bounds a whole execution: its scope's deadline is computed on entry,
  and once the scope has exited a caught cancellation becomes ``TimeoutError``.

It also resolves ``stop_when`` (``"auto"``, an evaluator or ``None``) to the online
stop condition; the other parameters are checked with ``rampart._checks``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from rampart._checks import EVALUATOR, check_method, invalid
from rampart.core.evaluator import detected_is_absorbing

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.core.evaluator import Evaluator
    from rampart.core.types import TraceEndReason

__all__ = [
    "TurnProduction",
    "deadline",
    "format_seconds",
    "resolve_stop_when",
]

_STOP_WHEN = f"{EVALUATOR}, None or 'auto'"


class TurnProduction:
    """The cancel scope turn production runs in, and why production ended.

    ``stop`` cancels the scope from another task (the evaluator pipeline);
    ``finish`` records a natural end from inside it. The first reason recorded wins.
    """

    __slots__ = ("reason", "scope")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.reason: TraceEndReason | None = None

    def stop(self, reason: TraceEndReason) -> None:
        """Record ``reason`` and cancel turn production."""
        if self.reason is None:
            self.reason = reason
        self.scope.cancel(reason=f"turn production stopped: {reason.value}")

    def finish(self, reason: TraceEndReason) -> None:
        """Record that production ended by itself (nothing left to cancel)."""
        if self.reason is None:
            self.reason = reason


def format_seconds(seconds: float) -> str:
    """``2`` for 2.0, ``0.5`` for 0.5: how a duration reads in a message."""
    return f"{seconds:g}"


@contextmanager
def deadline(timeout: float | None) -> Iterator[None]:
    """Bound the enclosed work to ``timeout`` seconds (``None``: unbounded).

    The deadline is computed when the block is entered. When the scope's own deadline
    cancelled the work, ``TimeoutError("timed out after N s")`` is raised after the
    scope has exited; a cancellation from an outer scope propagates unchanged.

    Cleanup that runs under the cancellation (a session close, an injection removal)
    can fail, and its exception then escapes instead of the cancellation. So that the
    timeout is not lost, an exception escaping once the deadline has fired is raised
    together with the ``TimeoutError``, as ``ExceptionGroup("timed out after N s, then
    cleanup failed", [TimeoutError, error])``.
    """
    if timeout is None:
        yield
        return
    scope = anyio.CancelScope(deadline=anyio.current_time() + timeout)
    try:
        with scope:
            yield
    except Exception as error:
        if not scope.cancel_called:  # the deadline never fired: not a timeout
            raise
        message = f"timed out after {format_seconds(timeout)} s"
        raise ExceptionGroup(
            f"{message}, then cleanup failed", [TimeoutError(message), error]
        ) from None
    if scope.cancelled_caught:
        raise TimeoutError(f"timed out after {format_seconds(timeout)} s")


def resolve_stop_when(stop_when: object, *, evaluator: Evaluator, owner: str) -> Evaluator | None:
    """The online stop condition ``stop_when`` asks for (``owner`` names the caller).

    ``None`` disables online stopping; an evaluator is used as given; ``"auto"`` uses
    the verdict ``evaluator`` itself, but only when a detection by it can never be
    undone as the trace grows (``detected_is_absorbing``), else no online stop.
    """
    if isinstance(stop_when, str):
        if stop_when == "auto":
            return evaluator if detected_is_absorbing(evaluator) else None
        raise invalid(owner, "stop_when", _STOP_WHEN, stop_when, error=ValueError)
    if stop_when is None:
        return None
    return check_method(owner, "stop_when", stop_when, "evaluate_async", expected=_STOP_WHEN)  # type: ignore[return-value]
