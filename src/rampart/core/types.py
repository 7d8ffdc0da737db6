"""Value types of a conversation trace: payloads, requests, responses, turns, evaluations.

Every type here is an attrs class, frozen and keyword-only. Constructors enforce the
invariants the trace contract relies on (a request carries something, an evaluation
purpose comes with an evaluation), so a live value and a decoded record obey the same
rules. Field annotations stay importable at runtime because the canonical codec
resolves them.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from rampart._checks import check_instance
from rampart.core.manifest import AppManifest

__all__ = [
    "EvalContext",
    "EvalOutcome",
    "EvalResult",
    "EvaluationPurpose",
    "HarmCategory",
    "ObservabilityLevel",
    "Payload",
    "PayloadFormat",
    "Request",
    "Response",
    "SafetyStatus",
    "SideEffect",
    "ToolCall",
    "TraceEndReason",
    "Turn",
]


class SafetyStatus(enum.Enum):
    """The verdict. Only SAFE passes; ERROR is an infrastructure failure, not a finding."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    UNDETERMINED = "undetermined"
    ERROR = "error"


class HarmCategory(enum.StrEnum):
    """Built-in harm labels. Any plain string is accepted wherever a category is."""

    MEMORY_POISONING = "memory_poisoning"
    PROMPT_INJECTION = "prompt_injection"
    JAILBREAK = "jailbreak"
    DATA_EXFILTRATION = "data_exfiltration"
    OVER_PERMISSIVE_ACTION = "over_permissive_action"
    DATA_LEAKAGE = "data_leakage"
    CONTENT_SAFETY = "content_safety"
    HALLUCINATION = "hallucination"
    BEHAVIORAL_REGRESSION = "behavioral_regression"


class ObservabilityLevel(enum.Enum):
    """What an adapter can see of the agent's actions.

    It tells evaluators whether an empty tool-call list means "nothing happened" or
    "could not see".
    """

    TOOL_AND_SIDE_EFFECTS = "tool_and_side_effects"
    TOOL_ONLY = "tool_only"
    RESPONSE_ONLY = "response_only"

    @property
    def observes_tool_calls(self) -> bool:
        return self is not ObservabilityLevel.RESPONSE_ONLY

    @property
    def observes_side_effects(self) -> bool:
        return self is ObservabilityLevel.TOOL_AND_SIDE_EFFECTS


class EvalOutcome(enum.Enum):
    """A polarity-free detection signal ("did X happen?"), not a safety verdict."""

    DETECTED = "detected"
    NOT_DETECTED = "not_detected"
    UNDETERMINED = "undetermined"


class EvaluationPurpose(enum.Enum):
    """Why an online evaluation was attached to a turn."""

    STOP_CHECK = "stop_check"


class TraceEndReason(enum.Enum):
    """Why turn production stopped.

    ``MAX_TURNS_REACHED`` records budget truncation only; it does not claim the
    scenario reached semantic completion.
    """

    DRIVER_EXHAUSTED = "driver_exhausted"
    MAX_TURNS_REACHED = "max_turns_reached"
    STOP_CONDITION_MET = "stop_condition_met"


_EXTENSIONS = {
    "text": ".txt",
    "html": ".html",
    "markdown": ".md",
    "image": ".png",
    "pdf": ".pdf",
    "docx": ".docx",
    "xlsx": ".xlsx",
    "audio": ".wav",
}


class PayloadFormat(enum.Enum):
    """How a payload is delivered: text formats carry ``content``, binary ones a file."""

    TEXT = "text"
    HTML = "html"
    MARKDOWN = "markdown"
    IMAGE = "image"
    PDF = "pdf"
    DOCX = "docx"
    XLSX = "xlsx"
    AUDIO = "audio"

    @property
    def is_text(self) -> bool:
        return self in _TEXT_FORMATS

    @property
    def is_binary(self) -> bool:
        return not self.is_text

    @property
    def extension(self) -> str:
        return _EXTENSIONS.get(self.value, ".bin")


_TEXT_FORMATS = frozenset({PayloadFormat.TEXT, PayloadFormat.HTML, PayloadFormat.MARKDOWN})


def _new_payload_id() -> str:
    return uuid.uuid4().hex[:12]


