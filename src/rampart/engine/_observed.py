"""What a run had observed when it failed: the trace it was producing.

The error boundary (``BaseExecution.execute_async``) opens an ``Observation`` for each
run (``observing``, a context variable); the trace runner registers there the trace
record it writes (``observe``), and the session actor counts in that record the
requests it sent. When a failure reaches the boundary, what was observed is still at
hand: the completed turns (evaluated before the failure becomes ERROR, so no finding
is lost) and whether the agent failed while answering a request
(``in_send``: "on turn 2 after 1 completed turn").
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.engine._pipeline import TraceRecord

__all__ = ["Observation", "observe", "observing"]


class Observation:
    """The trace record of the run's latest trace (``None``: no trace was started)."""

    __slots__ = ("record",)

    def __init__(self) -> None:
        self.record: TraceRecord | None = None

    @property
    def completed(self) -> int:
        """Turns completed (answered and recorded)."""
        return 0 if self.record is None else len(self.record.raw_turns)

    @property
    def in_send(self) -> bool:
        """The agent was answering a request (turn ``completed + 1``) when the run failed."""
        return self.record is not None and self.record.sent > len(self.record.raw_turns)


_CURRENT: ContextVar[Observation | None] = ContextVar("rampart_observation", default=None)


@contextmanager
def observing() -> Iterator[Observation]:
    """Within the block, traces register with the ``Observation`` yielded."""
    observation = Observation()
    token = _CURRENT.set(observation)
    try:
        yield observation
    finally:
        _CURRENT.reset(token)


def observe(record: TraceRecord) -> None:
    """Register ``record`` with the run's observation, if a boundary opened one."""
    observation = _CURRENT.get()
    if observation is not None:
        observation.record = record
