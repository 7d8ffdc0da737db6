"""Unicode tricks: look-alike letters, and text people cannot see but models may read.

* ``UnicodeConfusableConverter`` swaps Latin letters for Cyrillic and Greek look-alikes
  (``a`` becomes U+0430 CYRILLIC SMALL LETTER A, ...): the text looks unchanged, its
  bytes do not.
* ``InvisibleTextConverter`` hides the payload: as Unicode tag characters (U+E0020 to
  U+E007E, one per ASCII character; invisible in most renderers, yet some models read
  them: "ASCII smuggling"), or by putting zero-width spaces between its characters
  (still visible, but no longer matching keyword filters).
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from rampart._checks import check_choice, check_instance, check_int, check_probability
from rampart.converters._base import converted, require_text

if TYPE_CHECKING:
    from rampart.core.types import Payload

__all__ = ["InvisibleTextConverter", "UnicodeConfusableConverter"]

_CONFUSABLES = {
    "a": "\u0430", "c": "\u0441", "e": "\u0435", "i": "\u0456", "j": "\u0458", "o": "\u043e",
    "p": "\u0440", "s": "\u0455", "x": "\u0445", "y": "\u0443", "A": "\u0410", "B": "\u0412",
    "C": "\u0421", "E": "\u0415", "H": "\u041d", "I": "\u0406", "J": "\u0408", "K": "\u041a",
    "M": "\u041c", "N": "\u039d", "O": "\u041e", "P": "\u0420", "S": "\u0405", "T": "\u0422",
    "X": "\u0425", "Y": "\u04ae", "Z": "\u0396",
}  # fmt: skip


class UnicodeConfusableConverter:
    """Replace a ``ratio`` of the replaceable letters with look-alikes (all by default).

    Which letters are replaced when ``ratio < 1`` is drawn from ``seed`` and the text,
    so a payload always converts the same way.
    """

    def __init__(self, *, ratio: float = 1.0, seed: int = 0) -> None:
        owner = "UnicodeConfusableConverter"
        self._ratio = check_probability(owner, "ratio", ratio)
        self._seed = check_int(owner, "seed", seed)

    def __repr__(self) -> str:
        return f"UnicodeConfusableConverter(ratio={self._ratio!r}, seed={self._seed!r})"

    async def convert_async(self, *, payload: Payload) -> Payload:
        source = require_text("UnicodeConfusableConverter", payload)
        rng = random.Random(f"{self._seed}/{source.content}")
        characters = []
        for character in source.content:
            swap = _CONFUSABLES.get(character)
            if swap is not None and (self._ratio >= 1.0 or rng.random() < self._ratio):
                characters.append(swap)
            else:
                characters.append(character)
        return converted(source, name="UnicodeConfusableConverter", content="".join(characters))


_TAG_BASE = 0xE0000
_ZERO_WIDTH_SPACE = "\u200b"


def _to_tags(owner: str, text: str) -> str:
    out = []
    for index, character in enumerate(text):
        if character in "\n\r\t":
            character = " "
        code = ord(character)
        if not 0x20 <= code <= 0x7E:
            raise ValueError(
                f"{owner}: mode 'tags' encodes printable ASCII only; character {index} "
                f"is U+{code:04X}"
            )
        out.append(chr(_TAG_BASE + code))
    return "".join(out)


class InvisibleTextConverter:
    """Hide the payload text (see the module docstring).

    ``mode="tags"`` (default) encodes it as Unicode tag characters after ``carrier``,
    the visible text (default none, so the whole payload looks empty);
    ``mode="zero_width"`` inserts a zero-width space between every two characters.
    """

    def __init__(self, *, mode: str = "tags", carrier: str = "") -> None:
        owner = "InvisibleTextConverter"
        self._mode = check_choice(owner, "mode", mode, ("tags", "zero_width"))
        self._carrier = check_instance(owner, "carrier", carrier, str, expected="a str")

    def __repr__(self) -> str:
        return f"InvisibleTextConverter(mode={self._mode!r}, carrier={self._carrier!r})"

    async def convert_async(self, *, payload: Payload) -> Payload:
        owner = "InvisibleTextConverter"
        source = require_text(owner, payload)
        if self._mode == "tags":
            content = self._carrier + _to_tags(owner, source.content)
        else:
            content = _ZERO_WIDTH_SPACE.join(source.content)
        return converted(source, name=owner, content=content, extra={"invisible_mode": self._mode})
