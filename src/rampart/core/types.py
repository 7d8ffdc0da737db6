"""Value types of a conversation trace: payloads, requests, responses, turns, evaluations.

Every type here is a keyword-only attrs class that also works with ``dataclasses``
(``replace``, ``fields``, ``asdict``; see ``rampart.core._dataclass``). Mutability
follows RAMPART's dataclasses: ``Turn`` is frozen; ``Payload``, ``ToolCall``,
``SideEffect``, ``Request``, ``Response``, ``EvalResult`` and ``EvalContext`` accept
attribute assignment. Validators enforce the invariants the trace contract relies on
(a request carries something, a binary payload has a file, an evaluation purpose comes
with an evaluation) at construction and again on every assignment, each against the
current values of the other fields; to change two linked fields at once, make a copy
with ``dataclasses.replace``. Field annotations stay importable at runtime because the
canonical codec resolves them.
"""

from __future__ import annotations

import enum
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import attrs

from rampart._checks import check_instance, invalid
from rampart.core._dataclass import dataclass_compatible
from rampart.core.manifest import AppManifest

__all__ = [
    "EvalContext",
    "EvalOutcome",
    "EvalResult",
    "EvaluationPurpose",
    "HarmCategory",
    "ObservabilityLevel",
    "Payload",
    "PayloadError",
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


class PayloadError(TypeError, ValueError):
    """A payload's ``format`` and ``artifact`` disagree.

    Both a ``TypeError`` (what RAMPART raises) and a ``ValueError`` (what rampart raised
    before), so code written for either catches it.
    """


def _check_delivery(format: object, artifact: object) -> None:
    """A binary format needs an artifact file; a text format carries no artifact."""
    format = check_instance("Payload", "format", format, PayloadFormat, expected="a PayloadFormat")
    if format.is_binary and artifact is None:
        raise invalid(
            "Payload",
            "artifact",
            f"a path for a binary format (Binary format {format.value} requires an artifact "
            "path. Provide artifact=Path(...) or use a converter to render the payload.)",
            artifact,
            error=PayloadError,
        )
    if format.is_text and artifact is not None:
        raise invalid(
            "Payload",
            "artifact",
            f"None for a text format (Text format {format.value} delivers content "
            "directly — artifact must be None.)",
            artifact,
            error=PayloadError,
        )


def _validate_format(instance: Payload, _attribute: object, value: Any) -> None:
    _check_delivery(value, instance.artifact)


def _validate_artifact(instance: Payload, _attribute: object, value: Any) -> None:
    _check_delivery(instance.format, value)


@dataclass_compatible
@attrs.define(kw_only=True)
class Payload:
    """Content planted for an agent to find (an injection) or attached to a request.

    ``content`` is always the human-readable text. A fresh ``id`` is generated only
    here, by the live constructor; decoded records must carry their own. A binary
    ``format`` needs an ``artifact`` path and a text one must have none
    (``PayloadError``, both a ``TypeError`` and a ``ValueError``).
    """

    content: str
    id: str = attrs.field(factory=_new_payload_id)
    format: PayloadFormat = attrs.field(default=PayloadFormat.TEXT, validator=_validate_format)
    artifact: Path | None = attrs.field(default=None, validator=_validate_artifact)
    metadata: dict[str, Any] = attrs.field(factory=dict)

    def __str__(self) -> str:
        if len(self.content) > 200:
            return self.content[:200] + "..."
        return self.content


@dataclass_compatible
@attrs.define(kw_only=True)
class ToolCall:
    """A tool invocation the adapter observed (redacted arguments still count)."""

    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)
    result: str | None = None
    timestamp: datetime | None = None


@dataclass_compatible
@attrs.define(kw_only=True)
class SideEffect:
    """A non-tool effect the adapter observed (an HTTP request, a file write, ...)."""

    kind: str
    details: dict[str, Any] = attrs.field(factory=dict)


_EMPTY_REQUEST = "Request must include at least a prompt or attachments."


def _validate_prompt(instance: Request, _attribute: object, value: Any) -> None:
    if value is None and not instance.attachments:
        raise ValueError(_EMPTY_REQUEST)


def _validate_attachments(instance: Request, _attribute: object, value: Any) -> None:
    if instance.prompt is None and not value:
        raise ValueError(_EMPTY_REQUEST)


@dataclass_compatible
@attrs.define(kw_only=True)
class Request:
    """What is sent to the agent: a prompt, attachments (inline XPIA), or both."""

    prompt: str | None = attrs.field(default=None, validator=_validate_prompt)
    attachments: list[Payload] = attrs.field(factory=list, validator=_validate_attachments)


@dataclass_compatible
@attrs.define(kw_only=True)
class Response:
    """What the agent returned for one request.

    Empty ``tool_calls`` / ``side_effects`` are read against the adapter's declared
    observability level: they mean "none" only where the adapter can see them.
    """

    text: str
    tool_calls: list[ToolCall] = attrs.field(factory=list)
    side_effects: list[SideEffect] = attrs.field(factory=list)
    metadata: dict[str, Any] = attrs.field(factory=dict)


@dataclass_compatible
@attrs.define(kw_only=True)
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


@dataclass_compatible
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


@dataclass_compatible
@attrs.define(kw_only=True)
class EvalContext:
    """Everything an evaluator sees: the turns so far and what the adapter can observe.

    ``observability_level`` is None ("not stated") unless an execution states the
    adapter's level: evaluators then only detect (a missing tool call or side effect
    is NOT_DETECTED), as RAMPART's, whose context has no level. With a stated level an
    evaluator that looks for what the adapter cannot report says UNDETERMINED.
    """

    turns: list[Turn]
    manifest: AppManifest | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)
    observability_level: ObservabilityLevel | None = None

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
        observability_level: ObservabilityLevel | None = None,
    ) -> EvalContext:
        """A one-turn context, handy for unit-testing an evaluator."""
        turn = Turn(request=Request(prompt=prompt), response=response)
        return cls(turns=[turn], manifest=manifest, observability_level=observability_level)
