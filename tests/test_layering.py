"""The package layers hold: the model imports no engine or anyio, the codec no engine,
and no module of rampart takes part in an import cycle (``docs/architecture.md``)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "rampart"

# Old public paths kept as thin re-exports of the engine and the codec.
CORE_COMPAT_SHIMS = {
    "rampart.core.execution",
    "rampart.core.serialization",
    "rampart.core.trace",
    "rampart.core.trials",
}


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


def _imports(path: Path, *, module_level_only: bool = False) -> set[str]:
    """Every module ``path`` imports at run time (``TYPE_CHECKING`` blocks excluded)."""
    found: set[str] = set()

    def visit(node: ast.AST, *, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    visit_one(other, top=top)
                continue
            visit_one(child, top=top)

    def visit_one(node: ast.AST, *, top: bool) -> None:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in MODULES else node.module)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and module_level_only:
            return
        visit(node, top=top)

    visit(ast.parse(path.read_text(encoding="utf-8")), top=True)
    return found


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


@pytest.mark.parametrize(
    "module",
    sorted(m for m in MODULES if _within(m, "rampart.core") and m not in CORE_COMPAT_SHIMS),
)
def test_model_imports_no_engine_codec_or_anyio(module: str) -> None:
    """``rampart.core`` is the model: no engine or codec at all, no anyio at import time.

    The package itself forwards RAMPART's engine names on first access (its
    ``__getattr__``), so for it only what runs at import time counts.
    """
    anywhere = _imports(MODULES[module], module_level_only=module == "rampart.core")
    at_import = _imports(MODULES[module], module_level_only=True)
    assert {m for m in anywhere if _within(m, "rampart.engine") or _within(m, "rampart.codec")} == (
        set()
    )
    assert {m for m in at_import if m.split(".")[0] in ("anyio", "trio")} == set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _within(m, "rampart.codec")))
def test_codec_imports_no_engine(module: str) -> None:
    """The codec is a projection of the model; it never needs the engine."""
    imported = _imports(MODULES[module])
    assert {m for m in imported if _within(m, "rampart.engine")} == set()
    assert {m for m in imported if m.split(".")[0] in ("anyio", "trio")} == set()


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
    """No two modules import each other, directly or through others (function-local
    imports included: they hide a cycle, they do not remove it)."""
    edges = {name: _imports(path) & set(MODULES) for name, path in MODULES.items()}
    assert _cycles(edges) == []


def test_cycle_finder_finds_a_cycle() -> None:
    """The finder itself reports a planted cycle (so an empty answer means something)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
