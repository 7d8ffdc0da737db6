"""What a scripted tool policy sees and says: the public types behind ``sim-tools``.

A user who tests their own agent against the ``sim-tools`` model can script it, with
data (``ToolRule``: when the last message contains a phrase, call a tool or answer) or,
in-process, with a callable that gets the conversation (``ToolConversation``) and
returns the next tool call, a text answer, or ``None`` to let the model decide.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from rampart._checks import check_optional_text, check_text, invalid
from rampart.core.types import ToolCall

__all__ = [
    "DeclaredTool",
    "ToolConversation",
    "ToolMessage",
    "ToolPolicy",
    "ToolRule",
    "check_rule",
]


@attrs.frozen(kw_only=True)
class DeclaredTool:
    """A function tool a request declares, from either API's form (chat completions'
    ``{"type": "function", "function": {...}}`` or the Responses API's flat one)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=dict)
    """The JSON Schema object of the arguments, as the request sent it."""

    @property
    def properties(self) -> Mapping[str, Any]:
        """The schema's ``properties`` (name -> schema); empty when it has none."""
        found = self.parameters.get("properties")
        return found if isinstance(found, Mapping) else {}

    @property
    def required(self) -> tuple[str, ...]:
        """The schema's ``required`` names that are strings."""
        found = self.parameters.get("required")
        if not isinstance(found, list):
            return ()
        return tuple(name for name in found if isinstance(name, str))


@attrs.frozen(kw_only=True)
class ToolMessage:
    """One message of the conversation: ``role`` is ``"user"``, ``"assistant"`` or
    ``"tool"`` (a tool's result); an assistant's ``tool_calls`` carry name and
    arguments."""

    role: str
    text: str
    tool_calls: tuple[ToolCall, ...] = ()


@attrs.frozen(kw_only=True)
class ToolConversation:
    """What a tool policy decides from: the requested ``model``, the system prompt
    (``instructions``: the Responses API's ``instructions`` and every ``system`` or
    ``developer`` message, joined), the other messages in order, and the declared
    ``tools`` (none when the request's ``tool_choice`` is ``"none"``)."""

    model: str
    instructions: str
    messages: tuple[ToolMessage, ...]
    tools: tuple[DeclaredTool, ...]

    @property
    def last(self) -> ToolMessage | None:
        return self.messages[-1] if self.messages else None

    def declares(self, name: str) -> bool:
        return any(tool.name == name for tool in self.tools)


ToolPolicy = Callable[[ToolConversation], "ToolCall | str | None"]
"""A scripted model in-process: the next ``ToolCall`` (name and arguments), a text
answer, or ``None`` for the ``sim-tools`` model's own choice."""


def _check_arguments(_instance: object, _attribute: object, value: object) -> None:
    if not isinstance(value, Mapping) or not all(isinstance(key, str) for key in value):
        raise invalid("ToolRule", "arguments", "a mapping with str keys", value)


@attrs.frozen(kw_only=True)
class ToolRule:
    """When the last message (the user's, or a tool result) contains ``when``
    (case-insensitive; a phrase, not a pattern, so matching stays linear), call
    ``tool`` with ``arguments``, or answer ``text``. A rule fires at most once per user
    turn, and a ``tool`` rule only when the request declares that tool."""

    when: str
    tool: str | None = None
    arguments: Mapping[str, Any] = attrs.field(factory=dict, validator=_check_arguments)
    text: str | None = None

    def __attrs_post_init__(self) -> None:
        check_text("ToolRule", "when", self.when)
        check_optional_text("ToolRule", "tool", self.tool)
        if self.text is not None and not isinstance(self.text, str):
            raise invalid("ToolRule", "text", "a str or None", self.text)
        if (self.tool is None) == (self.text is None):
            raise invalid(
                "ToolRule", "tool", "given exactly when text is not", self.tool, error=ValueError
            )

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON-ready data (``ToolRule(**data)`` reads it back)."""
        data: dict[str, Any] = {"when": self.when}
        if self.tool is not None:
            data["tool"] = self.tool
            data["arguments"] = dict(self.arguments)
        else:
            data["text"] = self.text
        return data


def check_rule(name: str, value: object) -> ToolRule:
    """``value`` when it is a ``ToolRule`` (for ``check_items``)."""
    if not isinstance(value, ToolRule):
        raise invalid("ServerOptions", name, "a ToolRule", value)
    return value
