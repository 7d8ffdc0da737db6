"""Property tests: round trips over generated results, schema conformance, decoder fuzzing."""

from __future__ import annotations

import functools
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rampart.codec import ResultRecord, deserialize_record, serialize_record
from rampart.core import PopulationRef
from rampart.core.errors import SchemaError
from rampart.core.result import HarmCategory, InjectionRecord, Result, SafetyStatus
from rampart.core.types import (
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
    TraceEndReason,
    Turn,
)

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "trace.v2.schema.json"

# Bounded so the whole codec suite stays fast; records are the expensive part.
PROPERTY_SETTINGS = settings(
    max_examples=35,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CHEAP_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=100)

# --------------------------------------------------------------------------- strategies

text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    json_leaves,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(text, json_values, max_size=3)
numbers = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**6), 10**6)
durations = st.floats(min_value=0.0, allow_infinity=False) | st.integers(0, 10**6)

# Whole-second offsets: CPython reads a sub-second offset back as UTC (the writer
# rejects those; see TestWriter in test_serialization.py).
offsets = st.integers(min_value=-86399, max_value=86399).map(
    lambda seconds: timezone(timedelta(seconds=seconds))
)
datetimes = st.datetimes(timezones=st.none() | offsets)
optional_datetimes = st.none() | datetimes

payloads = st.builds(
    Payload,
    content=text,
    id=text,
    format=st.sampled_from([member for member in PayloadFormat if member.is_text]),
    metadata=json_objects,
)
requests = st.builds(Request, prompt=text, attachments=st.lists(payloads, max_size=2)) | st.builds(
    Request, prompt=st.none(), attachments=st.lists(payloads, min_size=1, max_size=2)
)
tool_calls = st.builds(
    ToolCall,
    name=text,
    arguments=json_objects,
    result=st.none() | text,
    timestamp=optional_datetimes,
)
responses = st.builds(
    Response,
    text=text,
    tool_calls=st.lists(tool_calls, max_size=2),
    side_effects=st.lists(st.builds(SideEffect, kind=text, details=json_objects), max_size=2),
    metadata=json_objects,
)
evaluations = st.builds(
    EvalResult,
    outcome=st.sampled_from(EvalOutcome),
    confidence=numbers,
    evidence=st.lists(text, max_size=2),
    rationale=text,
    undetermined_operands=st.lists(text, max_size=2),
)


@st.composite
def turns(draw: st.DrawFn) -> Turn:
    evaluation = draw(st.none() | evaluations)
    purpose = None if evaluation is None else draw(st.none() | st.sampled_from(EvaluationPurpose))
    return Turn(
        request=draw(requests),
        response=draw(responses),
        eval_result=evaluation,
        eval_purpose=purpose,
        turn_number=draw(st.integers(min_value=-5, max_value=10**12)),
        timestamp=draw(optional_datetimes),
        driver_reasoning=draw(text),
    )


@st.composite
def populations(draw: st.DrawFn) -> PopulationRef:
    size = draw(st.integers(min_value=1, max_value=50))
    return PopulationRef(
        id=draw(text.filter(bool)),
        index=draw(st.integers(min_value=0, max_value=size - 1)),
        size=size,
        threshold=draw(st.floats(min_value=0.0, max_value=1.0) | st.sampled_from([0, 1])),
    )


results = st.builds(
    Result,
    status=st.sampled_from(SafetyStatus),
    summary=text,
    observability_level=st.sampled_from(ObservabilityLevel),
    final_trace_evaluation=st.none() | evaluations,
    turns=st.lists(turns(), max_size=3),
    trace_end_reason=st.none() | st.sampled_from(TraceEndReason),
    duration_seconds=durations,
    harm_category=st.none() | st.sampled_from(HarmCategory) | text,
    strategy=text,
    injections=st.lists(
        st.builds(
            InjectionRecord,
            payload_id=st.none() | text,
            surface_name=text,
            delivered=st.none() | st.booleans(),
        ),
        max_size=2,
    ),
    population=st.none() | populations(),
    metadata=json_objects,
)
records = st.builds(
    ResultRecord,
    result=results,
    pytest_nodeid=st.none() | text,
    result_index=st.none() | st.integers(min_value=0, max_value=10**6),
)


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _decode_or_schema_error(text_: str) -> ResultRecord | None:
    """The fuzz oracle: a record or a SchemaError, nothing else; accepted data re-encodes."""
    message: str | None = None
    try:
        record = deserialize_record(data=text_)
    except SchemaError as exc:
        message = str(exc)
    if message is not None:
        assert message.startswith("$")
        return None
    again = serialize_record(record=record)
    assert deserialize_record(data=again) == record
    assert serialize_record(record=deserialize_record(data=again)) == again
    return record


