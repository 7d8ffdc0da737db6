"""What a run had observed when it failed: the trace it was producing.

The error boundary (``BaseExecution.execute_async``) opens an ``Observation`` for each
run (``with Observation()``, held in a context variable); the trace runner registers
there the trace record it writes (``observe``), and the session actor counts in that
record the requests it sent. When a failure reaches the boundary, what was observed is still at
hand: the completed turns (evaluated before the failure becomes ERROR, so no finding
is lost) and whether the agent failed while answering a request
(``in_send``: "on turn 2 after 1 completed turn").

It also hears the tool calls the agent's model traffic showed (``rampart._seen_calls``,
reported by ``rampart.limits.LimitedTransport``), each marked with the request the
agent was answering when it was first seen. When the agent fails while answering,
``partial_turn`` is what it had done by then: the calls of that request that ran (the
model asked for them and the agent sent their results back), as a turn the boundary
judges with the completed ones.

Without the transport, the failure itself may still show them: an SDK's error keeps the
request that failed, and a chat-completions request resends the whole conversation, the
tool calls the agent ran and their results included. At the boundary
(``saw_failure``) the requests the exception chain carries
(``rampart.core._failures.failed_requests``) are read with the transport's reader
(``rampart.codec._wire_calls.request_calls``), and what they show joins what was seen,
as seen while answering the request that failed. A Responses API request chained by
``previous_response_id`` sends back only results: a call it does not name is counted
(``unnamed_results``), never made up.
"""

from __future__ import annotations

from contextvars import ContextVar
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rampart import _seen_calls
from rampart.codec._internal import request_calls
from rampart.core._internal import failed_requests
from rampart.core.types import Response, ToolCall, Turn

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextvars import Token
    from types import TracebackType

    from rampart._seen_calls import SeenCall
    from rampart.engine._pipeline import TraceRecord

__all__ = ["Observation", "observe"]


#: At most this many tool calls are remembered per run (the first ones seen).
MAX_SEEN_CALLS = 1024


class _Seen:
    """What is known of one call: the request it was first seen in, and its parts."""

    __slots__ = ("arguments", "name", "output", "sent")

    def __init__(self, sent: int) -> None:
        self.sent = sent
        self.name: str | None = None
        self.arguments: dict[str, Any] | None = None
        self.output: str | None = None


class Observation:
    """The trace record of the run's latest trace (``None``: no trace was started), and
    the tool calls its model traffic showed.

    Within ``with Observation() as observation:``, traces register with it (``observe``)
    and seen calls reach it (``rampart._seen_calls``). A class with ``__enter__`` rather
    than a generator-based context manager: every execution opens one, and
    ``@contextmanager`` costs several times as much."""

    __slots__ = ("_calls", "_listening", "_token", "record")

    def __init__(self) -> None:
        self.record: TraceRecord | None = None
        self._calls: dict[str, _Seen] = {}

    def __enter__(self) -> Observation:
        self._token: Token[Observation | None] = _CURRENT.set(self)
        self._listening = _seen_calls.listen(self.saw)
        self._listening.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        listening = self._listening
        del self._listening  # it refers to self (self.saw): leave no cycle for the gc
        try:
            listening.__exit__(exc_type, exc, tb)
        finally:
            _CURRENT.reset(self._token)

    def saw(self, calls: Sequence[SeenCall]) -> None:
        """Remember the parts of ``calls`` (a ``rampart._seen_calls`` listener)."""
        sent = 0 if self.record is None else self.record.sent
        for call in calls:
            seen = self._calls.get(call.call_id)
            if seen is None:
                if len(self._calls) >= MAX_SEEN_CALLS:
                    continue
                seen = self._calls[call.call_id] = _Seen(sent)
            if call.name is not None and seen.name is None:
                seen.name, seen.arguments = call.name, call.arguments
            if call.output is not None and seen.output is None:
                seen.output = call.output

    def saw_failure(self, error: BaseException) -> None:
        """Remember the calls shown by the requests ``error`` carries (the module
        docstring), when the agent failed answering; a body that is not a model API's
        JSON request shows none."""
        if self.in_send:
            for body in failed_requests(error):
                self.saw(request_calls(body))

    def unnamed_results(self) -> int:
        """Results the agent sent back while answering the request it failed on, of
        calls its traffic did not name (0 unless it failed answering)."""
        record = self.record
        if record is None or not self.in_send:
            return 0
        return sum(
            1
            for seen in self._calls.values()
            if seen.sent == record.sent and seen.name is None and seen.output is not None
        )

    def partial_turn(self) -> Turn | None:
        """The tool calls that ran while the agent answered the request it failed on, as
        a turn of that request (``None``: it did not fail answering, or none ran)."""
        record = self.record
        if record is None or record.pending is None or not self.in_send:
            return None
        calls = [
            ToolCall(name=seen.name, arguments=dict(seen.arguments or {}), result=seen.output)
            for seen in self._calls.values()
            if seen.sent == record.sent and seen.name is not None and seen.output is not None
        ]
        if not calls:
            return None
        return Turn(
            request=record.pending,
            response=Response(text="", tool_calls=calls, metadata={"partial": True}),
            turn_number=record.sent - 1,
            timestamp=datetime.now(UTC),
        )

    @property
    def completed(self) -> int:
        """Turns completed (answered and recorded)."""
        return 0 if self.record is None else len(self.record.raw_turns)

    @property
    def in_send(self) -> bool:
        """The agent was answering a request (turn ``completed + 1``) when the run failed."""
        return self.record is not None and self.record.sent > len(self.record.raw_turns)


_CURRENT: ContextVar[Observation | None] = ContextVar("rampart_observation", default=None)


def observe(record: TraceRecord) -> None:
    """Register ``record`` with the run's observation, if a boundary opened one."""
    observation = _CURRENT.get()
    if observation is not None:
        observation.record = record
