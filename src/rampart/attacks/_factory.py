"""``Attacks``: the factory for attack executions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.attacks._inject import check_handles
from rampart.attacks._xpia import XPIAExecution
from rampart.drivers import coerce_trigger

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.driver import PromptDriver
    from rampart.core.evaluator import Evaluator
    from rampart.core.injection import InjectionHandle
    from rampart.core.types import Request
    from rampart.engine._internal import ExecutionEventHandler

__all__ = ["Attacks"]


class Attacks:
    """Builds attack executions; each call returns a fresh execution to run."""

    @staticmethod
    def xpia(
        *,
        inject: InjectionHandle | Sequence[InjectionHandle] | None = None,
        trigger: str | Request | Sequence[str | Request] | PromptDriver,
        evaluator: Evaluator,
        stop_when: Evaluator | str | None = "auto",
        max_turns: int = 5,
        event_handlers: Sequence[ExecutionEventHandler] | None = None,
        timeout: float | None = None,
    ) -> XPIAExecution:
        """A cross-prompt injection attack.

        ``inject``: the handle(s) planting the payload (omit for inline XPIA, putting
        the payload in a ``Request``'s attachments). ``trigger``: what the user says
        (a prompt, a ``Request``, a list of either, or a ``PromptDriver``).
        ``evaluator``: detects the attack objective (DETECTED = UNSAFE).
        ``stop_when``: ``"auto"`` (stop once the evaluator's detection can no longer be
        undone), an evaluator, or ``None``. ``max_turns``: conversation budget.
        ``timeout``: seconds for the whole execution (ERROR when exceeded).
        """
        return XPIAExecution(
            handles=check_handles("Attacks.xpia", "inject", inject),
            driver=coerce_trigger(trigger, owner="Attacks.xpia", name="trigger"),
            evaluator=evaluator,
            stop_when=stop_when,
            max_turns=max_turns,
            event_handlers=event_handlers,
            timeout=timeout,
        )
