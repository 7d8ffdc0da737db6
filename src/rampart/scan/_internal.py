"""The internal face of ``rampart.scan``: what other rooms take from its private modules.

For the scans' settings (the environment variable each scan suite reads, and its parsed
form), which ``rampart scan`` passes to the suite it runs. What is not here comes from
``rampart.scan`` itself; how the face loads is in ``docs/architecture.md`` ("Internal
faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.scan._agentdojo_config import AGENTDOJO_ENV_VAR, ScanConfig
    from rampart.scan._xpia_config import DEFAULT_TRIGGER, XPIA_ENV_VAR, XpiaScanConfig

_FACE = {
    "AGENTDOJO_ENV_VAR": "rampart.scan._agentdojo_config",
    "ScanConfig": "rampart.scan._agentdojo_config",
    "DEFAULT_TRIGGER": "rampart.scan._xpia_config",
    "XPIA_ENV_VAR": "rampart.scan._xpia_config",
    "XpiaScanConfig": "rampart.scan._xpia_config",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "AGENTDOJO_ENV_VAR",
    "DEFAULT_TRIGGER",
    "ScanConfig",
    "XPIA_ENV_VAR",
    "XpiaScanConfig",
]
