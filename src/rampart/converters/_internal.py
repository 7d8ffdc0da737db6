"""The internal face of ``rampart.converters``: the private names other rooms use.

For the converter chain, which the attacks and probes apply to each prompt. What is not
here comes from ``rampart.converters`` itself; how the face loads is in
``docs/architecture.md`` ("Internal faces").
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
