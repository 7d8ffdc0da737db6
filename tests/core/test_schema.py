"""The generated JSON Schema and the specs it is derived from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import jsonschema  # type: ignore[import-untyped]
import pytest

from rampart.codec import TRACE_SCHEMA_VERSION, ResultRecord, _schema, serialize_record
from rampart.core.result import Result
from rampart.core.types import Payload
from tests.core.test_serialization import full_record

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "schemas" / "trace.v2.schema.json"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return ResultRecord.json_schema()


@pytest.fixture
def document() -> dict[str, Any]:
    parsed: dict[str, Any] = json.loads(serialize_record(record=full_record()))
    return parsed


def _errors(schema: dict[str, Any], document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(document)]


def _object_schemas(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append(node)
        for value in node.values():
            found += _object_schemas(value)
    elif isinstance(node, list):
        for value in node:
            found += _object_schemas(value)
    return found


class TestCommittedSchema:
    def test_committed_file_matches_the_models(self) -> None:
        """schemas/trace.v2.schema.json is what the generator writes today (no drift)."""
        expected = json.dumps(ResultRecord.json_schema(), indent=2, sort_keys=True) + "\n"
        assert COMMITTED.read_text(encoding="utf-8") == expected

    def test_file_name_follows_the_version(self) -> None:
        """The active schema file is named after TRACE_SCHEMA_VERSION."""
        assert COMMITTED.name == f"{TRACE_SCHEMA_VERSION.removeprefix('rampart.')}.schema.json"

    def test_is_a_valid_draft_2020_12_schema(self, schema: dict[str, Any]) -> None:
        """The generated document is itself a valid Draft 2020-12 schema."""
        jsonschema.Draft202012Validator.check_schema(schema)
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["$id"] == "urn:rampart:trace:v2"

    def test_is_open_everywhere(self, schema: dict[str, Any]) -> None:
        """Every object schema tolerates unknown properties (forward compatibility)."""
        objects = _object_schemas(schema)
        assert len(objects) >= 12
        assert all(node.get("additionalProperties") is True for node in objects)

    def test_fresh_dict_each_call(self) -> None:
        """Callers may mutate the returned schema without affecting the next call."""
        first = ResultRecord.json_schema()
        first["$defs"].clear()
        assert ResultRecord.json_schema()["$defs"]


class TestSchemaDescribesTheContract:
    def test_accepts_a_canonical_record(
        self, schema: dict[str, Any], document: dict[str, Any]
    ) -> None:
        """A record from the writer validates."""
        assert _errors(schema, document) == []

    def test_envelope(self, schema: dict[str, Any]) -> None:
        """Version is a constant, attribution is optional and the index non-negative."""
        assert schema["required"] == ["version", "result"]
        properties = schema["properties"]
        assert properties["version"] == {"const": "rampart.trace.v2", "type": "string"}
        assert properties["pytest_nodeid"] == {"type": ["string", "null"]}
        assert properties["result_index"] == {"minimum": 0, "type": ["integer", "null"]}
        assert "safe" not in schema["$defs"]["Result"]["properties"]

    def test_required_fields(self, schema: dict[str, Any]) -> None:
        """Required members match the contract, including the recorded payload id."""
        defs = schema["$defs"]
        assert defs["Result"]["required"] == ["status", "summary", "observability_level"]
        assert defs["Payload"]["required"] == ["content", "id"]
        assert defs["InjectionRecord"]["required"] == ["payload_id", "surface_name"]
        assert defs["PopulationRef"]["required"] == ["id", "index", "size", "threshold"]
        assert defs["Turn"]["required"] == ["request", "response"]

    def test_scalar_bounds(self, schema: dict[str, Any]) -> None:
        """Population bounds are stated; index < size is described in prose."""
        population = schema["$defs"]["PopulationRef"]
        properties = population["properties"]
        assert properties["id"] == {"minLength": 1, "type": "string"}
        assert properties["index"] == {"minimum": 0, "type": "integer"}
        assert properties["size"] == {"minimum": 1, "type": "integer"}
        assert properties["threshold"] == {"maximum": 1.0, "minimum": 0.0, "type": "number"}
        assert "index to be less than size" in population["description"]

    def test_delivered_is_an_optional_boolean(self, schema: dict[str, Any]) -> None:
        """``InjectionRecord.delivered`` is true, false or null, null by default."""
        delivered = schema["$defs"]["InjectionRecord"]["properties"]["delivered"]
        assert delivered == {"anyOf": [{"type": "boolean"}, {"type": "null"}], "default": None}

    def test_duration_is_not_negative(self, schema: dict[str, Any]) -> None:
        """A duration is measured, so the schema states its lower bound (and no upper)."""
        duration = schema["$defs"]["Result"]["properties"]["duration_seconds"]
        assert duration == {"default": 0.0, "minimum": 0.0, "type": "number"}

    def test_payload_restrictions(self, schema: dict[str, Any]) -> None:
        """Only the three text formats exist and ``artifact`` is always null."""
        properties = schema["$defs"]["Payload"]["properties"]
        assert properties["format"]["enum"] == ["text", "html", "markdown"]
        assert properties["artifact"]["type"] == "null"

    def test_harm_category_is_open(self, schema: dict[str, Any]) -> None:
        """``harm_category`` lists the known labels but accepts any string."""
        harm = schema["$defs"]["Result"]["properties"]["harm_category"]
        assert {"type": "string"} in harm["anyOf"]
        assert {"type": "null"} in harm["anyOf"]

    @pytest.mark.parametrize(
        ("path", "value"),
        [
            (("result", "turns", 2, "request"), {"prompt": None, "attachments": []}),
            (("result", "turns", 2, "request"), {}),
            (("result", "turns", 1, "eval_result"), None),
            (("result", "population", "id"), ""),
            (("result", "population", "size"), 0),
            (("result", "population", "threshold"), 1.5),
            (("result", "duration_seconds"), -0.5),
            (("result", "turns", 0, "request", "attachments", 0, "format"), "image"),
            (("result", "turns", 0, "request", "attachments", 0, "artifact"), "/tmp/a"),
            (("result", "status"), "maybe"),
            (("result_index",), -1),
            (("version",), "rampart.trace.v1"),
        ],
    )
    def test_rejects_structural_violations(
        self, schema: dict[str, Any], document: dict[str, Any], path: tuple[Any, ...], value: Any
    ) -> None:
        """The request invariant, purpose rule, bounds and enums are structural."""
        node: Any = document
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value
        assert _errors(schema, document)


class TestSpecDerivation:
    def test_every_attrs_field_is_described(self) -> None:
        """Each traced class's schema lists exactly its attrs fields."""
        schema = ResultRecord.json_schema()
        for cls in _schema.TRACE_MODELS:
            properties = schema["$defs"][cls.__name__]["properties"]
            assert list(properties) == [field.name for field in attrs.fields(cls)]

    def test_result_defaults_come_from_its_constructor(self) -> None:
        """Result's hand-written constructor supplies the decode defaults."""
        spec = {field.name: field for field in _schema.model_spec(Result).fields}
        assert spec["turns"].default_factory is list
        assert spec["metadata"].default_factory is dict
        assert spec["duration_seconds"].default == 0.0
        assert spec["status"].required
        assert spec["observability_level"].required

    def test_payload_id_is_required_on_the_wire(self) -> None:
        """The live constructor generates ids; the trace never does."""
        spec = {field.name: field for field in _schema.model_spec(Payload).fields}
        assert spec["id"].required

    @pytest.mark.parametrize("annotation", [bytes, set[str], tuple[int, ...], Path, dict[int, Any]])
    def test_unrepresentable_annotations_fail_loudly(self, annotation: Any) -> None:
        """A field type without a trace representation is an error, never a guess."""
        with pytest.raises(TypeError, match="no trace representation"):
            _schema._kind_for(annotation, "Example.field")

    def test_only_trace_models_have_specs(self) -> None:
        """Classes outside the trace body are refused."""
        with pytest.raises(TypeError, match=r"not part of the rampart\.trace body"):
            _schema.model_spec(ResultRecord)
