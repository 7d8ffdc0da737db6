"""Reading planted text back out of AgentDojo's tool results.

AgentDojo's tools answer in YAML, which quotes, escapes and folds long strings; a
planted injection is found by loading the YAML back and comparing letters and digits
only, so re-flowing and quoting cannot hide it.
"""

from __future__ import annotations

import importlib
import re

__all__ = ["letters", "read_text"]

_NOT_WORD = re.compile(r"[\W_]+")


def letters(text: str) -> str:
    """Text without punctuation or spacing, to compare texts that were re-flowed."""
    return _NOT_WORD.sub("", text).lower()


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def read_text(tool_result: str) -> str:
    """The text a tool result carries. AgentDojo's tools answer in YAML, which quotes,
    escapes and folds long strings; loading it back gives the strings as planted."""
    yaml = importlib.import_module("yaml")
    try:
        loaded = yaml.safe_load(tool_result)
    except yaml.YAMLError:
        return tool_result
    return "\n".join(_strings(loaded)) or tool_result
