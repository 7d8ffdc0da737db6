"""``SingleTurnExecution``: the behavioural probe.

A probe checks that the agent *does* something expected (refuses, cites a source,
asks for confirmation). It opens a session, drives the prompts, evaluates the
completed trace once and maps the answer with probe polarity: DETECTED means the
expected behaviour happened (SAFE), NOT_DETECTED that it did not (UNSAFE),
UNDETERMINED stays UNDETERMINED; no turns means ERROR. There is no injection phase and
no observability adjustment, but a SAFE verdict on a conversation in which the adapter
reported a turn it could not observe (``Response.metadata["unobserved"]``, e.g. a
provider's content filter) is UNDETERMINED, with the turn named in the summary and in
``metadata["undetermined_reason"]``. By default there is no online stop: the whole
conversation runs and is judged as a whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.engine._internal import TraceExecution
from rampart.strategies import PROBE
from rampart.strategies._internal import unobserved_turns

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator
    from rampart.core.result import Result
    from rampart.engine._internal import ExecutionEventHandler, TraceRun
    from rampart.strategies import Strategy

__all__ = ["SingleTurnExecution"]


class SingleTurnExecution(TraceExecution):
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
        super().__init__(
            driver=driver,
            evaluator=evaluator,
            stop_when=stop_when,
            max_turns=max_turns,
            event_handlers=event_handlers,
            timeout=timeout,
        )

    @property
    def strategy_name(self) -> str:
        return PROBE.name

    @property
    def declaration(self) -> Strategy:
        return PROBE

    def _result(self, run: TraceRun) -> Result:
        return PROBE.result(run, reasons=unobserved_turns(run.turns), metadata={})