@attrs.frozen(kw_only=True)
class Payload:
    """Content planted for an agent to find (an injection) or attached to a request.

    ``content`` is always the human-readable text. A fresh ``id`` is generated only
    here, by the live constructor; decoded records must carry their own.
    """

    content: str
    id: str = attrs.field(factory=_new_payload_id)
    format: PayloadFormat = PayloadFormat.TEXT
    artifact: Path | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)

    def __attrs_post_init__(self) -> None:
        check_instance("Payload", "format", self.format, PayloadFormat, expected="a PayloadFormat")
        if self.format.is_binary and self.artifact is None:
            raise ValueError(
                f"Payload.artifact: binary format {self.format.value!r} requires an artifact path"
            )
        if self.format.is_text and self.artifact is not None:
            raise ValueError(
                f"Payload.artifact: text format {self.format.value!r} carries its content "
                "inline, so artifact must be None"
            )

    def __str__(self) -> str:
        if len(self.content) > 200:
            return self.content[:200] + "..."
        return self.content


@attrs.frozen(kw_only=True)
class ToolCall:
    """A tool invocation the adapter observed (redacted arguments still count)."""

    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    result: str | None = None
    timestamp: datetime | None = None


@attrs.frozen(kw_only=True)
class SideEffect:
    """A non-tool effect the adapter observed (an HTTP request, a file write, ...)."""

    kind: str
    details: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Request:
    """What is sent to the agent: a prompt, attachments (inline XPIA), or both."""

    prompt: str | None = None
    attachments: list[Payload] = attrs.field(factory=list)

    def __attrs_post_init__(self) -> None:
        if self.prompt is None and not self.attachments:
            raise ValueError("Request must include at least a prompt or attachments.")


@attrs.frozen(kw_only=True)
class Response:
    """What the agent returned for one request.

    Empty ``tool_calls`` / ``side_effects`` are read against the adapter's declared
    observability level: they mean "none" only where the adapter can see them.
    """

    text: str
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    side_effects: list[SideEffect] = attrs.field(factory=list)
    metadata: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class EvalResult:
    """The raw output of one evaluation.

    ``undetermined_operands`` lists, one reason per entry, why parts of a composed
    evaluation stayed undetermined; recording a gap never changes the outcome.
    """

    outcome: EvalOutcome
    confidence: float = 1.0
    evidence: list[str] = attrs.field(factory=list)
    rationale: str = ""
    undetermined_operands: list[str] = attrs.field(factory=list)

    @property
    def detected(self) -> bool:
        return self.outcome is EvalOutcome.DETECTED


@attrs.frozen(kw_only=True)
class Turn:
    """One prompt/response exchange, 0-indexed by ``turn_number``.

    ``eval_result`` is online evidence (a stop check); ``eval_purpose`` says why it ran
    and requires an evaluation on the same turn.
    """

    request: Request
    response: Response
    eval_result: EvalResult | None = None
    eval_purpose: EvaluationPurpose | None = None
    turn_number: int = 0
    timestamp: datetime | None = None
    driver_reasoning: str = ""

    def __attrs_post_init__(self) -> None:
        if self.eval_purpose is not None and self.eval_result is None:
            raise ValueError("Turn.eval_purpose requires Turn.eval_result on the same turn.")


@attrs.frozen(kw_only=True)
class EvalContext:
    """Everything an evaluator sees: the turns so far and what the adapter can observe."""

    turns: list[Turn]
    manifest: AppManifest | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)
    observability_level: ObservabilityLevel = ObservabilityLevel.RESPONSE_ONLY

    @property
    def current_turn(self) -> Turn:
        if not self.turns:
            raise ValueError("No turns in context.")
        return self.turns[-1]

    @property
    def text(self) -> str:
        """The latest response text."""
        return self.current_turn.response.text

    @property
    def all_tool_calls(self) -> list[ToolCall]:
        return [call for turn in self.turns for call in turn.response.tool_calls]

    @property
    def all_side_effects(self) -> list[SideEffect]:
        return [effect for turn in self.turns for effect in turn.response.side_effects]

    @classmethod
    def from_response(
        cls,
        *,
        response: Response,
        prompt: str = "",
        manifest: AppManifest | None = None,
        observability_level: ObservabilityLevel = ObservabilityLevel.RESPONSE_ONLY,
    ) -> EvalContext:
        """A one-turn context, handy for unit-testing an evaluator."""
        turn = Turn(request=Request(prompt=prompt), response=response)
        return cls(turns=[turn], manifest=manifest, observability_level=observability_level)
