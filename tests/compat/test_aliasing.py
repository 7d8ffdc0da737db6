"""Aliasing that frozen models used to rule out, now that RAMPART's types are mutable.

Requests, responses and evaluations accept assignment, so one object shared by two
turns, two results or an evaluator's constant would let a change to one show up in the
other: a report redacting a prompt, an adapter reusing its reply object, an evaluator
returning a module-level result. Each test below pins one such path shut.
"""

from __future__ import annotations

from typing import Any

import pytest

from rampart import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    Request,
    Response,
    SafetyStatus,
    ToolCall,
    execute_trials_async,
)
from rampart.attacks import Attacks
from rampart.core.types import ObservabilityLevel
from rampart.evaluators import ResponseContains, ResponseScope, ToolCalled
from rampart.probes import Probes
from rampart.testing import ScriptedAgent

SHARED = EvalResult(outcome=EvalOutcome.NOT_DETECTED, evidence=["none seen"], rationale="fine")


class ReturnsConstant:
    """RAMPART-style evaluator that hands out one module-level result."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        return SHARED


class ReusedReply:
    """An adapter whose session mutates and returns one ``Response`` object every time."""

    observability_profile = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS
    manifest = None

    async def create_session_async(self) -> ReusedReply:
        self.reply = Response(text="")
        return self

    async def __aenter__(self) -> ReusedReply:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def send_async(self, request: Request) -> Response:
        if request.prompt == "first":
            self.reply.text = "sure, sending it"
            self.reply.tool_calls.append(ToolCall(name="send_email", arguments={"to": "evil"}))
        else:
            self.reply.text = "nothing to see"
            self.reply.tool_calls.clear()
        return self.reply


class UppercasingAgent(ScriptedAgent):
    """An adapter that rewrites the request it is given (in place)."""

    def __init__(self) -> None:
        super().__init__(lambda request, turn: "ok")

    async def create_session_async(self) -> Any:
        session = await super().create_session_async()
        original = session.send_async

        async def send_async(request: Request) -> Response:
            request.prompt = (request.prompt or "").upper()
            return await original(request)

        session.send_async = send_async
        return session


@pytest.mark.anyio
async def test_an_evaluators_shared_result_is_never_handed_out() -> None:
    """Results carry copies of what the evaluator returned: editing one result's
    evaluation changes neither the evaluator's constant nor the next result."""
    first = await Probes.behavior(prompt="p", evaluator=ReturnsConstant()).execute_async(
        adapter=ScriptedAgent(["a"])
    )
    assert first.final_trace_evaluation is not None
    assert first.final_trace_evaluation is not SHARED
    first.final_trace_evaluation.rationale = "edited by a report"
    first.final_trace_evaluation.evidence.append("added")
    second = await Probes.behavior(prompt="p", evaluator=ReturnsConstant()).execute_async(
        adapter=ScriptedAgent(["a"])
    )
    assert (SHARED.rationale, SHARED.evidence) == ("fine", ["none seen"])
    assert second.final_trace_evaluation is not None
    assert second.final_trace_evaluation.rationale == "fine"


@pytest.mark.anyio
async def test_an_adapter_reusing_its_reply_object_cannot_hide_a_detection() -> None:
    """Each turn keeps its own response: the tool call of turn 0 survives the adapter
    rewriting the same object for turn 1, so the attack is UNSAFE (not a false SAFE)."""
    result = await Attacks.xpia(
        trigger=["first", "second"], evaluator=ToolCalled("send_email"), stop_when=None
    ).execute_async(adapter=ReusedReply())
    assert result.status is SafetyStatus.UNSAFE, result.summary
    assert [turn.response.text for turn in result.turns] == ["sure, sending it", "nothing to see"]
    assert [len(turn.response.tool_calls) for turn in result.turns] == [1, 0]


@pytest.mark.anyio
async def test_a_trigger_request_is_not_shared_between_results() -> None:
    """The same ``Request`` object as the trigger of two executions: redacting one
    result's prompt changes neither the other result nor the next request sent."""
    trigger = Request(prompt="Summarise my inbox")
    agent = ScriptedAgent(lambda request, turn: f"read: {request.prompt}")
    evaluator = ResponseContains("password", scope=ResponseScope.ANY_TURN)
    first = await Attacks.xpia(trigger=trigger, evaluator=evaluator).execute_async(adapter=agent)
    first.turns[0].request.prompt = "[redacted]"
    second = await Attacks.xpia(trigger=trigger, evaluator=evaluator).execute_async(adapter=agent)
    assert trigger.prompt == "Summarise my inbox"
    assert second.turns[0].request.prompt == "Summarise my inbox"
    assert second.turns[0].response.text == "read: Summarise my inbox"


@pytest.mark.anyio
async def test_an_adapter_editing_its_request_does_not_edit_the_drivers() -> None:
    """The adapter gets the turn's own copy: its in-place edit is what the turn records,
    and the next execution still sends the original prompt."""
    trigger = Request(prompt="hello")
    agent = UppercasingAgent()
    evaluator = ResponseContains("ok", scope=ResponseScope.ANY_TURN)
    first = await Probes.behavior(prompt=trigger.prompt, evaluator=evaluator).execute_async(
        adapter=agent
    )
    execution = Attacks.xpia(trigger=trigger, evaluator=ToolCalled("x"))
    again = await execution.execute_async(adapter=agent)
    assert first.turns[0].request.prompt == "HELLO"
    assert again.turns[0].request.prompt == "HELLO"
    assert trigger.prompt == "hello"


@pytest.mark.anyio
async def test_trial_results_share_no_turns() -> None:
    """Concurrent trials of one scenario: editing one trial's turns leaves the others."""
    trigger = Request(prompt="go")
    population = await execute_trials_async(
        execution_factory=lambda: Attacks.xpia(trigger=trigger, evaluator=ToolCalled("x")),
        adapter=ScriptedAgent(lambda request, turn: "fine"),
        n=3,
        threshold=1.0,
    )
    first, *others = population.results
    first.turns[0].response.text = "tampered"
    first.turns[0].request.prompt = "tampered"
    first.turns.clear()
    assert [other.turns[0].response.text for other in others] == ["fine", "fine"]
    assert [other.turns[0].request.prompt for other in others] == ["go", "go"]


@pytest.mark.anyio
async def test_the_stop_check_annotation_and_the_final_evaluation_are_separate() -> None:
    """The reused stop check is a detached copy: editing the turn's annotation leaves the
    final evaluation (the verdict's evidence) alone, and the reuse still happens."""
    calls: list[int] = []

    class Once:
        async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
            calls.append(len(context.turns))
            return EvalResult(outcome=EvalOutcome.DETECTED, evidence=["sent"])

    judge = Once()
    result = await Attacks.xpia(trigger="go", evaluator=judge, stop_when=judge).execute_async(
        adapter=ScriptedAgent(["x"])
    )
    assert calls == [1]  # one stop check, reused as the final evaluation
    annotation = result.turns[0].eval_result
    assert annotation is not None
    annotation.evidence.append("edited")
    annotation.rationale = "edited"
    assert result.final_trace_evaluation is not None
    assert result.final_trace_evaluation.evidence == ["sent"]
    assert result.final_trace_evaluation.rationale == ""
