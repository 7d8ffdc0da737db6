"""Decoder rules: one record per rule, violating only that rule.

Each case starts from a valid canonical record, breaks exactly one rule of the trace
contract, and expects a ``SchemaError`` whose message starts with the failing JSON path
and contains no producer data.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from rampart.codec import ResultRecord, deserialize_record, serialize_record
from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError
from rampart.core.result import HarmCategory
from tests.core.test_serialization import LEAK, full_record

if TYPE_CHECKING:
    from collections.abc import Callable

Document = dict[str, Any]

_MISSING = object()


def base_document() -> Document:
    document: Document = json.loads(serialize_record(record=full_record()))
    return document


def _walk(document: Document, path: str) -> tuple[Any, str | int]:
    """The container and key addressed by a dotted path (``result.turns.2.turn_number``)."""
    parts: list[str | int] = [int(part) if part.isdigit() else part for part in path.split(".")]
    node: Any = document
    for part in parts[:-1]:
        node = node[part]
    return node, parts[-1]


def put(path: str, value: Any) -> Callable[[Document], Document]:
    def change(document: Document) -> Document:
        node, key = _walk(document, path)
        node[key] = value
        return document

    return change


def drop(path: str) -> Callable[[Document], Document]:
    def change(document: Document) -> Document:
        node, key = _walk(document, path)
        del node[key]
        return document

    return change


# (id, change, expected message prefix)
STRUCTURAL_CASES: list[tuple[str, Callable[[Document], Document], str]] = [
    # integers use integer notation and are never booleans or strings
    ("result-index-float", put("result_index", 0.0), "$.result_index: expected an integer"),
    ("result-index-bool", put("result_index", True), "$.result_index: expected an integer"),
    ("result-index-negative", put("result_index", -1), "$.result_index: expected an integer >= 0"),
    ("result-index-string", put("result_index", "3"), "$.result_index: expected an integer"),
    ("turn-number-float", put("result.turns.2.turn_number", 2.0), "$.result.turns[2].turn_number:"),
    ("turn-number-bool", put("result.turns.2.turn_number", True), "$.result.turns[2].turn_number:"),
    (
        "turn-number-string",
        put("result.turns.2.turn_number", "2"),
        "$.result.turns[2].turn_number:",
    ),
    ("population-index-float", put("result.population.index", 2.0), "$.result.population.index:"),
    ("population-size-float", put("result.population.size", 5.0), "$.result.population.size:"),
    # population bounds
    ("population-index-negative", put("result.population.index", -1), "$.result.population.index:"),
    (
        "population-index-not-below-size",
        put("result.population.index", 5),
        "$.result.population.index: expected an index less than",
    ),
    (
        "population-size-zero",
        put("result.population.size", 0),
        "$.result.population.size: expected an integer >= 1",
    ),
    (
        "population-id-empty",
        put("result.population.id", ""),
        "$.result.population.id: expected a non-empty string",
    ),
    ("population-id-number", put("result.population.id", 1), "$.result.population.id:"),
    (
        "population-threshold-high",
        put("result.population.threshold", 1.5),
        "$.result.population.threshold: expected a finite number from 0.0 to 1.0",
    ),
    (
        "population-threshold-negative",
        put("result.population.threshold", -0.1),
        "$.result.population.threshold:",
    ),
    (
        "population-threshold-bool",
        put("result.population.threshold", True),
        "$.result.population.threshold:",
    ),
    (
        "population-threshold-string",
        put("result.population.threshold", "0.5"),
        "$.result.population.threshold:",
    ),
    (
        "population-missing-size",
        drop("result.population.size"),
        "$.result.population.size: required field is missing",
    ),
    # numbers are numbers, not strings or booleans
    (
        "confidence-string",
        put("result.final_trace_evaluation.confidence", "1.0"),
        "$.result.final_trace_evaluation.confidence: expected a finite number, got string",
    ),
    (
        "confidence-bool",
        put("result.turns.1.eval_result.confidence", False),
        "$.result.turns[1].eval_result.confidence: expected a finite number, got boolean",
    ),
    ("duration-string", put("result.duration_seconds", "2.5"), "$.result.duration_seconds:"),
    (
        "duration-negative",
        put("result.duration_seconds", -0.5),
        "$.result.duration_seconds: expected a finite number >= 0.0",
    ),
    (
        "duration-negative-int",
        put("result.duration_seconds", -1),
        "$.result.duration_seconds: expected a finite number >= 0.0",
    ),
    (
        "duration-huge-int",
        put("result.duration_seconds", 10**400),
        "$.result.duration_seconds: expected a finite number",
    ),
    # strings are strings
    (
        "prompt-number",
        put("result.turns.0.request.prompt", 5),
        "$.result.turns[0].request.prompt: expected a string or null, got integer",
    ),
    (
        "summary-bool",
        put("result.summary", True),
        "$.result.summary: expected a string, got boolean",
    ),
    (
        "driver-reasoning-number",
        put("result.turns.0.driver_reasoning", 0),
        "$.result.turns[0].driver_reasoning:",
    ),
    (
        "evidence-item-number",
        put("result.turns.2.eval_result.evidence.1", 1),
        "$.result.turns[2].eval_result.evidence[1]: expected a string, got integer",
    ),
    (
        "operands-not-array",
        put("result.turns.2.eval_result.undetermined_operands", "x"),
        "$.result.turns[2].eval_result.undetermined_operands: expected an array",
    ),
    ("nodeid-number", put("pytest_nodeid", 5), "$.pytest_nodeid: expected a string or null"),
    (
        "harm-category-number",
        put("result.harm_category", 5),
        "$.result.harm_category: expected a string or null",
    ),
    # timestamps parse with datetime.fromisoformat
    (
        "timestamp-garbage",
        put("result.turns.0.timestamp", f"yesterday {LEAK}"),
        "$.result.turns[0].timestamp: expected an ISO 8601 datetime",
    ),
    (
        "timestamp-number",
        put("result.turns.0.timestamp", 1714566615),
        "$.result.turns[0].timestamp:",
    ),
    (
        "tool-timestamp-garbage",
        put("result.turns.1.response.tool_calls.0.timestamp", "2024-13-01"),
        "$.result.turns[1].response.tool_calls[0].timestamp:",
    ),
    # closed enums fail closed
    (
        "status-unknown",
        put("result.status", f"maybe {LEAK}"),
        "$.result.status: expected one of 'safe', 'unsafe', 'undetermined', 'error', got string",
    ),
    ("status-number", put("result.status", 1), "$.result.status: expected one of"),
    ("status-object", put("result.status", {"value": "safe"}), "$.result.status: expected one of"),
    (
        "outcome-unknown",
        put("result.turns.1.eval_result.outcome", "perhaps"),
        "$.result.turns[1].eval_result.outcome:",
    ),
    (
        "purpose-unknown",
        put("result.turns.1.eval_purpose", "curiosity"),
        "$.result.turns[1].eval_purpose: expected one of 'stop_check' or null",
    ),
    ("end-reason-unknown", put("result.trace_end_reason", "crashed"), "$.result.trace_end_reason:"),
    (
        "observability-unknown",
        put("result.observability_level", "omniscient"),
        "$.result.observability_level:",
    ),
    (
        "observability-case",
        put("result.observability_level", "TOOL_ONLY"),
        "$.result.observability_level:",
    ),
    (
        "payload-format-unknown",
        put("result.turns.0.request.attachments.0.format", "rtf"),
        "$.result.turns[0].request.attachments[0].format:",
    ),
    # binary payloads and artifacts have no v2 representation
    (
        "payload-format-binary",
        put("result.turns.0.request.attachments.0.format", "pdf"),
        "$.result.turns[0].request.attachments[0].format: expected one of 'text', 'html', 'markdown' (binary payload formats are not supported",
    ),
    (
        "payload-artifact-path",
        put("result.turns.0.request.attachments.0.artifact", f"/tmp/{LEAK}"),
        "$.result.turns[0].request.attachments[0].artifact: expected null",
    ),
    (
        "payload-artifact-object",
        put("result.turns.1.request.attachments.0.artifact", {}),
        "$.result.turns[1].request.attachments[0].artifact: expected null",
    ),
    # payload ids are recorded, never generated
    (
        "payload-id-missing",
        drop("result.turns.0.request.attachments.0.id"),
        "$.result.turns[0].request.attachments[0].id: required field is missing",
    ),
    (
        "payload-id-null",
        put("result.turns.0.request.attachments.0.id", None),
        "$.result.turns[0].request.attachments[0].id: expected a string, got null",
    ),
    # required fields
    ("status-missing", drop("result.status"), "$.result.status: required field is missing"),
    ("summary-missing", drop("result.summary"), "$.result.summary: required field is missing"),
    (
        "observability-missing",
        drop("result.observability_level"),
        "$.result.observability_level: required field is missing",
    ),
    ("result-missing", drop("result"), "$.result: required field is missing"),
    (
        "request-missing",
        drop("result.turns.1.request"),
        "$.result.turns[1].request: required field is missing",
    ),
    (
        "response-text-missing",
        drop("result.turns.1.response.text"),
        "$.result.turns[1].response.text: required field is missing",
    ),
    (
        "tool-name-missing",
        drop("result.turns.1.response.tool_calls.1.name"),
        "$.result.turns[1].response.tool_calls[1].name: required",
    ),
    (
        "side-effect-kind-missing",
        drop("result.turns.2.response.side_effects.0.kind"),
        "$.result.turns[2].response.side_effects[0].kind: required",
    ),
    (
        "outcome-missing",
        drop("result.final_trace_evaluation.outcome"),
        "$.result.final_trace_evaluation.outcome: required",
    ),
    (
        "injection-payload-id-missing",
        drop("result.injections.1.payload_id"),
        "$.result.injections[1].payload_id: required",
    ),
    (
        "injection-surface-missing",
        drop("result.injections.0.surface_name"),
        "$.result.injections[0].surface_name: required",
    ),
    # a boolean is a JSON boolean, never 0/1 or a string
    (
        "injection-delivered-int",
        put("result.injections.0.delivered", 1),
        "$.result.injections[0].delivered: expected a boolean or null, got integer",
    ),
    (
        "injection-delivered-string",
        put("result.injections.0.delivered", "true"),
        "$.result.injections[0].delivered: expected a boolean or null, got string",
    ),
    (
        "payload-content-missing",
        drop("result.turns.1.request.attachments.0.content"),
        "$.result.turns[1].request.attachments[0].content: required",
    ),
    # explicit null only where the field is nullable
    ("summary-null", put("result.summary", None), "$.result.summary: expected a string, got null"),
    ("turns-null", put("result.turns", None), "$.result.turns: expected an array, got null"),
    (
        "metadata-null",
        put("result.metadata", None),
        "$.result.metadata: expected an object, got null",
    ),
    ("strategy-null", put("result.strategy", None), "$.result.strategy:"),
    ("duration-null", put("result.duration_seconds", None), "$.result.duration_seconds:"),
    ("turn-number-null", put("result.turns.0.turn_number", None), "$.result.turns[0].turn_number:"),
    (
        "confidence-null",
        put("result.final_trace_evaluation.confidence", None),
        "$.result.final_trace_evaluation.confidence:",
    ),
    (
        "evidence-null",
        put("result.final_trace_evaluation.evidence", None),
        "$.result.final_trace_evaluation.evidence:",
    ),
    ("injections-null", put("result.injections", None), "$.result.injections:"),
    (
        "surface-name-null",
        put("result.injections.0.surface_name", None),
        "$.result.injections[0].surface_name:",
    ),
    (
        "arguments-null",
        put("result.turns.1.response.tool_calls.0.arguments", None),
        "$.result.turns[1].response.tool_calls[0].arguments:",
    ),
    (
        "request-null",
        put("result.turns.0.request", None),
        "$.result.turns[0].request: expected an object, got null",
    ),
    ("result-null", put("result", None), "$.result: expected an object, got null"),
    # structure
    (
        "metadata-array",
        put("result.metadata", [LEAK]),
        "$.result.metadata: expected an object, got array",
    ),
    ("turns-object", put("result.turns", {}), "$.result.turns: expected an array, got object"),
    (
        "turn-string",
        put("result.turns.1", LEAK),
        "$.result.turns[1]: expected an object, got string",
    ),
    (
        "attachment-string",
        put("result.turns.0.request.attachments.0", LEAK),
        "$.result.turns[0].request.attachments[0]: expected an object",
    ),
    (
        "tool-call-array",
        put("result.turns.1.response.tool_calls.1", []),
        "$.result.turns[1].response.tool_calls[1]: expected an object, got array",
    ),
    (
        "details-string",
        put("result.turns.2.response.side_effects.0.details", LEAK),
        "$.result.turns[2].response.side_effects[0].details: expected an object",
    ),
    (
        "arguments-array",
        put("result.turns.1.response.tool_calls.0.arguments", []),
        "$.result.turns[1].response.tool_calls[0].arguments: expected an object",
    ),
    (
        "population-array",
        put("result.population", []),
        "$.result.population: expected an object or null",
    ),
    # cross-field rules
    (
        "purpose-without-evaluation",
        put("result.turns.1.eval_result", None),
        "$.result.turns[1].eval_result: expected an evaluation because eval_purpose is set",
    ),
    (
        "purpose-evaluation-missing",
        drop("result.turns.1.eval_result"),
        "$.result.turns[1].eval_result: expected an evaluation",
    ),
    (
        "request-empty",
        put("result.turns.2.request", {"prompt": None, "attachments": []}),
        "$.result.turns[2].request: expected a prompt or at least one attachment",
    ),
    (
        "request-no-members",
        put("result.turns.2.request", {}),
        "$.result.turns[2].request: expected a prompt or at least one attachment",
    ),
    # envelope
    ("version-missing", drop("version"), "$.version: required field is missing"),
    ("version-number", put("version", 2), "$.version: expected a string"),
]

# (id, text transformation, expected message prefix): rules about the JSON text itself.
SURROGATE = "\\ud800"
TEXT_CASES: list[tuple[str, Callable[[str], str], str]] = [
    (
        "nan",
        lambda t: t.replace('"confidence":0.875', '"confidence":NaN'),
        "$: expected finite JSON numbers",
    ),
    (
        "infinity",
        lambda t: t.replace('"duration_seconds":2.5', '"duration_seconds":Infinity'),
        "$: expected finite JSON numbers",
    ),
    (
        "minus-infinity",
        lambda t: t.replace('"threshold":0.8', '"threshold":-Infinity'),
        "$: expected finite JSON numbers",
    ),
    (
        "overflowing-exponent",
        lambda t: t.replace('"duration_seconds":2.5', '"duration_seconds":1e999'),
        "$: expected finite JSON numbers",
    ),
    (
        "lone-high-surrogate-summary",
        lambda t: t.replace("Attack objective", f"Attack {SURROGATE}"),
        "$.result.summary: expected a string of Unicode scalar values",
    ),
    (
        "lone-low-surrogate-evidence",
        lambda t: t.replace('"send_email called"', '"\\udc00 called"'),
        "$.result.turns[2].eval_result.evidence[0]: expected a string of Unicode scalar values",
    ),
    (
        "reversed-pair",
        lambda t: t.replace('"rationale":"the', '"rationale":"\\ude00\\ud83d the'),
        "$.result.turns[2].eval_result.rationale:",
    ),
    (
        "surrogate-in-metadata-key",
        lambda t: t.replace(f'"{LEAK}":{{}}', f'"{LEAK}{SURROGATE}":{{}}'),
        "$.result.metadata[<key #2>][<key #1>]: expected keys of Unicode scalar values",
    ),
    (
        "surrogate-in-metadata-value",
        lambda t: t.replace(
            '"values":[1,2.5,null,true,"x"]', f'"values":[1,2.5,null,true,"{SURROGATE}"]'
        ),
        "$.result.metadata[<key #2>][<key #0>][4]: expected a string",
    ),
    (
        "surrogate-in-unknown-member",
        lambda t: t.replace('"strategy":"xpia"', f'"strategy":"xpia","{LEAK}":"{SURROGATE}"'),
        "$.result[<unrecognized member #9>]: expected a string of Unicode scalar values",
    ),
    (
        "surrogate-in-nodeid",
        lambda t: t.replace('"tests/test_x.py::test_y[trial-3]"', f'"{SURROGATE}"'),
        "$.pytest_nodeid: expected a string of Unicode scalar values",
    ),
    (
        "surrogate-in-enum",
        lambda t: t.replace('"status":"unsafe"', f'"status":"unsafe{SURROGATE}"'),
        "$.result.status:",
    ),
    (
        "literal-surrogate",
        lambda t: t.replace("Attack objective", "Attack \ud800"),
        "$.result.summary: expected a string of Unicode scalar values",
    ),
]


# (id, text transformation, expected message prefix): an object names a member twice.
DUPLICATE_CASES: list[tuple[str, Callable[[str], str], str]] = [
    (
        "status-unsafe-then-safe",
        lambda t: t.replace('"status":"unsafe"', '"status":"unsafe","status":"safe"'),
        "$.result.status: duplicate key",
    ),
    (
        "version",
        lambda t: t.replace(
            '{"version":"rampart.trace.v2"',
            '{"version":"rampart.trace.v1","version":"rampart.trace.v2"',
        ),
        "$.version: duplicate key",
    ),
    (
        "same-value-twice",
        lambda t: t.replace(
            '"duration_seconds":2.5', '"duration_seconds":2.5,"duration_seconds":2.5'
        ),
        "$.result.duration_seconds: duplicate key",
    ),
    (
        "nested-outcome",
        lambda t: t.replace(
            '"outcome":"detected","confidence":1.0',
            '"outcome":"detected","outcome":"not_detected","confidence":1.0',
        ),
        "$.result.turns[2].eval_result.outcome: duplicate key",
    ),
    (
        "nodeid",
        lambda t: t.replace(
            '"pytest_nodeid":"tests/test_x.py::test_y[trial-3]"',
            '"pytest_nodeid":"tests/test_x.py::test_y[trial-3]","pytest_nodeid":"x"',
        ),
        "$.pytest_nodeid: duplicate key",
    ),
    (
        "metadata-key",
        lambda t: t.replace(f'"{LEAK}":{{}}', f'"{LEAK}":{{}},"{LEAK}":{{"x":1}}'),
        "$.result.metadata[<key #2>][<key #2>]: duplicate key",
    ),
    (
        "tool-argument",
        lambda t: t.replace('"to":"x@example.com"', '"to":"x@example.com","to":"a@evil.example"'),
        "$.result.turns[1].response.tool_calls[0].arguments[<key #1>]: duplicate key",
    ),
    (
        "unrecognized-member",
        lambda t: t.replace('"strategy":"xpia"', f'"strategy":"xpia","{LEAK}":1,"{LEAK}":2'),
        "$.result[<unrecognized member #10>]: duplicate key",
    ),
]


def _assert_rejected(text: str, prefix: str) -> None:
    with pytest.raises(SchemaError) as info:
        deserialize_record(data=text)
    message = str(info.value)
    assert message.startswith(prefix), message
    assert LEAK not in message
    assert not isinstance(info.value, UnsupportedSchemaVersionError)


class TestDecoderRules:
    @pytest.mark.parametrize(
        ("change", "prefix"),
        [case[1:] for case in STRUCTURAL_CASES],
        ids=[case[0] for case in STRUCTURAL_CASES],
    )
    def test_structural_rule(self, change: Callable[[Document], Document], prefix: str) -> None:
        """The record breaks one structural rule; the error names its path, not its data."""
        _assert_rejected(json.dumps(change(base_document()), ensure_ascii=False), prefix)

    @pytest.mark.parametrize(
        ("transform", "prefix"),
        [case[1:] for case in TEXT_CASES],
        ids=[case[0] for case in TEXT_CASES],
    )
    def test_text_rule(self, transform: Callable[[str], str], prefix: str) -> None:
        """The JSON text breaks one rule about numbers or Unicode; the error says where."""
        original = serialize_record(record=full_record())
        text = transform(original)
        assert text != original, "the transformation must apply"
        _assert_rejected(text, prefix)

    @pytest.mark.parametrize(
        ("transform", "prefix"),
        [case[1:] for case in DUPLICATE_CASES],
        ids=[case[0] for case in DUPLICATE_CASES],
    )
    def test_duplicate_key(self, transform: Callable[[str], str], prefix: str) -> None:
        """A repeated member name is an error wherever it is, even with an equal value."""
        original = serialize_record(record=full_record())
        text = transform(original)
        assert text != original, "the transformation must apply"
        _assert_rejected(text, prefix)

    def test_a_duplicate_status_never_decides_the_verdict(self) -> None:
        """``"unsafe"`` then ``"safe"``: a plain parser keeps the last; the codec keeps none."""
        text = serialize_record(record=full_record()).replace(
            '"status":"unsafe"', '"status":"unsafe","status":"safe"'
        )
        assert json.loads(text)["result"]["status"] == "safe"  # the hazard
        with pytest.raises(SchemaError, match=r"^\$\.result\.status: duplicate key"):
            deserialize_record(data=text)

    def test_the_first_duplicate_in_document_order_is_reported(self) -> None:
        """Two repeats: the one in the object that opens first is named."""
        text = serialize_record(record=full_record())
        text = text.replace('"turn_number":2', '"turn_number":2,"turn_number":2')
        text = text.replace('"turn_number":0', '"turn_number":0,"turn_number":0')
        _assert_rejected(text, "$.result.turns[0].turn_number: duplicate key")

    def test_a_duplicate_in_a_future_version_is_still_malformed(self) -> None:
        """The text rules come before the version: a repeat is never an unknown major."""
        text = '{"version":"rampart.trace.v9","result":{"a":1,"a":2}}'
        _assert_rejected(text, "$.result[<unrecognized member #1>]: duplicate key")

    def test_cases_start_from_a_valid_record(self) -> None:
        """The unbroken base record decodes, so each case fails for its one rule only."""
        assert deserialize_record(data=json.dumps(base_document())) == full_record()


class TestDecoderAcceptance:
    def test_unknown_members_are_ignored_everywhere(self) -> None:
        """Additive members at every level (envelope, body, nested) are tolerated."""
        document = base_document()
        document["future"] = {"x": [1]}
        document["result"]["new_field"] = None
        document["result"]["turns"][1]["response"]["tool_calls"][0]["latency"] = 3
        document["result"]["turns"][0]["request"]["attachments"][0]["sha"] = "abc"
        document["result"]["population"]["seed"] = 1
        document["result"]["final_trace_evaluation"]["model"] = "judge"
        assert deserialize_record(data=json.dumps(document)) == full_record()

    def test_int_is_accepted_for_float_fields(self) -> None:
        """JSON does not distinguish 1 from 1.0 for numbers, so ints fill float fields."""
        document = base_document()
        document["result"]["final_trace_evaluation"]["confidence"] = 1
        document["result"]["population"]["threshold"] = 0
        document["result"]["duration_seconds"] = 7
        result = deserialize_record(data=json.dumps(document)).result
        assert result.final_trace_evaluation is not None
        assert type(result.final_trace_evaluation.confidence) is float
        assert result.population is not None
        assert result.population.threshold == 0.0
        assert type(result.duration_seconds) is float

    def test_null_on_nullable_fields(self) -> None:
        """Nullable fields accept an explicit null."""
        document = base_document()
        for key in ("final_trace_evaluation", "trace_end_reason", "harm_category", "population"):
            document["result"][key] = None
        document["result"]["turns"][0]["request"]["prompt"] = None
        document["result"]["turns"][0]["timestamp"] = None
        document["pytest_nodeid"] = None
        document["result_index"] = None
        record = deserialize_record(data=json.dumps(document))
        assert record.result.population is None
        assert record.pytest_nodeid is None

    def test_python_iso_datetimes(self) -> None:
        """Anything ``datetime.fromisoformat`` parses is a valid timestamp, decoded to it."""
        from datetime import datetime

        for stamp in ("2024-05-01", "2024-05-01T12:30", "2024-05-01T12:30:15+00:00:30.5"):
            document = base_document()
            document["result"]["turns"][0]["timestamp"] = stamp
            record = deserialize_record(data=json.dumps(document))
            assert record.result.turns[0].timestamp == datetime.fromisoformat(stamp)

    def test_unknown_harm_label(self) -> None:
        """An unknown harm label is a plain string; a known one the enum member."""
        document = base_document()
        document["result"]["harm_category"] = "novel_harm"
        assert deserialize_record(data=json.dumps(document)).result.harm_category == "novel_harm"
        document["result"]["harm_category"] = "jailbreak"
        decoded = deserialize_record(data=json.dumps(document)).result.harm_category
        assert decoded is HarmCategory.JAILBREAK

    def test_escaped_backslash_is_not_a_surrogate(self) -> None:
        """``\\\\ud800`` is a backslash followed by text, not an escape."""
        document = base_document()
        document["result"]["summary"] = "\\ud800"
        record = deserialize_record(data=json.dumps(document))
        assert record.result.summary == "\\ud800"

    def test_free_form_values_are_kept(self) -> None:
        """Metadata holds any JSON value and comes back unchanged."""
        document = base_document()
        value = {"a": [1, -2.5e-300, None, False, {"b": ""}], "": 10**30}
        document["result"]["metadata"] = value
        assert deserialize_record(data=json.dumps(document)).result.metadata == value

    def test_decoded_record_type(self) -> None:
        """Decoding returns a ResultRecord with the attribution restored."""
        record = deserialize_record(data=json.dumps(base_document()))
        assert isinstance(record, ResultRecord)
        assert (record.pytest_nodeid, record.result_index) == (
            "tests/test_x.py::test_y[trial-3]",
            3,
        )

    def test_missing_members_become_defaults_and_are_written_back(self) -> None:
        """An omitted ``turns`` decodes to ``[]`` and is emitted when re-encoded."""
        document = base_document()
        del document["result"]["turns"]
        del document["result"]["metadata"]
        record = deserialize_record(data=json.dumps(document))
        assert record.result.turns == []
        rewritten = json.loads(serialize_record(record=record))
        assert rewritten["result"]["turns"] == []
        assert rewritten["result"]["metadata"] == {}

    def test_delivered_is_optional(self) -> None:
        """A record written before ``delivered`` existed reads it as null ("cannot tell")."""
        document = base_document()
        assert document["result"]["injections"][0]["delivered"] is True
        del document["result"]["injections"][0]["delivered"]
        record = deserialize_record(data=json.dumps(document))
        assert [i.delivered for i in record.result.injections] == [None, None]

    def test_missing_marker_is_not_a_value(self) -> None:
        """Sanity: the test helpers address real members of the base document."""
        node, key = _walk(base_document(), "result.turns.2.turn_number")
        assert node.get(key, _MISSING) == 2
