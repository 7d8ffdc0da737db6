"""The internal face of ``rampart.strategies``: the private names other rooms use.

For the shaping helpers a strategy outside this room (the XPIA attack) builds its result
with. What is not here comes from ``rampart.strategies`` itself; how the face loads is
in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.strategies._shaping import collect_response_metadata, unobserved_turns

_FACE = {
    "collect_response_metadata": "rampart.strategies._shaping",
    "unobserved_turns": "rampart.strategies._shaping",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "collect_response_metadata",
    "unobserved_turns",
]
