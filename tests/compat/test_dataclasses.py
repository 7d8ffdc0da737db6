"""The model types as RAMPART's dataclasses: ``dataclasses`` functions, mutability, errors.

Written the way code for RAMPART uses them: ``dataclasses.replace(turn, eval_result=...)``,
``dataclasses.fields``/``asdict``/``astuple``/``is_dataclass``, attribute assignment on
the mutable types, ``except dataclasses.FrozenInstanceError`` on the frozen ones.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pickle
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from rampart import (
    AppManifest,
    DataSource,
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluationPurpose,
    HarmCategory,
    InjectionRecord,
    LLMConfig,
    ObservabilityLevel,
    Payload,
    PayloadFormat,
    Persona,
    PopulationRef,
    PopulationResult,
    PromptDecision,
    Request,
    Response,
    Result,
    SafetyStatus,
    SideEffect,
    ToolCall,
    ToolDeclaration,
    TraceEndReason,
    Turn,
)
from rampart.codec import ResultRecord
from rampart.core.errors import FrozenInstanceError
from rampart.core.execution import ExecutionEvent, ExecutionEventData
from rampart.core.trace import EvaluationRecord, TraceRun
from rampart.payloads import PayloadTemplate
from rampart.reporting.sink import PopulationSummary, TestRunReport

if TYPE_CHECKING:
    from pathlib import Path

STAMP = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def _turn(number: int = 0, *, evaluated: bool = False) -> Turn:
    evaluation = EvalResult(outcome=EvalOutcome.DETECTED, evidence=["e"]) if evaluated else None
    return Turn(
        request=Request(prompt=f"prompt {number}"),
        response=Response(
            text=f"reply {number}",
            tool_calls=[ToolCall(name="send_email", arguments={"to": "x"}, timestamp=STAMP)],
            side_effects=[SideEffect(kind="http_request", details={"url": "u"})],
            metadata={"n": number},
        ),
        eval_result=evaluation,
        eval_purpose=EvaluationPurpose.STOP_CHECK if evaluated else None,
        turn_number=number,
        timestamp=STAMP,
    )


def _result() -> Result:
    return Result(
        status=SafetyStatus.UNSAFE,
        summary="Attack objective detected",
        observability_level=ObservabilityLevel.TOOL_ONLY,
        final_trace_evaluation=EvalResult(outcome=EvalOutcome.DETECTED, rationale="sent"),
        turns=[_turn(0), _turn(1, evaluated=True)],
        trace_end_reason=TraceEndReason.STOP_CONDITION_MET,
        harm_category=HarmCategory.DATA_EXFILTRATION,
        strategy="xpia",
        injections=[InjectionRecord(payload_id="p-1", surface_name="Mail")],
        population=PopulationRef(id="pop", index=0, size=2, threshold=0.5),
        metadata={"k": [1, 2]},
    )


class _Adapter:
    """A stand-in adapter (plain data, so ``asdict`` can deep-copy it)."""

    observability_profile = ObservabilityLevel.RESPONSE_ONLY


# (class, an instance, frozen?, RAMPART's field names in order)
MODELS: list[tuple[type, Any, bool, str]] = [
    (Payload, Payload(content="c", id="p-1"), False, "content id format artifact metadata"),
    (ToolCall, ToolCall(name="t"), False, "name arguments result timestamp"),
    (SideEffect, SideEffect(kind="k"), False, "kind details"),
    (Request, Request(prompt="p"), False, "prompt attachments"),
    (Response, Response(text="t"), False, "text tool_calls side_effects metadata"),
    (
        EvalResult,
        EvalResult(outcome=EvalOutcome.NOT_DETECTED),
        False,
        "outcome confidence evidence rationale undetermined_operands",
    ),
    (
        Turn,
        _turn(),
        True,
        "request response eval_result eval_purpose turn_number timestamp driver_reasoning",
    ),
    (
        EvalContext,
        EvalContext(turns=[_turn()]),
        False,
        "turns manifest metadata observability_level",
    ),
    (
        InjectionRecord,
        InjectionRecord(payload_id=None, surface_name="s"),
        False,
        "payload_id surface_name delivered",  # delivered: a rampart addition
    ),
    (
        Result,
        _result(),
        False,
        "status summary observability_level final_trace_evaluation turns trace_end_reason "
        "duration_seconds harm_category strategy injections population metadata",
    ),
    (
        PopulationRef,
        PopulationRef(id="a", index=0, size=1, threshold=1),
        True,
        # RAMPART's four fields first, in its order; then rampart's optional facts a
        # saved verdict is rebuilt from (keyword-only, defaulting to "not recorded").
        "id index size threshold confidence sequential max_unsafe outcome executed no_result",
    ),
    (
        PopulationResult,
        PopulationResult(results=[], threshold=1.0),
        False,
        # confidence .. uncounted: the opt-in verdict extensions (docs/trials.md);
        # concurrency: what concurrency="auto" did
        "results threshold population_id cancelled_count confidence sequential max_unsafe "
        "uncounted concurrency",
    ),
    (ToolDeclaration, ToolDeclaration(name="t"), False, "name description parameters permissions"),
    (DataSource, DataSource(name="d"), False, "name type writable_by_untrusted"),
    (AppManifest, AppManifest(name="a"), False, "name tools data_sources description metadata"),
    (Persona, Persona(name="p"), False, "name description system_prompt"),
    (
        LLMConfig,
        LLMConfig(model="m", endpoint="http://localhost:1/v1"),
        True,
        "model endpoint api_key deployment metadata",
    ),
    (PromptDecision, PromptDecision(request=Request(prompt="p")), False, "request reasoning"),
    (
        PayloadTemplate,
        PayloadTemplate(name="t", objective="o", instruction="i"),
        False,
        "name description objective instruction variables",
    ),
    (
        ExecutionEventData,
        ExecutionEventData(event=ExecutionEvent.ON_PRE_EXECUTE, adapter=_Adapter()),
        False,
        "event adapter result error elapsed_seconds",
    ),
    (
        TraceRun,
        TraceRun(
            trace_end_reason=TraceEndReason.DRIVER_EXHAUSTED,
            observability_level=ObservabilityLevel.RESPONSE_ONLY,
        ),
        False,
        "trace_end_reason observability_level manifest turns raw_turns latest_stop_check "
        "final_trace_evaluation",
    ),
    (
        EvaluationRecord,
        EvaluationRecord(
            evaluator=object(),  # type: ignore[arg-type]
            context=EvalContext(turns=[]),
            result=EvalResult(outcome=EvalOutcome.DETECTED),
        ),
        True,
        "evaluator context result",
    ),
    (
        PopulationSummary,
        TestRunReport(results=[_result()]).population_summary(),
        True,
        "total_runs safe_count unsafe_count undetermined_count error_count "
        "attack_success_rate safety_pass_rate",
    ),
    (
        TestRunReport,
        TestRunReport(results=[_result()]),
        True,
        # RAMPART's fields, then rampart's additive report sections.
        "results total_runs passed failed undetermined errors duration_seconds metadata "
        "trial_groups run no_result risk_map",
    ),
    (ResultRecord, ResultRecord(result=_result()), True, "result pytest_nodeid result_index"),
]
IDS = [cls.__name__ for cls, *_ in MODELS]


@pytest.mark.parametrize(("cls", "instance", "frozen", "names"), MODELS, ids=IDS)
class TestEveryModelType:
    def test_is_dataclass(self, cls: type, instance: Any, frozen: bool, names: str) -> None:
        """``dataclasses.is_dataclass`` is true for the class and its instances."""
        assert dataclasses.is_dataclass(cls)
        assert dataclasses.is_dataclass(instance)

    def test_fields(self, cls: type, instance: Any, frozen: bool, names: str) -> None:
        """``dataclasses.fields`` lists RAMPART's fields, in RAMPART's order."""
        assert [field.name for field in dataclasses.fields(cls)] == names.split()
        assert [field.name for field in dataclasses.fields(instance)] == names.split()

    def test_replace_makes_a_changed_copy(
        self, cls: type, instance: Any, frozen: bool, names: str
    ) -> None:
        """``dataclasses.replace`` without changes gives an equal copy of the same type."""
        copied = dataclasses.replace(instance)
        assert type(copied) is cls
        assert copied is not instance
        if cls is not EvaluationRecord:  # compared by identity, as RAMPART's
            assert copied == instance

    def test_asdict_and_astuple(self, cls: type, instance: Any, frozen: bool, names: str) -> None:
        """``asdict`` has one key per field and ``astuple`` one item per field."""
        assert list(dataclasses.asdict(instance)) == names.split()
        assert len(dataclasses.astuple(instance)) == len(names.split())

    def test_mutability_follows_rampart(
        self, cls: type, instance: Any, frozen: bool, names: str
    ) -> None:
        """Frozen types refuse assignment with an error that is attrs', dataclasses' and
        an AttributeError; mutable types take it."""
        name = names.split()[0]
        value = getattr(instance, name)
        if frozen:
            for error in (
                dataclasses.FrozenInstanceError,
                attrs.exceptions.FrozenInstanceError,
                AttributeError,
            ):
                with pytest.raises(error, match=f"cannot assign to field '{name}'"):
                    setattr(instance, name, value)
            with pytest.raises(dataclasses.FrozenInstanceError):
                delattr(instance, name)
            assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        else:
            setattr(instance, name, value)
            assert getattr(instance, name) is value
            assert not cls.__dataclass_params__.frozen  # type: ignore[attr-defined]


class TestAsRampartClientCodeUsesThem:
    def test_replace_turn_with_an_evaluation(self) -> None:
        """RAMPART's execution loop: ``replace(provisional, eval_result=result)``."""
        provisional = _turn()
        evaluation = EvalResult(outcome=EvalOutcome.DETECTED, evidence=["x"])
        final = dataclasses.replace(provisional, eval_result=evaluation)
        assert final.eval_result is evaluation
        assert provisional.eval_result is None
        assert final.request is provisional.request  # a shallow copy, as dataclasses make

    def test_replace_runs_the_constructor_checks(self) -> None:
        """A replace that breaks an invariant is refused as the constructor refuses it."""
        with pytest.raises(ValueError, match="eval_purpose requires"):
            dataclasses.replace(_turn(1, evaluated=True), eval_result=None)
        with pytest.raises(ValueError, match="at least a prompt or attachments"):
            dataclasses.replace(Request(prompt="p"), prompt=None)

    def test_asdict_recurses_like_dataclasses(self) -> None:
        """Nested models become dicts, lists stay lists, enums and datetimes stay values."""
        data = dataclasses.asdict(_result())
        assert data["status"] is SafetyStatus.UNSAFE
        assert data["final_trace_evaluation"] == {
            "outcome": EvalOutcome.DETECTED,
            "confidence": 1.0,
            "evidence": [],
            "rationale": "sent",
            "undetermined_operands": [],
        }
        turn = data["turns"][1]
        assert turn["response"]["tool_calls"] == [
            {"name": "send_email", "arguments": {"to": "x"}, "result": None, "timestamp": STAMP}
        ]
        assert turn["eval_result"]["evidence"] == ["e"]
        assert data["population"] == {
            "id": "pop",
            "index": 0,
            "size": 2,
            "threshold": 0.5,
            **dict.fromkeys(("confidence", "max_unsafe", "outcome", "executed", "no_result")),
            "sequential": False,
        }
        assert data["injections"] == [
            {"payload_id": "p-1", "surface_name": "Mail", "delivered": None}
        ]
        assert "safe" not in data  # derived, not a field

    def test_asdict_copies_containers(self) -> None:
        """``asdict`` output shares no list or dict with the model."""
        result = _result()
        data = dataclasses.asdict(result)
        data["metadata"]["k"].append(3)
        data["turns"][0]["response"]["metadata"]["n"] = 99
        assert result.metadata == {"k": [1, 2]}
        assert result.turns[0].response.metadata == {"n": 0}

    def test_asdict_of_a_population_summary_is_the_json_report_block(self) -> None:
        """RAMPART's JSON sink writes ``dataclasses.asdict(report.population_summary())``."""
        summary = TestRunReport(results=[_result()]).population_summary()
        assert dataclasses.asdict(summary) == {
            "total_runs": 1,
            "safe_count": 0,
            "unsafe_count": 1,
            "undetermined_count": 0,
            "error_count": 0,
            "attack_success_rate": 1.0,
            "safety_pass_rate": 0.0,
        }

    def test_field_defaults_are_rampart_defaults(self) -> None:
        """``Field.default`` / ``default_factory`` describe the constructor's defaults."""
        fields = {field.name: field for field in dataclasses.fields(Result)}
        assert fields["status"].default is dataclasses.MISSING
        assert fields["observability_level"].default is ObservabilityLevel.RESPONSE_ONLY
        assert fields["turns"].default_factory is list
        assert fields["metadata"].default_factory is dict
        assert fields["final_trace_evaluation"].default is None
        payload = {field.name: field for field in dataclasses.fields(Payload)}
        assert payload["format"].default is PayloadFormat.TEXT
        assert len(payload["id"].default_factory()) == 12  # type: ignore[misc]
        config = {field.name: field for field in dataclasses.fields(LLMConfig)}
        assert config["api_key"].repr is False

    def test_plugin_style_shallow_copy_and_retag(self) -> None:
        """RAMPART's plugin: ``copy.copy(result)`` then ``result.metadata = {...}``; the
        original keeps its metadata."""
        original = _result()
        tagged = copy.copy(original)
        tagged.metadata = {**tagged.metadata, "_pytest_test_name": "test_x"}
        if tagged.harm_category is None:  # pragma: no cover - set above
            tagged.harm_category = "custom"
        assert original.metadata == {"k": [1, 2]}
        assert tagged.metadata["_pytest_test_name"] == "test_x"
        assert tagged.turns is original.turns

    def test_result_assignment_keeps_safe_consistent(self) -> None:
        """``safe`` and ``bool()`` always follow ``status``; the checks run on assignment."""
        result = Result(status=SafetyStatus.SAFE, summary="ok")
        result.observability_level = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS
        result.status = SafetyStatus.UNDETERMINED
        assert (result.safe, bool(result)) == (False, False)
        with pytest.raises(TypeError, match="observability_level must be an ObservabilityLevel"):
            result.observability_level = "tool_only"  # type: ignore[assignment]
        with pytest.raises(AttributeError):
            result.safe = True  # type: ignore[misc]
        assert result.observability_level is ObservabilityLevel.TOOL_AND_SIDE_EFFECTS

    def test_linked_fields_are_checked_against_each_other_on_assignment(
        self, tmp_path: Path
    ) -> None:
        """A request without prompt or attachments, or a binary payload without a file, is
        refused on assignment as at construction; ``replace`` changes both at once."""
        request = Request(prompt="p")
        with pytest.raises(ValueError, match="at least a prompt or attachments"):
            request.prompt = None
        request.attachments = [Payload(content="x", id="x")]
        request.prompt = None  # now it carries an attachment
        payload = Payload(content="x", id="x")
        with pytest.raises(TypeError, match="Binary format pdf requires an artifact path"):
            payload.format = PayloadFormat.PDF
        artifact = tmp_path / "x.pdf"
        artifact.write_bytes(b"%PDF")
        converted = dataclasses.replace(payload, format=PayloadFormat.PDF, artifact=artifact)
        assert (converted.format, converted.artifact) == (PayloadFormat.PDF, artifact)

    def test_converters_run_on_assignment(self) -> None:
        """A threshold assigned to a population is checked and normalised to float."""
        population = PopulationResult(results=[], threshold=1.0)
        population.threshold = 1  # type: ignore[assignment]
        assert type(population.threshold) is float
        with pytest.raises(ValueError, match="threshold must be a number in"):
            population.threshold = 2.0

    def test_hashing_follows_dataclasses(self) -> None:
        """Frozen types hash by value (when their fields do); mutable ones are unhashable."""
        ref = PopulationRef(id="a", index=0, size=1, threshold=1.0)
        assert {ref: 1}[PopulationRef(id="a", index=0, size=1, threshold=1.0)] == 1
        for mutable in (Request(prompt="p"), EvalResult(outcome=EvalOutcome.DETECTED)):
            with pytest.raises(TypeError, match="unhashable"):
                hash(mutable)
        with pytest.raises(TypeError, match="unhashable"):
            hash(_turn())  # frozen, but holds a mutable Request (as RAMPART's Turn)

    def test_frozen_error_pickles(self) -> None:
        """The combined error survives a process hop (xdist) with its message."""
        with pytest.raises(FrozenInstanceError) as caught:
            _turn().turn_number = 4  # type: ignore[misc]
        again = pickle.loads(pickle.dumps(caught.value))
        assert type(again) is FrozenInstanceError
        assert str(again) == str(caught.value)

    def test_a_subclass_is_described_with_its_own_fields(self) -> None:
        """An attrs subclass that adds a field gets it in ``fields``, ``replace`` and ``asdict``."""

        @attrs.define(kw_only=True)
        class TimedResponse(Response):
            latency: float = 0.0

        response = TimedResponse(text="t", latency=1.5)
        assert [field.name for field in dataclasses.fields(response)][-1] == "latency"
        assert dataclasses.replace(response, text="u").latency == 1.5
        assert dataclasses.asdict(response)["latency"] == 1.5
        assert [field.name for field in dataclasses.fields(Response)][-1] == "metadata"

    def test_nan_confidence_is_a_plain_field(self) -> None:
        """The model stores what it is given; normalising is the boundary's job."""
        evaluation = EvalResult(outcome=EvalOutcome.DETECTED)
        evaluation.confidence = math.nan
        assert math.isnan(dataclasses.asdict(evaluation)["confidence"])
