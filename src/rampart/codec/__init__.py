"""The canonical ``rampart.trace.v2`` record codec and its JSON Schema.

A :class:`ResultRecord` references one live ``Result`` plus optional pytest
attribution; :func:`serialize_record` turns it into JSON text and
:func:`deserialize_record` reads that text back. They are the only conversion API:
the JSON report, the JSONL trace, the run journal and the xdist transport are all
projections of their output. :func:`parse_strict_json` is the JSON reader underneath
and rampart's one JSON reading policy (size and nesting limits checked before parsing,
unique keys, finite numbers), for every file, body and state rampart reads.
``docs/trace-schema.md`` describes the format, the decoder rules and how the schema
may evolve.

Inside the package, one concern per module:

* ``_schema`` -- what the contract is: one ``ModelSpec`` per model class (field kinds,
  defaults, cross-field rules) and the JSON Schema built from them;
* ``_paths`` -- how a failure is reported: ``PathError`` and the JSON path it renders
  (producer-chosen keys by position, never by text);
* ``_json`` -- JSON text: the strict parser and reading policy (size and depth limits,
  finite numbers, unique keys, Unicode scalar strings), the writer, and the JSON-value
  check of free-form mappings;
* ``_jsonl`` -- JSONL framing: the one line writer and the one line reader of the JSONL
  trace, the run journal, ``rescore``'s output and the payload store;
* ``_hooks`` -- the code generator: one emitter per field kind, compiling each spec into
  a straight-line encode and decode function;
* ``_envelope`` -- the record envelope (version, attribution), checked in one place;
* ``_converter`` -- the cattrs wiring; ``configure_converter``'s docstring is the wire
  specification;
* ``_record`` -- the record type and the public functions;
* ``_wire_calls`` -- the tool calls a model API's JSON bodies show (chat completions and
  the Responses API), read under the same policy for ``LimitedTransport`` and for the
  error boundary's failed request.

This package depends on ``rampart.core`` and the ground floor only (never on the
engine), and imports cattrs on first use, not at import time.
"""

from rampart.codec._json import parse_strict_json
from rampart.codec._record import (
    TRACE_SCHEMA_VERSION,
    ResultRecord,
    deserialize_record,
    serialize_record,
)

__all__ = [
    "ResultRecord",
    "TRACE_SCHEMA_VERSION",
    "deserialize_record",
    "parse_strict_json",
    "serialize_record",
]
