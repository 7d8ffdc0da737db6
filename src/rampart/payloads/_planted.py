"""Payloads planted in this process, so an LLM judge can show them by id, never verbatim.

An XPIA attack plants payloads through injection handles; the agent then reads them
(a ``read_document`` tool result) and may echo them (its answer, an e-mail body). The
judge must never read that content: it could be steered by the very injection it is
judging, and planted secrets would travel to its endpoint. So the attack remembers
each payload it plants here (:func:`remember_planted`, for handles that expose their
``payload``), and the judge's transcript replaces every occurrence of a remembered
payload -- whole, or any line or sentence of it of at least :data:`MIN_PIECE_CHARS`
characters -- by ``[payload <id>]`` (:func:`payload_pieces`).

The memory is per process (an xdist worker remembers what it planted), bounded
(:data:`MAX_PAYLOADS`, the least recently planted forgotten first) and holds no more
than :data:`MAX_CONTENT_CHARS` characters of any payload. Only the standard library
is imported, and ``rampart.payloads`` loads its own names on first access, so the
attacks and the judge load this module without the rest of the payloads room.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_PAYLOADS",
    "MIN_PIECE_CHARS",
    "clear_planted",
    "payload_pieces",
    "pieces_of",
    "planted_pieces",
    "remember_planted",
]

MAX_PAYLOADS = 256
"""How many distinct planted payloads are remembered."""

MAX_CONTENT_CHARS = 65_536
"""Longer payload content is remembered by its first lines and sentences only."""

MIN_PIECE_CHARS = 16
"""Shorter lines or sentences of a payload are not replaced on their own (too common)."""

_PIECES = re.compile(r"(?<=[.!?;])\s+|\n+")

_lock = threading.Lock()
_remembered: OrderedDict[tuple[str, str], None] = OrderedDict()
_snapshot: tuple[tuple[str, str], ...] = ()


def pieces_of(content: str, payload_id: str) -> list[tuple[str, str]]:
    """``(text, token)`` pairs that stand for ``content``: the whole text, then each of
    its lines and sentences of at least :data:`MIN_PIECE_CHARS` characters."""
    token = f"[payload {payload_id}]" if payload_id else "[payload]"
    content = content[:MAX_CONTENT_CHARS]
    pieces = [(content.strip(), token)] if content.strip() else []
    for piece in _PIECES.split(content):
        piece = piece.strip()
        if len(piece) >= MIN_PIECE_CHARS:
            pieces.append((piece, token))
    return pieces


def _rebuild() -> None:
    global _snapshot
    found: dict[str, str] = {}
    for content, payload_id in _remembered:
        for piece, token in pieces_of(content, payload_id):
            found.setdefault(piece, token)
    _snapshot = tuple(sorted(found.items(), key=lambda item: -len(item[0])))


def remember_planted(handles: Iterable[object]) -> None:
    """Remember the payload of every handle that exposes one (``handle.payload``)."""
    for handle in handles:
        payload = getattr(handle, "payload", None)
        content = getattr(payload, "content", None)
        payload_id = getattr(payload, "id", None)
        if not isinstance(content, str) or not content.strip():
            continue
        key = (content[:MAX_CONTENT_CHARS], payload_id if isinstance(payload_id, str) else "")
        if key in _remembered:
            continue  # the common case: trials plant the same payload again
        with _lock:
            _remembered[key] = None
            while len(_remembered) > MAX_PAYLOADS:
                _remembered.popitem(last=False)
            _rebuild()


def planted_pieces() -> tuple[tuple[str, str], ...]:
    """Every remembered ``(text, token)`` pair, longest text first."""
    return _snapshot


def payload_pieces(payloads: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The pieces of ``payloads`` (``(content, id)`` pairs) and of every planted payload,
    longest first: what a transcript replaces."""
    found = dict(planted_pieces())
    for content, payload_id in payloads:
        for piece, token in pieces_of(content, payload_id):
            found.setdefault(piece, token)
    return tuple(sorted(found.items(), key=lambda item: -len(item[0])))


def clear_planted() -> None:
    """Forget every planted payload (for tests)."""
    global _snapshot
    with _lock:
        _remembered.clear()
        _snapshot = ()
