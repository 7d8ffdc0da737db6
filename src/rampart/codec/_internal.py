"""The internal face of ``rampart.codec``: what other rooms take from its private modules.

For the JSON reading policy's pieces (limits, finite numbers), the JSONL framing, the
section codec and the tool calls in a model API's bodies, for the rooms that read or
write JSON beside the record codec. What is not here comes from ``rampart.codec``
itself; how the face loads is in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.codec._json import (
        NON_FINITE_MESSAGE,
        NonFiniteNumber,
        check_limits,
        finite_decoder,
    )
    from rampart.codec._jsonl import (
        JsonlLine,
        jsonl_line,
        jsonl_records,
        read_records,
        split_jsonl,
        stream_jsonl,
    )
    from rampart.codec._sections import section_from_json, section_to_json
    from rampart.codec._wire_calls import answer_calls, request_calls

_FACE = {
    "NON_FINITE_MESSAGE": "rampart.codec._json",
    "NonFiniteNumber": "rampart.codec._json",
    "check_limits": "rampart.codec._json",
    "finite_decoder": "rampart.codec._json",
    "JsonlLine": "rampart.codec._jsonl",
    "jsonl_line": "rampart.codec._jsonl",
    "jsonl_records": "rampart.codec._jsonl",
    "read_records": "rampart.codec._jsonl",
    "split_jsonl": "rampart.codec._jsonl",
    "stream_jsonl": "rampart.codec._jsonl",
    "section_from_json": "rampart.codec._sections",
    "section_to_json": "rampart.codec._sections",
    "answer_calls": "rampart.codec._wire_calls",
    "request_calls": "rampart.codec._wire_calls",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "JsonlLine",
    "NON_FINITE_MESSAGE",
    "NonFiniteNumber",
    "answer_calls",
    "check_limits",
    "finite_decoder",
    "jsonl_line",
    "jsonl_records",
    "read_records",
    "request_calls",
    "section_from_json",
    "section_to_json",
    "split_jsonl",
    "stream_jsonl",
]
