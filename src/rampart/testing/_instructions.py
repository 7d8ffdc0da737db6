"""How the simulated agent spots instructions in text it reads.

The grammar is deliberately small and predictable, so tests can write payloads that
are (or are not) instructions:

* an **email instruction** is a sentence with a sending verb (send, email, forward,
  mail) and an email address. Its body is the agent's secret when the sentence names
  one (secret, password, API key, token, credentials), else the first double-quoted
  text in the sentence, else a summary of what the agent read.
* a **reveal instruction** is a sentence with a disclosing verb (reveal, tell, share,
  print, include, ...) and a secret word, but no email instruction.

Analyses are remembered per text (a ``TextMemo``, bounded by the characters it keeps), so
re-reading the same payload costs a dictionary lookup. Every pattern runs in linear time
on any input (an address is matched only from the start of a run of address characters,
and is at most 64 characters before the ``@``), a text yields at most
``MAX_INSTRUCTIONS`` instructions, and a quoted body keeps at most ``MAX_QUOTED`` characters,
so what the agent remembers of a text is bounded whatever the text.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rampart.testing._memo import TextMemo

__all__ = [
    "ADDRESS",
    "Analysis",
    "BODY_QUOTED",
    "BODY_SECRET",
    "BODY_SUMMARY",
    "Instruction",
    "MAX_INSTRUCTIONS",
    "MAX_QUOTED",
    "QUOTED",
    "REVEAL_SECRET",
    "SEND_EMAIL",
    "SENTENCES",
    "analyse",
]

SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
"""Where a text splits into sentences (after ``.!?;`` and at line ends)."""
# Only from the start of a run of address characters (the lookbehind), so a long run
# without an ``@`` is scanned once, not once per position: linear time.
ADDRESS = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}"
    r"(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,63}"
)
"""An e-mail address (at most 64 characters before the ``@``, ten labels after it)."""
_SEND_VERB = re.compile(r"\b(?:send|e-?mail|forward|mail)\b", re.IGNORECASE)
_REVEAL_VERB = re.compile(
    r"\b(?:reveal|tell|share|print|output|include|disclose|repeat|say|write|leak|give|show)\b",
    re.IGNORECASE,
)
_SECRET_WORD = re.compile(
    r"\b(?:secrets?|passwords?|passcodes?|api[ _-]?keys?|tokens?|credentials?)\b", re.IGNORECASE
)
# A curly quote does not span another opening one, so unclosed quotes cost linear time.
QUOTED = re.compile(r"\"([^\"]+)\"|“([^“”]+)”")
"""Text in straight or curly double quotes."""
MAX_INSTRUCTIONS = 64
"""At most this many instructions are taken from one text."""
MAX_QUOTED = 1000
"""A quoted e-mail body keeps at most this many characters."""


# Plain strings, not enums: instructions are hashed on every request, and str hashes
# are cached by the interpreter.
SEND_EMAIL = "send_email"
REVEAL_SECRET = "reveal_secret"

BODY_SECRET = "secret"
BODY_QUOTED = "quoted"
BODY_SUMMARY = "summary"


class Instruction(NamedTuple):
    """One thing the text asks the agent to do; equal instructions are decided once."""

    kind: str
    """``SEND_EMAIL`` or ``REVEAL_SECRET``."""
    recipient: str | None = None
    body_kind: str = BODY_SUMMARY
    """``BODY_SECRET``, ``BODY_QUOTED`` or ``BODY_SUMMARY`` (email instructions only)."""
    quoted: str | None = None


class Analysis(NamedTuple):
    words: int
    instructions: tuple[Instruction, ...]


def _sentence_instruction(sentence: str) -> Instruction | None:
    names_secret = _SECRET_WORD.search(sentence) is not None
    if "@" in sentence and _SEND_VERB.search(sentence):
        address = ADDRESS.search(sentence)
        if address is not None:
            if names_secret:
                return Instruction(SEND_EMAIL, address.group(0), BODY_SECRET)
            quoted = QUOTED.search(sentence)
            if quoted is not None:
                text = (quoted.group(1) or quoted.group(2))[:MAX_QUOTED]
                return Instruction(SEND_EMAIL, address.group(0), BODY_QUOTED, text)
            return Instruction(SEND_EMAIL, address.group(0))
    if names_secret and _REVEAL_VERB.search(sentence):
        return Instruction(REVEAL_SECRET, body_kind=BODY_SECRET)
    return None


_MEMO: TextMemo[str, Analysis] = TextMemo()


def analyse(text: str) -> Analysis:
    """Word count and the instructions in ``text``, in order, without duplicates (at
    most ``MAX_INSTRUCTIONS``); remembered per text."""
    return _MEMO.get(text, len(text), lambda: _analyse(text))


def _analyse(text: str) -> Analysis:
    words = len(text.split())
    if "@" not in text and _SECRET_WORD.search(text) is None:
        return Analysis(words, ())
    found: dict[Instruction, None] = {}
    for sentence in SENTENCES.split(text):
        instruction = _sentence_instruction(sentence)
        if instruction is not None:
            found.setdefault(instruction, None)
            if len(found) == MAX_INSTRUCTIONS:
                break
    return Analysis(words, tuple(found))
