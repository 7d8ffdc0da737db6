"""Payload ids and collection names that are safe to use as file names."""

from __future__ import annotations

import re

from rampart._checks import invalid

__all__ = ["PAYLOAD_ID_PATTERN", "validate_payload_id"]

PAYLOAD_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""1 to 128 ASCII letters, digits, ``.``, ``_`` or ``-`` (and not ``.`` or ``..``)."""

_SAFE = "1-128 characters from A-Z a-z 0-9 . _ - (and not '.' or '..')"


def validate_payload_id(
    payload_id: object, *, owner: str = "validate_payload_id", name: str = "payload_id"
) -> str:
    """``payload_id`` when it is safe as a single path component; else an error naming
    ``owner`` and ``name`` (the argument or record field checked).

    Surfaces write payloads to files named after their id and ``PayloadStore`` keeps
    collections in directories named after theirs, so both must match
    ``^[A-Za-z0-9._-]{1,128}$`` and must not be ``.`` or ``..``.
    """
    if not isinstance(payload_id, str):
        raise invalid(owner, name, f"a str of {_SAFE}", payload_id)
    if PAYLOAD_ID_PATTERN.fullmatch(payload_id) is None or payload_id in (".", ".."):
        raise invalid(owner, name, _SAFE, payload_id, error=ValueError)
    return payload_id