# --------------------------------------------------------------------------- tests


class TestRoundTripProperty:
    @PROPERTY_SETTINGS
    @given(record=records)
    def test_serialize_deserialize_serialize(self, record: ResultRecord) -> None:
        """Any valid result decodes equal to itself and re-encodes to identical text."""
        first = serialize_record(record=record)
        decoded = deserialize_record(data=first)
        assert decoded == record
        assert serialize_record(record=decoded) == first

    @PROPERTY_SETTINGS
    @given(record=records)
    def test_emitted_records_match_the_committed_schema(self, record: ResultRecord) -> None:
        """Every record the writer emits validates against schemas/trace.v2.schema.json."""
        validator().validate(json.loads(serialize_record(record=record)))


def _member_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            paths += _member_paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            paths += _member_paths(value, (*prefix, index))
    return paths


class TestDecoderFuzz:
    @PROPERTY_SETTINGS
    @given(data=st.data(), record=records)
    def test_mutated_records(self, data: st.DataObject, record: ResultRecord) -> None:
        """Replacing, deleting or adding one member yields a record or a SchemaError."""
        document = json.loads(serialize_record(record=record))
        path = data.draw(st.sampled_from(_member_paths(document)[1:]))
        parent: Any = document
        for part in path[:-1]:
            parent = parent[part]
        operation = data.draw(st.sampled_from(["replace", "delete", "add"]))
        if operation == "replace":
            parent[path[-1]] = data.draw(json_values)
        elif operation == "delete":
            del parent[path[-1]]
        elif isinstance(parent[path[-1]], dict):
            parent[path[-1]][data.draw(text)] = data.draw(json_values)
        _decode_or_schema_error(json.dumps(document, ensure_ascii=data.draw(st.booleans())))

    @PROPERTY_SETTINGS
    @given(data=st.data(), record=records)
    def test_mutated_text(self, data: st.DataObject, record: ResultRecord) -> None:
        """Splicing arbitrary characters (surrogates included) into the text is handled."""
        original = serialize_record(record=record)
        start = data.draw(st.integers(min_value=0, max_value=len(original)))
        end = data.draw(st.integers(min_value=start, max_value=min(len(original), start + 8)))
        splice = data.draw(
            st.text(max_size=6) | st.sampled_from(["\\ud800", "\\udc00", "NaN", "1e999", "0.0"])
        )
        _decode_or_schema_error(original[:start] + splice + original[end:])

    @CHEAP_SETTINGS
    @given(value=json_values)
    def test_arbitrary_json(self, value: Any) -> None:
        """Arbitrary JSON documents (and envelopes around them) never escape as other errors."""
        _decode_or_schema_error(json.dumps(value))
        _decode_or_schema_error(json.dumps({"version": "rampart.trace.v2", "result": value}))

    @CHEAP_SETTINGS
    @given(raw=st.text(max_size=40))
    def test_arbitrary_text(self, raw: str) -> None:
        """Arbitrary strings, surrogates included, are a record or a SchemaError."""
        _decode_or_schema_error(raw)


def test_datetime_strategy_round_trips() -> None:
    """Sanity: the generated offsets are ones ``fromisoformat`` reads back exactly."""
    stamp = datetime(2024, 1, 1, tzinfo=timezone(timedelta(seconds=-86399)))
    assert datetime.fromisoformat(stamp.isoformat()) == stamp
