"""The internal face of ``rampart.converters``: what other rooms take from its private modules.

For the converter chain (its check and its application), which the payload generator
runs each generated payload through. What is not here comes from ``rampart.converters``
itself; how the face loads is in ``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.converters._chain import apply_converters, check_converters

_FACE = {
    "apply_converters": "rampart.converters._chain",
    "check_converters": "rampart.converters._chain",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "apply_converters",
    "check_converters",
]
