"""Lazy re-exports (PEP 562): keep ``import rampart`` cheap.

The engine, trials and rate limiting pull in anyio and a good deal of code; the value
types do not. Packages list the names they re-export lazily and where each lives; the
first attribute access imports that module and caches the value in the package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str,
    namespace: dict[str, Any],
    lazy: dict[str, str],
    *,
    uncached: frozenset[str] = frozenset(),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose ``lazy`` names load on access.

    A name in ``uncached`` is looked up in its module at every access instead of being
    copied into the package: its module holds per-run state (context variables), and a
    harness that unloads and reloads modules between runs (pytester's in-process runs)
    must reach the module that is loaded now, not the first one.
    """

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if name not in uncached:
            namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
