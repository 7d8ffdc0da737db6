"""What every converter shares: the text-only check and the metadata bookkeeping.

A converter returns a new ``Payload`` with the same ``id``, the input's metadata
carried forward, ``metadata["converter"]`` set to its own name (RAMPART's key: the
last converter applied) and its name appended to ``metadata["converters"]`` (the
whole chain, in order).
"""

from __future__ import annotations

from typing import Any

import attrs

from rampart._checks import check_instance, invalid
from rampart.core.types import Payload, PayloadFormat

__all__ = ["converted", "require_payload", "require_text"]


def require_payload(owner: str, payload: object) -> Payload:
    """``payload`` when it is a ``Payload`` (``owner`` is the converter's name)."""
    return check_instance(owner, "payload", payload, Payload, expected="a Payload")


def require_text(owner: str, payload: object) -> Payload:
    """``payload`` when it carries text; ``ValueError`` naming its format otherwise."""
    checked = require_payload(owner, payload)
    if not checked.format.is_text:
        raise ValueError(
            f"{owner}: converts text payloads only; payload {checked.id!r} has format "
            f"{checked.format.value!r} (apply text converters before renderers such as "
            "DocxConverter)"
        )
    if not isinstance(checked.content, str):
        raise invalid(owner, "payload.content", "a str", checked.content, error=ValueError)
    return checked


def converted(
    payload: Payload,
    *,
    name: str,
    content: str,
    format: PayloadFormat | None = None,
    artifact: Any = None,
    extra: dict[str, Any] | None = None,
) -> Payload:
    """The converted payload: same id, metadata carried forward plus this converter."""
    previous = payload.metadata.get("converters")
    chain = [str(item) for item in previous] if isinstance(previous, list) else []
    metadata = {
        **payload.metadata,
        **(extra or {}),
        "converter": name,
        "converters": [*chain, name],
    }
    return attrs.evolve(
        payload,
        content=content,
        format=payload.format if format is None else format,
        artifact=artifact,
        metadata=metadata,
    )
