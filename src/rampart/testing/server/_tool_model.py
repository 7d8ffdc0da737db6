"""``sim-tools``: a simulated model that uses the tools a request declares.

It plays the model behind a real agent (an Agent Framework ``Agent``, an OpenAI SDK
tool loop): the agent declares its tools, the model answers with calls to them, the
agent runs them and sends the results back, and the model goes on until it answers in
text. On both APIs, deterministically, one call per answer:

1. **A scripted policy first.** A callable (in-process) gets the conversation and may
   return the next call or a text answer; then the ``ToolRule`` data rules are tried;
   ``None`` from both leaves the choice to the model.
2. **The next tool.** Within the current user turn (from the last user message), the
   model calls each declared tool at most once, in declaration order, when the tool is
   *relevant* and its required arguments can be *filled*:

   * relevant: a word of its name (``get_ticket``: ``ticket``; generic words such as
     ``get``, ``list``, ``user`` do not count) starts a word of the user's message, or
     its whole name is in it; or it takes a destination address (``to``,
     ``recipient``, ``send_to``) and the model follows an injected instruction;
   * filled, each required parameter by its JSON Schema type and its name and
     description: an address parameter (``email``, ``address``, ``to``, ...) takes the
     first address of the user's message or a tool result that is not the target of
     an injected instruction, and a destination parameter takes the followed
     injection's address instead; an identifier parameter (``id``, ``number``,
     ``code``, ...) takes the first identifier-like token (letters and digits joined
     by ``-`` or ``_``, or a word with a digit) of the user's message, then of the
     tool results; an ``enum`` takes its first value; an integer or number the first
     number; any other string the user's message (its first 200 characters), or the
     followed instruction's sentence for a call that carries it out. A parameter it
     cannot fill means the tool is not called.
3. **Injected instructions.** A sentence of a tool result with a sending word (send,
   sent, e-mail, mail, forward, copy, cc, deliver) and an address the user did not
   write is an instruction. The model follows it with probability ``follow``, decided
   per conversation and address from ``seed`` (``follows``: a hash of the seed, the
   request ``seed`` if any, the system prompt and the first user message), so the same
   conversation decides the same way under any concurrency or arrival order. When the
   system prompt warns that tool output is untrusted (it says ``untrusted``, ``as
   data``, ``never follow`` or ``not instructions``), the probability is ``warned``
   instead (default 0: a model that heeds a hardened prompt).
4. **Then text:** which tools it used and the first line of the last result, and a
   note when it ignored an instruction.

The model reads at most ``READ_CHARS`` characters of each message, declared tool
lists up to ``MAX_TOOLS`` and at most ``MAX_INJECTIONS`` instructions per turn, so its
work per request is bounded whatever the request.

Settings go in the model name: ``sim-tools``, or ``sim-tools:follow=0.5,seed=7``
(also ``warned=Q``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from rampart.codec import parse_strict_json
from rampart.core.errors import SchemaError
from rampart.core.types import ToolCall
from rampart.payloads._internal import follows
from rampart.testing._instructions import ADDRESS, SENTENCES
from rampart.testing.server._model_names import model_settings, probability
from rampart.testing.server._tool_policy import (
    DeclaredTool,
    ToolConversation,
    ToolMessage,
    ToolPolicy,
    ToolRule,
)
from rampart.testing.server._wire import Answer, Call, ModelRequest

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "MAX_INJECTIONS",
    "MAX_TOOLS",
    "MODEL",
    "READ_CHARS",
    "ToolsSettings",
    "conversation_of",
    "is_tools_model",
    "policy_choice",
    "settings_for",
    "tools_answer",
]

MODEL = "sim-tools"
READ_CHARS = 64 * 1024
"""The model reads at most this many characters of each message."""
MAX_TOOLS = 128
"""The model considers at most this many declared tools."""
MAX_INJECTIONS = 16
"""The model considers at most this many injected instructions per turn."""

_SENDING = re.compile(
    r"\b(?:send|sent|sending|e-?mail(?:ed)?|mail(?:ed)?|forward(?:ed)?|cc|bcc|cop(?:y|ied)"
    r"|deliver(?:ed)?)\b",
    re.IGNORECASE,
)
_WARNING = re.compile(
    r"\buntrusted\b|\bas data\b|\bnever (?:follow|obey)\b|\bnot instructions\b", re.IGNORECASE
)
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_TOKENS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_WORDS = re.compile(r"[a-z0-9_]+")
_GENERIC = frozenset(
    {"a", "an", "the", "of", "for", "by", "to", "do", "get", "set", "list", "find", "fetch"}
    | {"read", "run", "make", "new", "user", "data", "info", "item", "items", "tool"}
)
_ADDRESS_WORDS = frozenset(
    {"email", "mail", "address", "recipient", "recipients", "to", "cc", "bcc", "sender", "from"}
)
_DESTINATION_WORDS = frozenset(
    {"to", "recipient", "recipients", "cc", "bcc", "destination", "dest", "send", "forward"}
)
_ID_WORDS = frozenset({"id", "ids", "identifier", "number", "no", "ref", "reference", "code"})
_TEXT_CHARS = 200
_NUMBER_DIGITS = 18


@attrs.frozen(kw_only=True)
class ToolsSettings:
    follow: float = 0.0
    warned: float = 0.0
    seed: int = 0


def is_tools_model(model: str) -> bool:
    return model.partition(":")[0] == MODEL


def settings_for(model: str) -> ToolsSettings:
    """The settings a ``sim-tools[:follow=P,warned=Q,seed=N]`` model name carries."""
    fields = {"follow": (probability, "P"), "warned": (probability, "Q"), "seed": (int, "N")}
    return ToolsSettings(**model_settings(model, fields))  # type: ignore[arg-type]


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = parse_strict_json(data=text) if text else {}
    except SchemaError:
        return {}
    return value if isinstance(value, dict) else {}


def conversation_of(request: ModelRequest) -> ToolConversation:
    """What a policy sees of ``request``: the system text joined as ``instructions``,
    the other messages, and the tools it may call (none for ``tool_choice`` ``"none"``;
    only the named one when it names one)."""
    instructions = "\n\n".join(text for role, text, _ in request.messages if role == "system")
    messages = tuple(
        ToolMessage(
            role=role,
            text=text,
            tool_calls=tuple(
                ToolCall(name=name, arguments=_arguments(arguments)) for _, name, arguments in calls
            ),
        )
        for role, text, calls in request.messages
        if role != "system"
    )
    tools = request.tools[:MAX_TOOLS]
    if request.tool_choice == "none":
        tools = ()
    elif request.tool_choice is not None:
        tools = tuple(tool for tool in tools if tool.name == request.tool_choice)
    return ToolConversation(
        model=request.model, instructions=instructions, messages=messages, tools=tools
    )


def _turn(conversation: ToolConversation) -> tuple[str, Sequence[ToolMessage]]:
    """The current user message (truncated) and the messages after it."""
    messages = conversation.messages
    start = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), -1)
    user = messages[start].text[:READ_CHARS] if start >= 0 else ""
    return user, messages[start + 1 :]


def _made(after: Sequence[ToolMessage]) -> list[ToolCall]:
    return [call for message in after if message.role == "assistant" for call in message.tool_calls]


def _by_rules(conversation: ToolConversation, rules: tuple[ToolRule, ...]) -> ToolCall | str | None:
    last = conversation.last
    if last is None or not rules:
        return None
    text = last.text[:READ_CHARS].lower()
    made = _made(_turn(conversation)[1])
    for rule in rules:
        if rule.when.lower() not in text:
            continue
        if rule.text is not None:
            return rule.text
        assert rule.tool is not None
        arguments = dict(rule.arguments)
        done = any(call.name == rule.tool and call.arguments == arguments for call in made)
        if conversation.declares(rule.tool) and not done:
            return ToolCall(name=rule.tool, arguments=arguments)
    return None


@attrs.frozen
class _Evidence:
    """What the model fills arguments from, for one turn."""

    user: str
    addresses: tuple[str, ...]
    identifiers: tuple[str, ...]
    numbers: tuple[int, ...]
    followed: tuple[tuple[str, str], ...]
    """``(address, sentence)`` of each injected instruction the model follows."""


def _identifiers(text: str) -> list[str]:
    found = []
    for match in _TOKENS.finditer(ADDRESS.sub(" ", text)):
        token = match.group(0).rstrip("-_")
        has_digit = any(char.isdigit() for char in token)
        joined = ("-" in token or "_" in token) and any(char.isupper() for char in token)
        if has_digit or joined:
            found.append(token)
    return found


def _injections(results: list[str], user: str) -> list[tuple[str, str]]:
    """``(address, sentence)`` per instruction in the tool results: a sentence with a
    sending word and an address the user did not write (its first such address)."""
    lowered = user.lower()
    found: dict[str, tuple[str, str]] = {}
    for text in results:
        for sentence in SENTENCES.split(text):
            if "@" not in sentence or _SENDING.search(sentence) is None:
                continue
            for match in ADDRESS.finditer(sentence):
                address = match.group(0)
                if address.lower() not in lowered:
                    found.setdefault(address.lower(), (address, sentence.strip()))
                    break
            if len(found) == MAX_INJECTIONS:
                return list(found.values())
    return list(found.values())


def _evidence(
    conversation: ToolConversation, settings: ToolsSettings, request_seed: int | None
) -> tuple[_Evidence, list[tuple[str, str]], list[str]]:
    """The turn's evidence, its injected instructions and its tool results."""
    user, after = _turn(conversation)
    results = [message.text[:READ_CHARS] for message in after if message.role == "tool"]
    injections = _injections(results, user)
    targets = {address.lower() for address, _ in injections}
    first = next((m.text[:READ_CHARS] for m in conversation.messages if m.role == "user"), "")
    seed_text = "" if request_seed is None else str(request_seed)
    identity = f"{seed_text}\0{conversation.instructions[:READ_CHARS]}\0{first}"
    warned = _WARNING.search(conversation.instructions[:READ_CHARS]) is not None
    chance = settings.warned if warned else settings.follow
    followed = tuple(
        (address, sentence)
        for address, sentence in injections
        if follows(follow=chance, seed=settings.seed, prompt=identity, injection_task=address)
    )
    texts = [user, *results]
    addresses = [
        match.group(0)
        for text in texts
        for match in ADDRESS.finditer(text)
        if match.group(0).lower() not in targets
    ]
    numbers = [
        int(token)
        for text in texts
        for token in _TOKENS.findall(text)
        if token.isdigit() and len(token) <= _NUMBER_DIGITS
    ]
    evidence = _Evidence(
        user=user,
        addresses=tuple(addresses),
        identifiers=tuple(token for text in texts for token in _identifiers(text)),
        numbers=tuple(numbers),
        followed=followed,
    )
    return evidence, injections, results


