"""The internal face of ``rampart.strategies``: what other rooms take from its private modules.

For the shaping helpers the attacks and probes build their results with (the response
metadata and the turns nothing observed). What is not here comes from
``rampart.strategies`` itself; how the face loads is in ``docs/architecture.md``
("Internal faces").
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
