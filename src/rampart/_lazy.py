"""Lazy re-exports (PEP 562): keep ``import rampart`` cheap.

The engine, trials and rate limiting pull in anyio and a good deal of code; the value
types do not. Packages list the names they re-export lazily and where each lives; the
first attribute access imports that module and caches the value in the package.

The import goes through the package's own ``import_module`` when it has one (RAMPART
binds ``importlib.import_module`` at ``rampart.import_module``, and client tests patch
that name to check what loads on demand).
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
    submodules: frozenset[str] = frozenset(),
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package whose ``lazy`` names load on access.

    A name in ``uncached`` is looked up in its module at every access instead of being
    copied into the package: its module holds per-run state (context variables), and a
    harness that unloads and reloads modules between runs (pytester's in-process runs)
    must reach the module that is loaded now, not the first one.

    A name in ``submodules`` is the package's submodule of that name, imported on
    access: what an eager ``__init__`` used to make an attribute as a side effect.
    """

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        # RAMPART loads its heavy exports through the package's own ``import_module``
        # binding, which its tests patch; it is used when the package defines one.
        importer = namespace.get("import_module", importlib.import_module)
        value = getattr(importer(module), name)
        if name not in uncached:
            namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
