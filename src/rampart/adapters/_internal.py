"""The internal face of ``rampart.adapters``: what other rooms take from its private modules.

For the HTTP client plumbing, the completion parser, the document splitter and the
guarded session, which the LLM client, the test servers and the simulated agents share
with the adapters. What is not here comes from ``rampart.adapters`` itself; how the face
loads is in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.adapters._documents import split_documents
    from rampart.adapters._http import ClientUsers, close_client, new_client, post_json
    from rampart.adapters._parse import parse_completion
    from rampart.adapters._session import GuardedSession

_FACE = {
    "split_documents": "rampart.adapters._documents",
    "ClientUsers": "rampart.adapters._http",
    "close_client": "rampart.adapters._http",
    "new_client": "rampart.adapters._http",
    "post_json": "rampart.adapters._http",
    "parse_completion": "rampart.adapters._parse",
    "GuardedSession": "rampart.adapters._session",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "ClientUsers",
    "GuardedSession",
    "close_client",
    "new_client",
    "parse_completion",
    "post_json",
    "split_documents",
]
