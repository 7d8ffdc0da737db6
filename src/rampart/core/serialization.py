"""Compatibility path: the canonical record codec lives in ``rampart.codec``."""

from rampart.codec import (
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
