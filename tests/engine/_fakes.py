"""Small private fakes for the engine tests: adapters, sessions, evaluators, handles.

They record what the engine did to them (requests received, sessions opened and
closed, activations and removals, evaluator calls), so tests can assert behaviour
and ordering rather than timing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from rampart.core.driver import PromptDecision
from rampart.core.types import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    ObservabilityLevel,
    Request,
    Response,
    ToolCall,
    Turn,
)

if TYPE_CHECKING:
    from rampart.core.manifest import AppManifest

ResponseSpec = Response | BaseException | Callable[[Request], Awaitable[Response]]


class FakeSession:
    """Replays ``responses`` in order (cycling the last one); records every request."""

    def __init__(self, adapter: FakeAdapter) -> None:
        self._adapter = adapter
        self.requests: list[Request] = []
        self.entered = 0
        self.exited = 0

    async def __aenter__(self) -> FakeSession:
        self.entered += 1
        self._adapter.log.append("session-enter")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.exited += 1
        self._adapter.log.append("session-exit")
        if self._adapter.exit_checkpoint:
            # A close that awaits: only completes under cancellation when shielded.
            await anyio.lowlevel.checkpoint()
            self._adapter.log.append("session-exit-completed")

    async def send_async(self, request: Request) -> Response:
        self.requests.append(request)
        self._adapter.log.append(f"send-{len(self.requests) - 1}")
        script = self._adapter.responses
        spec = script[min(len(self.requests) - 1, len(script) - 1)] if script else None
        if spec is None:
            return Response(text=f"reply {len(self.requests) - 1}")
        if isinstance(spec, BaseException):
            raise spec
        if isinstance(spec, Response):
            return spec
        return await spec(request)


class FakeAdapter:
    """An adapter whose sessions replay ``responses``; ``log`` records lifecycle steps."""

    def __init__(
        self,
        responses: Sequence[ResponseSpec] = (),
        *,
        level: ObservabilityLevel = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        manifest: AppManifest | None = None,
        exit_checkpoint: bool = False,
    ) -> None:
        self.responses = list(responses)
        self._level = level
        self._manifest = manifest
        self.exit_checkpoint = exit_checkpoint
        self.sessions: list[FakeSession] = []
        self.log: list[str] = []

    @property
    def manifest(self) -> AppManifest | None:
        return self._manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return self._level

    async def create_session_async(self) -> FakeSession:
        session = FakeSession(self)
        self.sessions.append(session)
        return session

    @property
    def requests(self) -> list[Request]:
        return [request for session in self.sessions for request in session.requests]


Outcomes = Sequence[EvalOutcome | EvalResult | BaseException]


class FakeEvaluator:
    """Answers from ``outcomes`` in call order (the last repeats); records each context."""

    def __init__(self, outcomes: Outcomes = (EvalOutcome.NOT_DETECTED,), **result: Any) -> None:
        self._outcomes = list(outcomes)
        self._result = result
        self.contexts: list[EvalContext] = []
        self.log: list[str] | None = None

    @property
    def calls(self) -> int:
        return len(self.contexts)

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        self.contexts.append(context)
        if self.log is not None:
            self.log.append(f"evaluate-{len(context.turns)}")
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


class AbsorbingEvaluator(FakeEvaluator):
    """A fake that ``detected_is_absorbing`` treats as a framework evaluator."""

    _detected_absorbing = True


# ``detected_is_absorbing`` trusts only classes defined under ``rampart.evaluators``.
AbsorbingEvaluator.__module__ = "rampart.evaluators._engine_test_fake"


class RecordingDriver:
    """Sends ``prompts`` in order; records the history it was shown on every call."""

    def __init__(self, prompts: Sequence[str], *, log: list[str] | None = None) -> None:
        self._prompts = list(prompts)
        self.histories: list[list[Turn]] = []
        self.log = log

    @property
    def calls(self) -> int:
        return len(self.histories)

    async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None:
        self.histories.append(list(history))
        if self.log is not None:
            self.log.append(f"driver-{len(history)}")
        if len(history) >= len(self._prompts):
            return None
        return PromptDecision(request=Request(prompt=self._prompts[len(history)]), reasoning="r")


class FakeHandle:
    """An injection handle counting activations and removals.

    ``fail_enter`` / ``fail_exit`` raise on activation / removal; ``enter_gate`` makes
    activation wait on an event; ``ready`` is an optional readiness coroutine.
    """

    def __init__(
        self,
        name: str = "h",
        *,
        fail_enter: BaseException | None = None,
        fail_exit: BaseException | None = None,
        enter_gate: Callable[[], Awaitable[None]] | None = None,
        exit_checkpoint: bool = False,
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


def tool_response(text: str = "done", *, tool: str = "send_email") -> Response:
    """A response that carries one observed tool call."""
    return Response(text=text, tool_calls=[ToolCall(name=tool, arguments={"to": "x"})])
