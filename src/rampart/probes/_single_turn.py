"""``SingleTurnExecution``: the behavioural probe.

A probe checks that the agent *does* something expected (refuses, cites a source,
asks for confirmation). It opens a session, drives the prompts, evaluates the
completed trace once and maps the answer with probe polarity: DETECTED means the
expected behaviour happened (SAFE), NOT_DETECTED that it did not (UNSAFE),
UNDETERMINED stays UNDETERMINED; no turns means ERROR. There is no injection phase and
no observability adjustment. By default there is no online stop: the whole
conversation runs and is judged as a whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core._actor import manifest_of, observability_of
from rampart.core._policies import (
    check_driver,
    check_evaluator,
    check_max_turns,
    resolve_stop_when,
)
from rampart.core._summaries import probe_summary
from rampart.core._verdicts import resolve_probe_verdict
from rampart.core.execution import BaseExecution
from rampart.core.result import Result, SafetyStatus
from rampart.core.trace import run_trace

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.adapter import AgentAdapter
    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator
    from rampart.core.execution import ExecutionEventHandler

__all__ = ["SingleTurnExecution"]


class SingleTurnExecution(BaseExecution):
    """A behavioural probe run: drive the prompts, judge the whole conversation.

    ``stop_when``: ``None`` (default, no online stop), an evaluator, or ``"auto"``.
    ``max_turns`` bounds the conversation; ``timeout`` the whole execution (seconds).
    """

    def __init__(
        self,
        *,
        driver: PromptDriver,
        evaluator: Evaluator,
        stop_when: Evaluator | str | None = None,
        max_turns: int = 25,
        event_handlers: Sequence[ExecutionEventHandler] | None = None,
        timeout: float | None = None,
    ) -> None:
        super().__init__(event_handlers=event_handlers, timeout=timeout)
        self._driver = check_driver(driver)
        self._evaluator = check_evaluator(evaluator)
        self._stop_when = resolve_stop_when(stop_when, evaluator=self._evaluator)
        self._max_turns = check_max_turns(max_turns)

    @property
    def strategy_name(self) -> str:
        return "probe"

    @property
    def stop_when(self) -> Evaluator | None:
        """The resolved online stop condition (``None``: no online stop)."""
        return self._stop_when

    @property
    def max_turns(self) -> int:
        return self._max_turns

    async def _execute_async(self, *, adapter: AgentAdapter) -> Result:
        observability_level = observability_of(adapter)
        run = await run_trace(
            adapter=adapter,
            driver=self._driver,
            max_turns=self._max_turns,
            observability_level=observability_level,
            manifest=manifest_of(adapter),
            stop_when=self._stop_when,
            evaluator=self._evaluator,
        )
        evaluation = run.final_trace_evaluation
        if evaluation is None:
            status = SafetyStatus.ERROR
        else:
            status = resolve_probe_verdict(evaluation=evaluation)
        return Result(
            status=status,
            summary=probe_summary(
                status=status, evaluation=evaluation, trace_end_reason=run.trace_end_reason
            ),
            observability_level=observability_level,
            final_trace_evaluation=evaluation,
            turns=run.turns,
            trace_end_reason=run.trace_end_reason,
            strategy=self.strategy_name,
        )
