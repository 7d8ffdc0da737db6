"""Payload ids and collection names that are safe to use as file names."""

from __future__ import annotations

import re

__all__ = ["PAYLOAD_ID_PATTERN", "validate_payload_id"]

PAYLOAD_ID_PATTERN = re.compile(r"[A-Za-z0-9._-]{1,128}")
"""1 to 128 ASCII letters, digits, ``.``, ``_`` or ``-`` (and not ``.`` or ``..``)."""


def validate_payload_id(payload_id: object, *, name: str = "payload id") -> str:
    """``payload_id`` when it is safe as a single path component; else an error naming ``name``.

    Surfaces write payloads to files named after their id and ``PayloadStore`` keeps
    collections in directories named after theirs, so both must match
    ``^[A-Za-z0-9._-]{1,128}$`` and must not be ``.`` or ``..``.
    """
    if not isinstance(payload_id, str):
        raise TypeError(f"{name} must be a str, got {type(payload_id).__name__}")
    if PAYLOAD_ID_PATTERN.fullmatch(payload_id) is None or payload_id in (".", ".."):
        raise ValueError(
            f"{name} must be 1-128 characters from A-Z a-z 0-9 . _ - (and not '.' or '..'), "
            f"got {payload_id!r}"
        )
    return payload_id
