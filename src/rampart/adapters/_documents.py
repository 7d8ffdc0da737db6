"""How request attachments travel inside a chat message, and how a server reads them back.

The chat-completions dialect has no attachment type, so the adapter appends every
attachment to the user message as a delimited block::

    <prompt>

    ----- BEGIN DOCUMENT id="3f2a9c1b0d4e" format="text" -----
    <content, verbatim>
    ----- END DOCUMENT id="3f2a9c1b0d4e" -----

Ids and formats are JSON strings, so any id renders unambiguously. Content is sent as
is, never escaped: an injected payload must reach the agent exactly as an attacker
wrote it. ``split_documents`` is the inverse the test server uses.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rampart.core.types import Request

__all__ = ["Document", "render_user_content", "split_documents"]

_JSON_STRING = r'"(?:[^"\\\n]|\\.)*"'
_BLOCK = re.compile(
    rf"^----- BEGIN DOCUMENT id=(?P<id>{_JSON_STRING}) format=(?P<format>{_JSON_STRING}) -----\n"
    r"(?P<content>.*?)\n"
    r"----- END DOCUMENT id=(?P=id) -----$",
    re.MULTILINE | re.DOTALL,
)


class Document(NamedTuple):
    """One attachment recovered from a user message."""

    id: str
    format: str
    content: str


def _begin(document_id: str, document_format: str) -> str:
    return (
        f"----- BEGIN DOCUMENT id={json.dumps(document_id)} "
        f"format={json.dumps(document_format)} -----"
    )


def _end(document_id: str) -> str:
    return f"----- END DOCUMENT id={json.dumps(document_id)} -----"


def render_user_content(request: Request) -> str:
    """The user message text for ``request``: the prompt, then one block per attachment."""
    parts: list[str] = []
    if request.prompt is not None:
        parts.append(request.prompt)
    for attachment in request.attachments:
        parts.append(
            f"{_begin(attachment.id, attachment.format.value)}\n"
            f"{attachment.content}\n{_end(attachment.id)}"
        )
    return "\n\n".join(parts)


def split_documents(text: str) -> tuple[str, list[Document]]:
    """``(prompt, documents)``: the text outside document blocks (stripped) and the blocks."""
    documents: list[Document] = []

    def take(match: re.Match[str]) -> str:
        documents.append(
            Document(
                id=json.loads(match["id"]),
                format=json.loads(match["format"]),
                content=match["content"],
            )
        )
        return ""

    prompt = _BLOCK.sub(take, text)
    return prompt.strip(), documents
