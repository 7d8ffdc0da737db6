"""The ``Evaluator`` protocol, and the argument checks for an evaluator and a driver.

``rampart.core._contract`` calls evaluators and ``rampart.core.evaluator`` builds
composites that call them through ``_contract``; both name the protocol, so it lives
below both (``rampart.core.evaluator`` re-exports it, its public path). The checks
are here rather than in ``rampart._checks`` so that module names no model type.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from rampart._checks import DRIVER, EVALUATOR, check_method

if TYPE_CHECKING:
    from rampart.core.driver import PromptDriver
    from rampart.core.types import EvalContext, EvalResult

__all__ = ["Evaluator", "check_driver", "check_evaluator"]


@runtime_checkable
class Evaluator(Protocol):
    """Polarity-free detector. Always async, so compositions with LLM judges work."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult: ...


def check_evaluator(owner: str, name: str, value: object) -> Evaluator:
    """``value`` when it is an evaluator instance (``evaluate_async`` is checked when called)."""
    return check_method(owner, name, value, "evaluate_async", expected=EVALUATOR)  # type: ignore[return-value]


def check_driver(owner: str, name: str, value: object) -> PromptDriver:
    """``value`` when it is a prompt driver instance (``next_prompt_async`` is checked when
    called)."""
    return check_method(owner, name, value, "next_prompt_async", expected=DRIVER)  # type: ignore[return-value]
