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

import bisect
import json
import re
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from rampart.core.types import Request

__all__ = ["Document", "render_user_content", "split_documents"]

_JSON_STRING = r'"(?:[^"\\\n]|\\.)*"'
_BEGIN = re.compile(
    rf"^----- BEGIN DOCUMENT id=(?P<id>{_JSON_STRING}) format=(?P<format>{_JSON_STRING}) -----\n",
    re.MULTILINE,
)
_END = re.compile(rf"^----- END DOCUMENT id=(?P<id>{_JSON_STRING}) -----$", re.MULTILINE)


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
    """``(prompt, documents)``: the text outside document blocks (stripped) and the blocks.

    A block runs from its BEGIN line to the first END line with the same id after it
    (a BEGIN line without one is prompt text). Linear time on any text: the END lines
    are indexed in one pass, so a message of many unclosed BEGIN lines is not searched
    to its end once per line.
    """
    ends: dict[str, list[int]] = {}
    for end in _END.finditer(text):
        ends.setdefault(end["id"], []).append(end.start())
    documents: list[Document] = []
    prompt: list[str] = []
    kept = 0
    begin = _BEGIN.search(text)
    while begin is not None:
        starts = ends.get(begin["id"], [])
        # The content may be empty: the END line then starts one newline after BEGIN's.
        found = bisect.bisect_left(starts, begin.end() + 1)
        if found == len(starts):
            begin = _BEGIN.search(text, begin.start() + 1)
            continue
        end_at = starts[found]
        documents.append(
            Document(
                id=json.loads(begin["id"]),
                format=json.loads(begin["format"]),
                content=text[begin.end() : end_at - 1],
            )
        )
        prompt.append(text[kept : begin.start()])
        kept = _line_end(text, end_at)
        begin = _BEGIN.search(text, kept)
    prompt.append(text[kept:])
    return "".join(prompt).strip(), documents


def _line_end(text: str, start: int) -> int:
    """Where the line starting at ``start`` ends (its newline stays in the text)."""
    end = text.find("\n", start)
    return len(text) if end < 0 else end
