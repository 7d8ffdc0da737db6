"""``TraceExecution``: the shared shape of strategies that drive and judge one trace.

An attack and a probe take the same parameters (a driver, a verdict evaluator, the
online stop condition, a turn budget) and run the same way: read the adapter's
observability level and manifest, run one trace (inside whatever scope the strategy
needs around it, e.g. live injections), then map the trace to a ``Result``. Only that
scope, the mapping and ``strategy_name`` differ, so those are what subclasses supply.
"""

from __future__ import annotations

import abc
from contextlib import nullcontext
from typing import TYPE_CHECKING

from rampart._checks import check_int
from rampart.core._protocols import check_driver, check_evaluator
from rampart.engine._actor import manifest_of, observability_of
from rampart.engine._execution import BaseExecution
from rampart.engine._policies import resolve_stop_when
from rampart.engine._trace import run_trace_around

if TYPE_CHECKING:
    from collections.abc import Sequence
    from contextlib import AbstractAsyncContextManager

    from rampart.core.adapter import AgentAdapter
    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator
    from rampart.core.result import Result
    from rampart.engine._execution import ExecutionEventHandler
    from rampart.engine._trace import TraceRun

__all__ = ["TraceExecution"]


class TraceExecution(BaseExecution):
    """An execution that drives one trace with ``driver`` and judges it with ``evaluator``.

    The constructor validates the parameters (same messages for every strategy);
    subclasses implement ``strategy_name`` and ``_result`` and may override
    ``_trace_scope``.
    """

    def __init__(
        self,
        *,
        driver: PromptDriver,
        evaluator: Evaluator,
        stop_when: Evaluator | str | None,
        max_turns: int,
        event_handlers: Sequence[ExecutionEventHandler] | None,
        timeout: float | None,
    ) -> None:
        super().__init__(event_handlers=event_handlers, timeout=timeout)
        owner = type(self).__name__
        self._driver = check_driver(owner, "driver", driver)
        self._evaluator = check_evaluator(owner, "evaluator", evaluator)
        self._stop_when = resolve_stop_when(stop_when, evaluator=self._evaluator, owner=owner)
        self._max_turns = check_int(owner, "max_turns", max_turns, minimum=0)

    @property
    def stop_when(self) -> Evaluator | None:
        """The resolved online stop condition (``None``: no online stop)."""
        return self._stop_when

    @property
    def max_turns(self) -> int:
        return self._max_turns

    def _trace_scope(self) -> AbstractAsyncContextManager[object]:
        """What must stay open while the trace runs and is evaluated (default: nothing).

        The session actor enters it before it opens the session and leaves it after the
        session is closed and ``_result`` has run, inside the cancel scope the session's
        close shielded (``run_trace_around``): its exit runs shielded from cancellation
        without a scope of its own.
        """
        return nullcontext()

    @abc.abstractmethod
    def _result(self, run: TraceRun) -> Result:
        """Map the completed trace to the strategy's verdict (called inside ``_trace_scope``)."""

    async def _execute_async(self, *, adapter: AgentAdapter) -> Result:
        # The adapter's declarations are checked before the scope opens, so a broken
        # adapter fails before anything (an injection) has been set up.
        observability_level = observability_of(adapter)
        manifest = manifest_of(adapter)
        # The result is made inside the trace scope: a strategy may ask what is still
        # live (an injection handle, whether its payload was read) before it is torn down.
        return await run_trace_around(
            around=self._trace_scope(),
            finish=self._result,
            adapter=adapter,
            driver=self._driver,
            max_turns=self._max_turns,
            observability_level=observability_level,
            manifest=manifest,
            stop_when=self._stop_when,
            evaluator=self._evaluator,
        )
