"""``ConverterChain``: several converters applied in order, itself a converter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.converters._base import require_payload
from rampart.core.converter import PayloadConverter

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.types import Payload

__all__ = ["ConverterChain", "apply_converters", "check_converters"]


def check_converters(owner: str, value: object) -> tuple[PayloadConverter, ...]:
    """``value`` as a tuple of converters; ``TypeError`` naming the bad item."""
    if value is None:
        return ()
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise TypeError(f"{owner}: converters must be a list of PayloadConverter, got {value!r}")
    for index, item in enumerate(value):
        if isinstance(item, type) or not isinstance(item, PayloadConverter):
            raise TypeError(
                f"{owner}: converters[{index}] must be a PayloadConverter instance "
                f"(with async convert_async(*, payload)), got {item!r}"
            )
    return tuple(value)


async def apply_converters(payload: Payload, converters: Sequence[PayloadConverter]) -> Payload:
    """``payload`` run through ``converters`` in order."""
    for converter in converters:
        payload = await converter.convert_async(payload=payload)
    return payload


class ConverterChain:
    """Applies ``converters`` in order: ``ConverterChain(Rot13Converter(), DocxConverter())``.

    Every converter records itself, so the result's ``metadata["converters"]`` lists
    the whole chain. A text converter after a renderer (e.g. after ``DocxConverter``)
    raises ``ValueError``: it has no text to convert.
    """

    def __init__(self, *converters: PayloadConverter) -> None:
        self._converters = check_converters("ConverterChain", list(converters))
        if not self._converters:
            raise ValueError("ConverterChain: give at least one converter")

    def __repr__(self) -> str:
        return f"ConverterChain({', '.join(repr(item) for item in self._converters)})"

    @property
    def converters(self) -> tuple[PayloadConverter, ...]:
        return self._converters

    async def convert_async(self, *, payload: Payload) -> Payload:
        return await apply_converters(require_payload("ConverterChain", payload), self._converters)
