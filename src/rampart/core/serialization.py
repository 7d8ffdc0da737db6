"""Compatibility path: the canonical record codec lives in ``rampart.codec``."""

# layering: compatibility re-export, the one kind of module that may import a higher layer
from rampart.codec import (
    TRACE_SCHEMA_VERSION,
    ResultRecord,
    deserialize_record,
    serialize_record,
)
from rampart.core.errors import SchemaError, UnsupportedSchemaVersionError

__all__ = [
    "ResultRecord",
    "SchemaError",
    "TRACE_SCHEMA_VERSION",
    "UnsupportedSchemaVersionError",
    "deserialize_record",
    "serialize_record",
]
