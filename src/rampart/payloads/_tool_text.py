"""Reading planted text back out of AgentDojo's tool results, and the scripted follow rule.

AgentDojo's tools answer in YAML, which quotes, escapes and folds long strings; a
planted injection is found by loading the YAML back and comparing letters and digits
only, so re-flowing and quoting cannot hide it. ``follows`` is the one rule by which
the scripted agents (``ScriptedPipeline`` and the test server's ``sim-agentdojo``
model) decide whether to carry out an injection they read, so both decide alike.

It lives with the payloads (beside ``_planted``, the payloads planted in this process):
the AgentDojo integration and the test server both read planted text back here, and
neither reaches into the other's room for it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
from typing import Any

__all__ = ["follows", "letters", "read_text"]

_NOT_WORD = re.compile(r"[\W_]+")


def letters(text: str) -> str:
    """Text without punctuation or spacing, to compare texts that were re-flowed."""
    return _NOT_WORD.sub("", text).lower()


def _strings(value: object, *, nodes: int, characters: int) -> list[str] | None:
    """The strings in ``value``, in document order; ``None`` once more than ``nodes``
    values or ``characters`` characters of strings were met: YAML aliases make a few
    hundred characters of a tool result load as millions of strings, all the same node
    (a "billion laughs" tool result would otherwise take forever)."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        nodes -= 1
        if nodes < 0:
            return None
        if isinstance(item, str):
            characters -= len(item)
            if characters < 0:
                return None
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return found


@functools.cache
def _loader() -> tuple[Any, Any]:
    """PyYAML, and its safe loader: libyaml's C parser when PyYAML was built with it.

    The pure-Python parser takes about 3 ms for a 700-character tool result, and every
    AgentDojo pair reads all its tool results back (``rampart.agentdojo._run``): at zero
    latency that parse was a fifth of a pair's CPU. libyaml's parser is about eight
    times faster; the constructor and the implicit types (the resolver) are PyYAML's
    own either way, so a document loads to the same values.
    """
    yaml = importlib.import_module("yaml")
    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_text(tool_result: str) -> str:
    """The text a tool result carries. AgentDojo's tools answer in YAML, which quotes,
    escapes and folds long strings; loading it back gives the strings as planted. A
    result that is not YAML (or not encodable text) or is nested too deep to load, and a
    document whose strings would outgrow its own text (an alias bomb: more values than
    characters, or more text than twice the document), is read as it is."""
    yaml, loader = _loader()
    try:
        loaded = yaml.load(tool_result, Loader=loader)  # a safe loader (C or Python)
    except (yaml.YAMLError, RecursionError, UnicodeError):
        return tool_result
    size = len(tool_result)
    strings = _strings(loaded, nodes=size + 16, characters=2 * size + 1024)
    return tool_result if strings is None else ("\n".join(strings) or tool_result)


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
