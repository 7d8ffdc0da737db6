"""The package layers hold (``docs/architecture.md``).

Every import counts: at module level, inside a function, and under ``TYPE_CHECKING``
(a typing-only import is still a dependency, and it hides a cycle rather than removing
it). No module of rampart takes part in an import cycle; no module imports from a
higher layer except the compatibility re-exports, which say so with ``COMPAT_MARK``;
the model imports no engine, codec or anyio, and the codec no engine.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "rampart"

# The one kind of module allowed to import from a higher layer: an old public path
# kept as a thin re-export. Each says so with this line; the set below is the list.
COMPAT_MARK = (
    "# layering: compatibility re-export, the one kind of module that may import a higher layer"
)
CORE_COMPAT_SHIMS = {
    "rampart.core.execution",
    "rampart.core.serialization",
    "rampart.core.trace",
    "rampart.core.trials",
}

# The layers, lowest first (``docs/architecture.md``, "The rooms"). A module belongs to
# the layer of its longest listed prefix; ``rampart`` itself is the top.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "rampart._aimd",
        "rampart._checks",
        "rampart._concurrency",
        "rampart._lazy",
        "rampart._planted",
        "rampart._redact",
        "rampart._runs",
        "rampart._seen_calls",
        "rampart._slowdown",
        "rampart._text",
        "rampart._version",
        "rampart.common",
    ),
    ("rampart.core", "rampart._session"),
    ("rampart.codec",),
    ("rampart.engine",),
    ("rampart.strategies",),
    (
        "rampart.adapters",
        "rampart.attacks",
        "rampart.converters",
        "rampart.drivers",
        "rampart.evaluators",
        "rampart.limits",
        "rampart.llm",
        "rampart.payloads",
        "rampart.probes",
        "rampart.risk",
    ),
    ("rampart.pytest_plugin", "rampart.reporting", "rampart.testing"),
    # Integrations and ready-made scans: built on the plugin and the reports.
    ("rampart.agentdojo", "rampart.scan"),
    # The command line runs all of the above (``rampart scan`` runs the scans).
    ("rampart.cli",),
    ("rampart", "rampart.__main__"),
)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(
    path: Path, *, module_level_only: bool = False, run_time_only: bool = False
) -> set[str]:
    """Every module ``path`` imports; ``run_time_only`` leaves ``TYPE_CHECKING`` blocks out,
    ``module_level_only`` function bodies."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if run_time_only and isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other)
                continue
            visit_one(child)

    def visit_one(node: ast.AST) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else node.module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and module_level_only:
            return
        visit(node)

    visit(ast.parse(path.read_text(encoding="utf-8")))
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize(
    "module",
    sorted(m for m in MODULES if _within(m, "rampart.core") and m not in CORE_COMPAT_SHIMS),
)
def test_model_imports_no_engine_codec_or_anyio(module: str) -> None:
    """``rampart.core`` is the model: no engine or codec at all, no anyio at import time.

    (Its package answers RAMPART's engine names through the compatibility modules, by
    name, on first access.)
    """
    anywhere = _imports(MODULES[module])
    at_import = _imports(MODULES[module], module_level_only=True, run_time_only=True)
    assert {m for m in anywhere if _within(m, "rampart.engine") or _within(m, "rampart.codec")} == (
        set()
    )
    assert {m for m in at_import if m.split(".")[0] in ("anyio", "trio")} == set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, "rampart.codec")))
def test_codec_imports_no_engine(module: str) -> None:
    """The codec is a projection of the model; it never needs the engine."""
    imported = _imports(MODULES[module])
    assert {m for m in imported if _within(m, "rampart.engine")} == set()
    at_import = _imports(MODULES[module], run_time_only=True)
    assert {m for m in at_import if m.split(".")[0] in ("anyio", "trio")} == set()


def test_importing_the_model_loads_no_engine() -> None:
    """``import rampart.core`` (and every model module) stays free of anyio and the engine."""
    model = [m for m in MODULES if _within(m, "rampart.core") and m not in CORE_COMPAT_SHIMS]
    code = (
        "import sys, importlib\n"
        f"for name in {sorted(model)!r}: importlib.import_module(name)\n"
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('anyio', 'trio', "
        "'cattrs') or m.startswith(('rampart.engine', 'rampart.codec')))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def strong(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                strong(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            strong(node)
    return found


def test_no_import_cycles() -> None:
    """No two modules import each other, directly or through others (function-local and
    ``TYPE_CHECKING`` imports included: they hide a cycle, they do not remove it)."""
    edges = {name: _imports(path) & set(MODULES) for name, path in MODULES.items()}
    assert _cycles(edges) == []


def _layer(module: str) -> int:
    """The index in ``LAYERS`` of ``module``'s longest listed prefix."""
    best, length = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if _within(module, prefix) and len(prefix) > length:
                best, length = index, len(prefix)
    assert best >= 0, f"{module} belongs to no layer: add it to LAYERS"
    return best


def test_imports_point_down_except_in_compatibility_modules() -> None:
    """An import from a higher layer is a compatibility re-export, marked as one."""
    upward = sorted(
        f"{name} -> {target}"
        for name, path in MODULES.items()
        if name not in CORE_COMPAT_SHIMS
        for target in _imports(path) & set(MODULES)
        if _layer(target) > _layer(name)
    )
    assert upward == []


def test_the_compatibility_modules_are_marked() -> None:
    """Exactly the listed modules carry the mark, and each does import a higher layer
    (so neither the list nor the mark can drift from what the code does)."""
    marked = {name for name, path in MODULES.items() if COMPAT_MARK in path.read_text("utf-8")}
    assert marked == CORE_COMPAT_SHIMS
    for name in CORE_COMPAT_SHIMS:
        targets = _imports(MODULES[name]) & set(MODULES)
        assert any(_layer(target) > _layer(name) for target in targets), name


def test_the_layer_finder_orders_the_rooms() -> None:
    """The layer lookup itself: the longest prefix wins, and the order is the picture's."""
    assert _layer("rampart._checks") < _layer("rampart.core.types") < _layer("rampart.codec")
    assert _layer("rampart.codec._json") < _layer("rampart.engine._trace")
    assert _layer("rampart.engine") < _layer("rampart.attacks._xpia") < _layer("rampart.cli")
    assert _layer("rampart.cli") < _layer("rampart")


def test_cycle_finder_finds_a_cycle() -> None:
    """The finder itself reports a planted cycle (so an empty answer means something)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