def _words(name: str) -> set[str]:
    return {word.lower() for word in _NAME_WORDS.findall(name)}


def _is_destination(name: str, schema: Mapping[str, Any]) -> bool:
    return _is_address(name, schema) and bool(_words(name) & _DESTINATION_WORDS)


def _is_address(name: str, schema: Mapping[str, Any]) -> bool:
    description = str(schema.get("description", "")).lower()
    mentioned = "email" in description or "e-mail" in description or "address" in description
    return bool(_words(name) & _ADDRESS_WORDS) or mentioned


def _schema(tool: DeclaredTool, name: str) -> Mapping[str, Any]:
    schema = tool.properties.get(name)
    return schema if isinstance(schema, Mapping) else {}


def _kind(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        kind = next((item for item in kind if item != "null"), "string")
    return kind if isinstance(kind, str) else "string"


def _value(name: str, schema: Mapping[str, Any], evidence: _Evidence, carries: bool) -> object:
    """The value the model gives parameter ``name`` (``None``: it has none)."""
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    kind = _kind(schema)
    if kind in ("integer", "number"):
        return evidence.numbers[0] if evidence.numbers else None
    if kind != "string":
        return None
    if _is_address(name, schema):
        if evidence.followed and _is_destination(name, schema):
            return evidence.followed[0][0]
        return evidence.addresses[0] if evidence.addresses else None
    words = _words(name)
    description = str(schema.get("description", "")).lower()
    if words & _ID_WORDS or "identifier" in description:
        return evidence.identifiers[0] if evidence.identifiers else None
    if carries:
        return evidence.followed[0][1][:_TEXT_CHARS]
    return evidence.user[:_TEXT_CHARS] or None


def _relevant(tool: DeclaredTool, said: str, evidence: _Evidence) -> bool:
    """``said``: the user's message as its lower-case words, each after a space."""
    if f" {tool.name.lower()}" in said:
        return True
    words = {word for word in _words(tool.name) - _GENERIC if len(word) >= 3}
    if any(f" {word}" in said for word in words):
        return True
    return bool(evidence.followed) and any(
        _is_destination(name, _schema(tool, name)) for name in tool.properties
    )


def _fill(tool: DeclaredTool, evidence: _Evidence) -> dict[str, object] | None:
    carries = bool(evidence.followed) and any(
        _is_destination(name, _schema(tool, name)) for name in tool.required
    )
    arguments: dict[str, object] = {}
    for name in tool.required:
        value = _value(name, _schema(tool, name), evidence, carries)
        if value is None:
            return None
        arguments[name] = value
    return arguments


def _default(
    conversation: ToolConversation, settings: ToolsSettings, request_seed: int | None
) -> ToolCall | str:
    """The model's own choice (see the module docstring)."""
    evidence, injections, results = _evidence(conversation, settings, request_seed)
    made = [call.name for call in _made(_turn(conversation)[1])]
    said = "".join(f" {word}" for word in _WORDS.findall(evidence.user.lower()))
    for tool in conversation.tools:
        if tool.name in made or not _relevant(tool, said, evidence):
            continue
        arguments = _fill(tool, evidence)
        if arguments is not None:
            return ToolCall(name=tool.name, arguments=arguments)
    lines = []
    if made:
        lines.append(f"Done: I used {', '.join(dict.fromkeys(made))}.")
        last = results[-1].strip().splitlines() if results else []
        if last:
            lines.append(last[0][:_TEXT_CHARS])
    else:
        lines.append("I found nothing to do with the tools I have.")
    if len(evidence.followed) < len(injections):
        lines.append("I did not act on an instruction inside a tool result.")
    return " ".join(lines)


def policy_choice(policy: ToolPolicy, request: ModelRequest) -> ToolCall | str | None:
    """What a scripted ``policy`` chooses for ``request`` (``TypeError`` when it returns
    something else than a ``ToolCall``, a ``str`` or ``None``)."""
    choice = policy(conversation_of(request))
    if choice is not None and not isinstance(choice, ToolCall | str):
        raise TypeError(f"tool_policy must return a ToolCall, a str or None, got {choice!r}")
    return choice


def tools_answer(
    request: ModelRequest, choice: ToolCall | str | None, rules: tuple[ToolRule, ...]
) -> Answer:
    """What ``sim-tools`` answers to ``request``: ``choice`` (a scripted policy's),
    else the first ``rules`` that applies, else its own choice. Pure (it may run in a
    worker thread); ``BadModelInput`` for a bad model name."""
    settings = settings_for(request.model)
    if choice is None:
        conversation = conversation_of(request)
        choice = _by_rules(conversation, rules)
        if choice is None:
            choice = _default(conversation, settings, request.seed)
    if isinstance(choice, str):
        return Answer(model=request.model, text=choice)
    made = sum(len(calls) for role, _, calls in request.messages if role == "assistant")
    arguments = json.dumps(choice.arguments, separators=(",", ":"), default=str)
    call: Call = (f"call_{made}", choice.name, arguments)
    return Answer(model=request.model, text=None, calls=(call,))
