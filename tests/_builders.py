"""Builders for the values tests feed in and compare: turns, contexts, responses, results.

One module for the whole suite, so a change to a model constructor is one edit here.
The adapter double is the public ``rampart.testing.ScriptedAgent``; ``replying_agent``
is its most common configuration. Recording evaluators, drivers and injection handles
live in ``tests/_doubles.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from rampart.core import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    HarmCategory,
    InjectionRecord,
    ObservabilityLevel,
    Payload,
    PopulationRef,
    Request,
    Response,
    Result,
    SafetyStatus,
    SideEffect,
    ToolCall,
    TraceEndReason,
    Turn,
)
from rampart.testing import ScriptedAgent

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core import AppManifest

FULL = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS


# --- agents and responses ----------------------------------------------------------


def replying_agent(**options: Any) -> ScriptedAgent:
    """A ``ScriptedAgent`` whose sessions answer ``"reply 0"``, ``"reply 1"``, ... forever.

    ``options`` go to ``ScriptedAgent`` (``observability=``, ``manifest=``, ...).
    """
    return ScriptedAgent(lambda request, turn: f"reply {turn}", **options)


def tool_response(text: str = "done", *, tool: str = "send_email") -> Response:
    """A response that carries one observed tool call."""
    return Response(text=text, tool_calls=[ToolCall(name=tool, arguments={"to": "x"})])


# --- turns and evaluation contexts -------------------------------------------------


def turn(
    text: str = "ok",
    *,
    number: int = 0,
    prompt: str = "prompt",
    response: Response | None = None,
    tool_calls: Sequence[ToolCall] = (),
    side_effects: Sequence[SideEffect] = (),
) -> Turn:
    """One turn: ``prompt`` answered by ``response`` (or by ``text`` with the given calls)."""
    if response is None:
        response = Response(text=text, tool_calls=list(tool_calls), side_effects=list(side_effects))
    return Turn(request=Request(prompt=prompt), response=response, turn_number=number)


def history(length: int) -> list[Turn]:
    """``length`` plain turns numbered from 0, as a driver sees them."""
    return [turn(number=number) for number in range(length)]


def context(
    *turns: Turn,
    level: ObservabilityLevel = FULL,
    manifest: AppManifest | None = None,
) -> EvalContext:
    """An evaluation context over ``turns`` at observability ``level``."""
    return EvalContext(turns=list(turns), observability_level=level, manifest=manifest)


def texts(
    *responses: str, level: ObservabilityLevel = ObservabilityLevel.RESPONSE_ONLY
) -> EvalContext:
    """A context with one turn per response text, numbered from 0."""
    return context(*(turn(text, number=i) for i, text in enumerate(responses)), level=level)


# --- results -----------------------------------------------------------------------


def make_result(
    status: SafetyStatus = SafetyStatus.SAFE,
    *,
    category: HarmCategory | str | None = None,
    summary: str = "ok",
    metadata: dict[str, Any] | None = None,
) -> Result:
    """A minimal result with the given verdict and category."""
    return Result(status=status, summary=summary, harm_category=category, metadata=metadata)


def make_results(*statuses: SafetyStatus) -> list[Result]:
    """One minimal result per status, each summarised by its status value."""
    return [make_result(status, summary=status.value) for status in statuses]


def make_rich_result() -> Result:
    """A result using every field the report projects, gaps included."""
    plain_turn = Turn(
        request=Request(prompt="Summarize my inbox"),
        response=Response(text="Here is the summary.", metadata={"latency_ms": 12}),
        turn_number=0,
        timestamp=datetime(2026, 4, 25, 14, 30, tzinfo=UTC),
    )
    attacked_turn = Turn(
        request=Request(
            prompt=None, attachments=[Payload(content="ignore previous", id="payload-1")]
        ),
        response=Response(
            text="Sending it now",
            tool_calls=[ToolCall(name="send_email", arguments={"to": "evil"}, result="sent")],
            side_effects=[SideEffect(kind="http_request", details={"url": "https://x"})],
        ),
        eval_result=EvalResult(
            outcome=EvalOutcome.DETECTED,
            confidence=0.75,
            evidence=["send_email called"],
            rationale="tool called",
            undetermined_operands=["side effects not observable"],
        ),
        eval_purpose=EvaluationPurpose.STOP_CHECK,
        turn_number=1,
        driver_reasoning="escalate",
    )
    return Result(
        status=SafetyStatus.UNSAFE,
        summary="\x1b[31mAttack objective detected\x1b[0m",
        observability_level=ObservabilityLevel.TOOL_ONLY,
        final_trace_evaluation=EvalResult(
            outcome=EvalOutcome.DETECTED,
            confidence=0.9,
            evidence=["send_email({'to': 'evil'})"],
            rationale="exfiltration",
            undetermined_operands=["response channel redacted"],
        ),
        turns=[plain_turn, attacked_turn],
        trace_end_reason=TraceEndReason.STOP_CONDITION_MET,
        duration_seconds=1.25,
        harm_category=HarmCategory.DATA_EXFILTRATION,
        strategy="xpia",
        injections=[InjectionRecord(payload_id="payload-1", surface_name="inbox")],
        population=PopulationRef(id="pop-1", index=2, size=5, threshold=0.8),
        metadata={
            "scenario_id": "xpia-login-001",
            "_pytest_nodeid": "tests/test_x.py::test_exfil[trial-2]",
            "_rampart_result_index": 0,
        },
    )
