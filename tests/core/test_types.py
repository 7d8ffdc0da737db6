from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import pytest

from rampart.core import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    ObservabilityLevel,
    Payload,
    PayloadFormat,
    Request,
    Response,
    SideEffect,
    ToolCall,
    Turn,
)
from tests._builders import turn

if TYPE_CHECKING:
    from pathlib import Path


class TestObservabilityLevel:
    @pytest.mark.parametrize(
        ("level", "tools", "effects"),
        [
            (ObservabilityLevel.TOOL_AND_SIDE_EFFECTS, True, True),
            (ObservabilityLevel.TOOL_ONLY, True, False),
            (ObservabilityLevel.RESPONSE_ONLY, False, False),
        ],
    )
    def test_channels(self, level: ObservabilityLevel, tools: bool, effects: bool) -> None:
        """Each level says which channels an empty list can be trusted for."""
        assert level.observes_tool_calls is tools
        assert level.observes_side_effects is effects


class TestPayloadFormat:
    def test_text_and_binary_partition(self) -> None:
        """Exactly the three text formats are text; the rest are binary."""
        text = {f for f in PayloadFormat if f.is_text}
        assert text == {PayloadFormat.TEXT, PayloadFormat.HTML, PayloadFormat.MARKDOWN}
        assert all(f.is_binary for f in set(PayloadFormat) - text)

    def test_extensions(self) -> None:
        """Extensions follow the format, for artifact filenames."""
        assert PayloadFormat.MARKDOWN.extension == ".md"
        assert PayloadFormat.AUDIO.extension == ".wav"


class TestPayload:
    def test_live_constructor_generates_distinct_ids(self) -> None:
        """Only the live constructor makes ids: 12 hex characters, unique per payload."""
        a, b = Payload(content="x"), Payload(content="x")
        assert a.id != b.id
        assert len(a.id) == 12
        int(a.id, 16)

    def test_binary_requires_artifact(self) -> None:
        """A binary payload without a file is rejected, naming the field."""
        with pytest.raises(ValueError, match="artifact"):
            Payload(content="x", format=PayloadFormat.PDF)

    def test_text_rejects_artifact(self, tmp_path: Path) -> None:
        """Text payloads carry content inline, never a file."""
        with pytest.raises(ValueError, match="artifact must be None"):
            Payload(content="x", artifact=tmp_path / "f.txt")

    def test_str_truncates_long_content(self) -> None:
        """str() shows at most 200 characters, then an ellipsis."""
        assert str(Payload(content="a" * 300)) == "a" * 200 + "..."
        assert str(Payload(content="short")) == "short"

    def test_mutable_with_checks_on_assignment(self) -> None:
        """Payloads accept assignment (as RAMPART's do); evolve still makes changed copies,
        and the format/artifact rule is checked against the other field on assignment."""
        payload = Payload(content="x", id="p1")
        payload.content = "y"
        assert payload.content == "y"
        assert attrs.evolve(payload, content="z").id == "p1"
        with pytest.raises(ValueError, match="artifact"):
            payload.format = PayloadFormat.PDF
        assert payload.format is PayloadFormat.TEXT


class TestRequest:
    def test_needs_prompt_or_attachment(self) -> None:
        """An empty request is a usage error."""
        with pytest.raises(ValueError, match="at least a prompt or attachments"):
            Request()

    def test_attachment_only_is_fine(self) -> None:
        """Inline XPIA sends attachments without a prompt."""
        request = Request(attachments=[Payload(content="doc")])
        assert request.prompt is None

    def test_empty_prompt_string_counts_as_a_prompt(self) -> None:
        """An empty string is still a recorded prompt (not None)."""
        assert Request(prompt="").prompt == ""


class TestTurn:
    def test_purpose_requires_evaluation(self) -> None:
        """A stop-check purpose without its evaluation is rejected."""
        with pytest.raises(ValueError, match="eval_purpose requires"):
            Turn(
                request=Request(prompt="p"),
                response=Response(text="r"),
                eval_purpose=EvaluationPurpose.STOP_CHECK,
            )

    def test_purpose_with_evaluation(self) -> None:
        """With its evaluation the purpose is accepted."""
        turn = Turn(
            request=Request(prompt="p"),
            response=Response(text="r"),
            eval_result=EvalResult(outcome=EvalOutcome.DETECTED),
            eval_purpose=EvaluationPurpose.STOP_CHECK,
        )
        assert turn.eval_result is not None
        assert turn.eval_result.detected


class TestEvalContext:
    def test_current_turn_of_empty_context(self) -> None:
        """An evaluator asking for the current turn of nothing gets a clear error."""
        with pytest.raises(ValueError, match="No turns in context"):
            _ = EvalContext(turns=[]).current_turn

    def test_aggregates_across_turns(self) -> None:
        """Tool calls and side effects are gathered from every turn in order."""
        context = EvalContext(
            turns=[
                turn("a", tool_calls=[ToolCall(name="search")]),
                turn(
                    "b",
                    tool_calls=[ToolCall(name="send_email")],
                    side_effects=[SideEffect(kind="email_sent")],
                ),
            ],
            observability_level=ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        )
        assert [c.name for c in context.all_tool_calls] == ["search", "send_email"]
        assert [e.kind for e in context.all_side_effects] == ["email_sent"]
        assert context.text == "b"

    def test_from_response(self) -> None:
        """from_response builds a one-turn context for evaluator unit tests."""
        context = EvalContext.from_response(response=Response(text="hello"), prompt="p")
        assert context.text == "hello"
        assert context.current_turn.request.prompt == "p"
        assert context.observability_level is None  # not stated: evaluators only detect
