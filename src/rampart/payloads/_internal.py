"""The internal face of ``rampart.payloads``: what other rooms take from its private modules.

For the process-wide register of planted payloads (the XPIA attack writes it, the LLM
judge's prompt reads it) and the tool-text helpers the AgentDojo integration and the
test server read payloads with. What is not here comes from ``rampart.payloads`` itself;
how the face loads is in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.payloads._planted import payload_pieces, remember_planted
    from rampart.payloads._tool_text import follows, letters, read_text

_FACE = {
    "payload_pieces": "rampart.payloads._planted",
    "remember_planted": "rampart.payloads._planted",
    "follows": "rampart.payloads._tool_text",
    "letters": "rampart.payloads._tool_text",
    "read_text": "rampart.payloads._tool_text",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "follows",
    "letters",
    "payload_pieces",
    "read_text",
    "remember_planted",
]
