"""Reading planted text back out of AgentDojo's tool results, and the scripted follow rule.

AgentDojo's tools answer in YAML, which quotes, escapes and folds long strings; a
planted injection is found by loading the YAML back and comparing letters and digits
only, so re-flowing and quoting cannot hide it. ``follows`` is the one rule by which
the scripted agents (``ScriptedPipeline`` and the test server's ``sim-agentdojo``
model) decide whether to carry out an injection they read, so both decide alike.
"""

from __future__ import annotations

import hashlib
import importlib
import re

__all__ = ["follows", "letters", "read_text"]

_NOT_WORD = re.compile(r"[\W_]+")


def letters(text: str) -> str:
    """Text without punctuation or spacing, to compare texts that were re-flowed."""
    return _NOT_WORD.sub("", text).lower()


class _TooLarge(Exception):
    """A loaded document holds more than its text could (YAML aliases repeat nodes)."""


def _strings(value: object, budget: list[int]) -> list[str]:
    """The strings in ``value``, depth first; ``budget`` is ``[nodes, characters]`` left
    (``_TooLarge`` when spent: aliases make a few hundred characters of YAML load as
    millions of strings, all the same node)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooLarge
    if isinstance(value, str):
        budget[1] -= len(value)
        if budget[1] < 0:
            raise _TooLarge
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item, budget)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item, budget)]
    return []


def read_text(tool_result: str) -> str:
    """The text a tool result carries. AgentDojo's tools answer in YAML, which quotes,
    escapes and folds long strings; loading it back gives the strings as planted. A
    document whose strings would outgrow its own text (an alias bomb) is read as it
    is: no more nodes than characters, no more text than twice the document."""
    yaml = importlib.import_module("yaml")
    try:
        loaded = yaml.safe_load(tool_result)
    except yaml.YAMLError:
        return tool_result
    size = len(tool_result)
    try:
        strings = _strings(loaded, [size + 16, 2 * size + 1024])
    except (_TooLarge, RecursionError):
        return tool_result
    return "\n".join(strings) or tool_result


def follows(*, follow: float, seed: int, prompt: str, injection_task: str) -> bool:
    """Whether a scripted agent carries out ``injection_task`` read while doing ``prompt``:
    with probability ``follow``, decided per pair from ``seed`` (the same pair decides
    the same way in every run, under any concurrency)."""
    if follow >= 1:
        return True
    if follow <= 0:
        return False
    digest = hashlib.sha256(f"{seed}\0{prompt}\0{injection_task}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < follow
