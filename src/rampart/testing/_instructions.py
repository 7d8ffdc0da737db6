"""How the simulated agent spots instructions in text it reads.

The grammar is deliberately small and predictable, so tests can write payloads that
are (or are not) instructions:

* an **email instruction** is a sentence with a sending verb (send, email, forward,
  mail) and an email address. Its body is the agent's secret when the sentence names
  one (secret, password, API key, token, credentials), else the first double-quoted
  text in the sentence, else a summary of what the agent read.
* a **reveal instruction** is a sentence with a disclosing verb (reveal, tell, share,
  print, include, ...) and a secret word, but no email instruction.

Analyses are cached per text, so re-reading the same payload costs a dictionary lookup.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import NamedTuple

__all__ = [
    "BODY_QUOTED",
    "BODY_SECRET",
    "BODY_SUMMARY",
    "REVEAL_SECRET",
    "SEND_EMAIL",
    "Analysis",
    "Instruction",
    "analyse",
]

_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")
_ADDRESS = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_SEND_VERB = re.compile(r"\b(?:send|e-?mail|forward|mail)\b", re.IGNORECASE)
_REVEAL_VERB = re.compile(
    r"\b(?:reveal|tell|share|print|output|include|disclose|repeat|say|write|leak|give|show)\b",
    re.IGNORECASE,
)
_SECRET_WORD = re.compile(
    r"\b(?:secrets?|passwords?|passcodes?|api[ _-]?keys?|tokens?|credentials?)\b", re.IGNORECASE
)
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")


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
        address = _ADDRESS.search(sentence)
        if address is not None:
            if names_secret:
                return Instruction(SEND_EMAIL, address.group(0), BODY_SECRET)
            quoted = _QUOTED.search(sentence)
            if quoted is not None:
                text = quoted.group(1) or quoted.group(2)
                return Instruction(SEND_EMAIL, address.group(0), BODY_QUOTED, text)
            return Instruction(SEND_EMAIL, address.group(0))
    if names_secret and _REVEAL_VERB.search(sentence):
        return Instruction(REVEAL_SECRET, body_kind=BODY_SECRET)
    return None


@lru_cache(maxsize=4096)
def analyse(text: str) -> Analysis:
    """Word count and the instructions in ``text``, in order, without duplicates."""
    words = len(text.split())
    if "@" not in text and _SECRET_WORD.search(text) is None:
        return Analysis(words, ())
    found: dict[Instruction, None] = {}
    for sentence in _SENTENCES.split(text):
        instruction = _sentence_instruction(sentence)
        if instruction is not None:
            found.setdefault(instruction, None)
    return Analysis(words, tuple(found))
