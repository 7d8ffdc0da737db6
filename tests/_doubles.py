"""Recording doubles for the parts a test does not exercise: evaluators, drivers, handles.

They record what the engine did to them (contexts evaluated, histories shown,
activations and removals), so tests assert behaviour and ordering rather than timing.
The adapter double is the public ``rampart.testing.ScriptedAgent`` (with its
``statistics()``); value builders are in ``tests/_builders.py``. Doubles that break a
contract on purpose stay next to the test that needs them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import anyio.lowlevel

from rampart.core.driver import PromptDecision
from rampart.core.types import EvalContext, EvalOutcome, EvalResult, Request, Turn

Outcomes = Sequence[EvalOutcome | EvalResult | BaseException]


class FakeEvaluator:
    """Answers from ``outcomes`` in call order (the last repeats); records each context.

    An outcome is an ``EvalOutcome`` (completed with ``result`` keyword fields), a whole
    ``EvalResult``, or an exception to raise. ``on_evaluate``, when set, is called at
    the start of every evaluation (to look at the rest of the system then).
    """

    def __init__(self, outcomes: Outcomes = (EvalOutcome.NOT_DETECTED,), **result: Any) -> None:
        self._outcomes = list(outcomes)
        self._result = result
        self.contexts: list[EvalContext] = []
        self.on_evaluate: Callable[[], None] | None = None

    @property
    def calls(self) -> int:
        return len(self.contexts)

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        self.contexts.append(context)
        if self.on_evaluate is not None:
            self.on_evaluate()
        spec = self._outcomes[min(len(self.contexts) - 1, len(self._outcomes) - 1)]
        if isinstance(spec, BaseException):
            raise spec
        if isinstance(spec, EvalResult):
            return spec
        return EvalResult(outcome=spec, **self._result)


class DetectOnText(FakeEvaluator):
    """DETECTED once any response so far contains ``needle``, else NOT_DETECTED."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self._needle = needle

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        self.contexts.append(context)
        if any(self._needle in turn.response.text for turn in context.turns):
            return EvalResult(outcome=EvalOutcome.DETECTED, evidence=[f"saw {self._needle}"])
        return EvalResult(outcome=EvalOutcome.NOT_DETECTED, rationale="not seen")


class RecordingDriver:
    """Sends ``prompts`` in order; records the history it was shown on every call."""

    def __init__(self, prompts: Sequence[str]) -> None:
        self._prompts = list(prompts)
        self.histories: list[list[Turn]] = []

    @property
    def calls(self) -> int:
        return len(self.histories)

    async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None:
        self.histories.append(list(history))
        if len(history) >= len(self._prompts):
            return None
        return PromptDecision(request=Request(prompt=self._prompts[len(history)]), reasoning="r")


class FakeHandle:
    """An injection handle counting activations and removals.

    ``fail_enter`` / ``fail_exit`` raise on activation / removal; ``enter_gate`` makes
    activation wait on a coroutine; ``exit_checkpoint`` makes removal await (so it only
    completes under cancellation when shielded). ``on_exit`` is called at the start of
    every removal (to look at the rest of the system then). Lifecycle steps go to
    ``log`` (``enter-start-<name>``, ``enter-done-<name>``, ``exit-<name>``).
    """

    def __init__(
        self,
        name: str = "h",
        *,
        fail_enter: BaseException | None = None,
        fail_exit: BaseException | None = None,
        enter_gate: Callable[[], Awaitable[None]] | None = None,
        exit_checkpoint: bool = False,
        on_exit: Callable[[], None] | None = None,
        log: list[str] | None = None,
    ) -> None:
        self.payload_id: str | None = f"payload-{name}"
        self.surface_name = f"surface-{name}"
        self.name = name
        self.activated = 0
        self.removed = 0
        self.exit_info: tuple[object, ...] | None = None
        self._fail_enter = fail_enter
        self._fail_exit = fail_exit
        self._enter_gate = enter_gate
        self._exit_checkpoint = exit_checkpoint
        self._on_exit = on_exit
        self.log = log if log is not None else []

    async def __aenter__(self) -> FakeHandle:
        self.log.append(f"enter-start-{self.name}")
        if self._enter_gate is not None:
            await self._enter_gate()
        if self._fail_enter is not None:
            raise self._fail_enter
        self.activated += 1
        self.log.append(f"enter-done-{self.name}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.exit_info = exc_info
        if self._on_exit is not None:
            self._on_exit()
        if self._exit_checkpoint:
            await anyio.lowlevel.checkpoint()
        self.removed += 1
        self.log.append(f"exit-{self.name}")
        if self._fail_exit is not None:
            raise self._fail_exit


class Barrier:
    """Each caller waits until ``parties`` callers have arrived (proves concurrency)."""

    def __init__(self, parties: int) -> None:
        self._parties = parties
        self._arrived = 0
        self._event = anyio.Event()

    async def wait(self) -> None:
        self._arrived += 1
        if self._arrived >= self._parties:
            self._event.set()
        await self._event.wait()
