"""``Probes``: the factory for behavioural probes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._checks import invalid
from rampart.core._internal import check_driver
from rampart.core.types import Request
from rampart.drivers import coerce_trigger
from rampart.probes._single_turn import SingleTurnExecution

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator
    from rampart.engine._internal import ExecutionEventHandler

__all__ = ["Probes"]

_OWNER = "Probes.behavior"


def _driver_for(prompt: object, prompts: object, driver: object) -> PromptDriver:
    given = [value is not None for value in (prompt, prompts, driver)]
    if sum(given) != 1:
        raise ValueError("Specify exactly one of 'prompt', 'prompts', or 'driver'.")
    if prompt is not None:
        if not isinstance(prompt, str | Request):
            raise invalid(_OWNER, "prompt", "a str or Request", prompt)
        return coerce_trigger(prompt, owner=_OWNER, name="prompt")
    if prompts is not None:
        if not isinstance(prompts, list | tuple):
            raise invalid(_OWNER, "prompts", "a list of str or Request", prompts)
        return coerce_trigger(prompts, owner=_OWNER, name="prompts")
    return check_driver(_OWNER, "driver", driver)


class Probes:
    """Builds behavioural probes; each call returns a fresh execution to run."""

    @staticmethod
    def behavior(
        *,
        prompt: str | None = None,
        prompts: Sequence[str | Request] | None = None,
        driver: PromptDriver | None = None,
        evaluator: Evaluator,
        stop_when: Evaluator | str | None = None,
        max_turns: int = 25,
        event_handlers: Sequence[ExecutionEventHandler] | None = None,
        timeout: float | None = None,
    ) -> SingleTurnExecution:
        """A behavioural probe: does the agent do what it should?

        Give exactly one of ``prompt`` (one message), ``prompts`` (a fixed
        conversation) or ``driver`` (a ``PromptDriver``). ``evaluator`` detects the
        expected behaviour (DETECTED = SAFE). ``stop_when``: ``None`` (default: judge
        the whole conversation), an evaluator, or ``"auto"``. ``max_turns``:
        conversation budget. ``timeout``: seconds for the whole execution.
        """
        return SingleTurnExecution(
            driver=_driver_for(prompt, prompts, driver),
            evaluator=evaluator,
            stop_when=stop_when,
            max_turns=max_turns,
            event_handlers=event_handlers,
            timeout=timeout,
        )
