"""The current result collector: per test (and per trial clone), in context variables.

Each test body, and each concurrently running trial clone, runs with its own
``ResultCollector`` in a context variable that the engine owns and the pytest plugin
sets (``bind_collector``). Executions report to it through
``ResultCollectionHandler``, which the plugin installs as a *framework handler*
(``rampart.engine._execution.framework_handlers``) for the same context, so no global
registry is involved and concurrent clones never see each other's results.
``record_result`` and ``current_trial`` (re-exported by ``rampart``, lazily) read the
same variables; outside a test there is no collector and no trial.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import TYPE_CHECKING

import attrs

from rampart._checks import check_instance
from rampart.core.result import Result
from rampart.engine._execution import ExecutionEvent

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.engine._execution import ExecutionEventData

__all__ = [
    "ResultCollectionHandler",
    "ResultCollector",
    "TrialInfo",
    "bind_collector",
    "current_trial",
    "record_result",
]


@attrs.frozen(kw_only=True)
class TrialInfo:
    """Which clone of a trial group is running: ``index`` in ``range(n)``."""

    index: int
    n: int


class ResultCollector:
    """Holds the results one test body (or one trial clone) produced, in order.

    ``record(result=...)`` adds one (RAMPART's method); ``results`` is a copy, so
    changing the returned list never changes what was recorded.
    """

    def __init__(self) -> None:
        self._results: list[Result] = []
        # The adapters executions ran against, kept until the test is reported so
        # that a rate limiter created inside the test can still report statistics.
        self.adapters: dict[int, object] = {}

    @property
    def results(self) -> list[Result]:
        """The results recorded so far, in order (a fresh list each time)."""
        return list(self._results)

    def record(self, *, result: Result) -> None:
        """Record ``result`` (RAMPART's ``ResultCollector.record``)."""
        check_instance(
            "ResultCollector.record", "result", result, Result, expected="a rampart.Result"
        )
        self._results.append(result)

    def add(self, result: Result, *, adapter: object = None) -> None:
        """Record ``result`` and remember the adapter it ran against."""
        self._results.append(result)
        if adapter is not None:
            self.adapters.setdefault(id(adapter), adapter)


_collector: contextvars.ContextVar[ResultCollector | None] = contextvars.ContextVar(
    "rampart_collector", default=None
)
_trial: contextvars.ContextVar[TrialInfo | None] = contextvars.ContextVar(
    "rampart_trial", default=None
)


def record_result(result: Result) -> None:
    """Record a manually built ``Result`` for the running test; a no-op outside pytest."""
    check_instance("record_result", "result", result, Result, expected="a rampart.Result")
    collector = _collector.get()
    if collector is not None:
        collector.add(result)


def current_trial() -> TrialInfo | None:
    """The running trial clone's index and group size, or None outside a trial test."""
    return _trial.get()


class ResultCollectionHandler:
    """Execution event handler that records every finished execution's result."""

    async def on_event_async(self, *, event_data: ExecutionEventData) -> None:
        if event_data.event is ExecutionEvent.ON_POST_EXECUTE and event_data.result is not None:
            collector = _collector.get()
            if collector is not None:
                collector.add(event_data.result, adapter=event_data.adapter)


@contextmanager
def bind_collector(collector: ResultCollector, trial: TrialInfo | None = None) -> Iterator[None]:
    """Make ``collector`` (and ``trial``) the current ones in this context."""
    collector_token = _collector.set(collector)
    trial_token = _trial.set(trial)
    try:
        yield
    finally:
        _trial.reset(trial_token)
        _collector.reset(collector_token)
