"""``ConverterChain``: several converters applied in order, itself a converter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._checks import check_items, check_method
from rampart.converters._base import require_payload
from rampart.core._internal import convert_checked

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rampart.core.converter import PayloadConverter
    from rampart.core.types import Payload

__all__ = ["ConverterChain", "apply_converters", "check_converters"]


_CONVERTER = "a PayloadConverter instance (with async convert_async(*, payload))"


def _check_converter(owner: str) -> Callable[[str, object], PayloadConverter]:
    def check(name: str, value: object) -> PayloadConverter:
        return check_method(owner, name, value, "convert_async", expected=_CONVERTER)  # type: ignore[return-value]

    return check


def check_converters(owner: str, value: object) -> tuple[PayloadConverter, ...]:
    """``value`` as a tuple of converters; ``TypeError`` naming the bad item."""
    if value is None:
        return ()
    return tuple(
        check_items(
            owner,
            "converters",
            value,
            _check_converter(owner),
            expected="a list of PayloadConverter or None",
        )
    )


async def apply_converters(payload: Payload, converters: Sequence[PayloadConverter]) -> Payload:
    """``payload`` run through ``converters`` in order, each call checked.

    A converter that is not async, returns no ``Payload`` or changes the payload id
    raises ``ConverterContractError`` naming it (``rampart.core._contract``).
    """
    for converter in converters:
        payload = await convert_checked(converter, payload=payload)
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
