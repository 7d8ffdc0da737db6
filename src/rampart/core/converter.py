"""Payload converters transform a payload (encodings, renderings) keeping its id."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from rampart.core.types import Payload

__all__ = ["PayloadConverter"]


@runtime_checkable
class PayloadConverter(Protocol):
    """Returns a converted payload with the same ``id`` and metadata carried forward."""

    async def convert_async(self, *, payload: Payload) -> Payload: ...
