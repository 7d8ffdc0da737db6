"""The canonical ``rampart.trace.v2`` record codec and its JSON Schema.

A :class:`ResultRecord` references one live ``Result`` plus optional pytest
attribution; :func:`serialize_record` turns it into JSON text and
:func:`deserialize_record` reads that text back. They are the only conversion API:
the JSON report, the JSONL trace, the run journal and the xdist transport are all
projections of their output. ``docs/trace-schema.md`` describes the format, the
decoder rules and how the schema may evolve.

Inside the package:

* ``_schema`` -- what the contract is: one ``ModelSpec`` per model class (field kinds,
  defaults, cross-field rules) and the JSON Schema built from them;
* ``_codec`` -- how it is enforced: the strict-domain hooks compiled from the specs,
  JSON parse/dump with the strict checks, and the cattrs converter wiring;
* ``_record`` -- the record type and the public functions.

This package depends on ``rampart.core`` only (never on the engine), and imports
cattrs on first use, not at import time.
"""

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
    "serialize_record",
]
