"""Reading how long a server asks us to wait: ``retry-after-ms`` and ``Retry-After``.

The parser lives with the other rate-limit signals in ``rampart.limits``; it is
re-exported here for the adapters' own imports.
"""

from __future__ import annotations

from rampart.limits import parse_retry_after

__all__ = ["parse_retry_after"]
