"""Encodings an agent may decode and follow: Base64, ROT13, leetspeak.

They test whether filters that look for an instruction's words also catch it encoded,
and whether the agent decodes and obeys encoded text. The result is plain text
(``PayloadFormat.TEXT``) for Base64 and ROT13; leetspeak keeps the input's format.
"""

from __future__ import annotations

import base64
import codecs

from rampart.converters._base import converted, require_text
from rampart.core.types import Payload, PayloadFormat

__all__ = ["Base64Converter", "LeetspeakConverter", "Rot13Converter"]


class Base64Converter:
    """The payload's UTF-8 text, Base64-encoded (standard alphabet, padded)."""

    def __repr__(self) -> str:
        return "Base64Converter()"

    async def convert_async(self, *, payload: Payload) -> Payload:
        source = require_text("Base64Converter", payload)
        encoded = base64.b64encode(source.content.encode("utf-8")).decode("ascii")
        return converted(source, name="Base64Converter", content=encoded, format=PayloadFormat.TEXT)


class Rot13Converter:
    """ASCII letters rotated by 13 (other characters unchanged); applying it twice undoes it."""

    def __repr__(self) -> str:
        return "Rot13Converter()"

    async def convert_async(self, *, payload: Payload) -> Payload:
        source = require_text("Rot13Converter", payload)
        return converted(
            source,
            name="Rot13Converter",
            content=codecs.encode(source.content, "rot13"),
            format=PayloadFormat.TEXT,
        )


_LEET = str.maketrans(
    {"a": "4", "A": "4", "e": "3", "E": "3", "i": "1", "I": "1", "o": "0", "O": "0",
     "s": "5", "S": "5", "t": "7", "T": "7", "b": "8", "B": "8", "g": "9", "G": "9"}
)  # fmt: skip


class LeetspeakConverter:
    """Letters that look like digits become those digits (a→4, e→3, i→1, o→0, s→5, t→7,
    b→8, g→9), so keyword filters miss the words while people and models still read them.
    E-mail addresses and URLs are changed too: pair it with an evaluator that does not
    match on them literally."""

    def __repr__(self) -> str:
        return "LeetspeakConverter()"

    async def convert_async(self, *, payload: Payload) -> Payload:
        source = require_text("LeetspeakConverter", payload)
        return converted(source, name="LeetspeakConverter", content=source.content.translate(_LEET))
