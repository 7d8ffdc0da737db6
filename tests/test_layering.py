"""The package layers hold (``docs/architecture.md``).

Every import counts: at module level, inside a function, and under ``TYPE_CHECKING``
(a typing-only import is still a dependency, and it hides a cycle rather than removing
it). No module of rampart takes part in an import cycle; no module imports from a
higher layer except the compatibility re-exports, which say so with ``COMPAT_MARK``;
the model imports no engine, codec or anyio, and the codec no engine; and a room reaches
into another only through its public package or its internal face, the module
``_internal`` of the room (``docs/architecture.md``, "Internal faces").
"""

from __future__ import annotations

import ast
import re
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
        "rampart._checks",
        "rampart._http",
        "rampart._lazy",
        "rampart._pacing",
        "rampart._redact",
        "rampart._runs",
        "rampart._seen_calls",
        "rampart._text",
        "rampart._version",
        "rampart.common",
    ),
    ("rampart.core",),
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
    # The AgentDojo integration: built on the plugin and the reports.
    ("rampart.agentdojo",),
    # The ready-made scans (``rampart scan``): test modules on all of the above.
    ("rampart.scan",),
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


def _room(module: str) -> str:
    """The room ``module`` lives in: its longest prefix listed in ``LAYERS``."""
    return max(
        (prefix for prefixes in LAYERS for prefix in prefixes if _within(module, prefix)),
        key=len,
    )


def _private_inside(module: str) -> str | None:
    """The private module of its room ``module`` is (a ``_name`` below the room), or
    ``None`` for the room itself and its public modules."""
    parts = module[len(_room(module)) + 1 :].split(".") if module != _room(module) else []
    return parts[0] if any(part.startswith("_") for part in parts) else None


#: The internal faces: a room that serves others hands on what they take from its inside
#: from one module, ``<room>._internal`` (as trio's ``_core/__init__`` is the face of its
#: core for the rest of trio). Its ``__all__`` is the list; nothing else is.
FACE = "_internal"
FACES = {_room(name): name for name in MODULES if name == f"{_room(name)}.{FACE}"}


def _names_from_faces() -> list[tuple[str, str, str]]:
    """(importing module, face, name) for every ``from <face> import name`` in rampart."""
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module in FACES.values():
                found.extend((name, node.module, alias.name) for alias in node.names)
    return found


def _listed(tree: ast.Module, variable: str) -> ast.expr:
    """The value assigned to ``variable`` at the top of ``tree``."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == [
            variable
        ]:
            return node.value
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == variable:
            assert node.value is not None
            return node.value
    raise AssertionError(f"no {variable} at the top of the module")


def _face(face: str) -> tuple[list[str], dict[str, str], dict[str, str]]:
    """A face's ``__all__``, its typing imports (name -> module) and its load table."""
    tree = ast.parse(MODULES[face].read_text(encoding="utf-8"))
    typed = {
        alias.asname or alias.name: node.module
        for block in tree.body
        if isinstance(block, ast.If) and _is_type_checking(block)
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    return (
        ast.literal_eval(_listed(tree, "__all__")),
        typed,
        ast.literal_eval(_listed(tree, "_FACE")),
    )


def _reaches_past_the_faces() -> list[str]:
    return sorted(
        f"{name} -> {target}"
        for name, path in MODULES.items()
        for target in _imports(path) & set(MODULES)
        if _room(target) != _room(name)
        and _private_inside(target) is not None
        and target != FACES.get(_room(target))
    )


def test_other_rooms_use_only_the_internal_faces() -> None:
    """A room imports another room's public modules and its internal face, never the
    rest of its inside (put the name on the face, or make it public)."""
    assert _reaches_past_the_faces() == []


def test_what_is_taken_from_a_face_is_on_it() -> None:
    """Every name imported from a face is in its ``__all__`` (a typing-only import too,
    which no run would check)."""
    listed = {face: set(_face(face)[0]) for face in FACES.values()}
    assert (
        sorted(
            f"{name}: {face}.{item}"
            for name, face, item in _names_from_faces()
            if item not in listed[face]
        )
        == []
    )


@pytest.mark.parametrize("face", sorted(FACES.values()))
def test_a_face_hands_on_only_its_own_rooms_private_names(face: str) -> None:
    """A face's ``__all__`` is sorted and is exactly what it imports for typing and loads
    on access, each from the same private module of its own room, under its own name;
    no name on it is one the room's package binds when imported (that one is imported
    from there; a name the package loads lazily it caches, so the face hands it on)."""
    exported, typed, loaded = _face(face)
    room = _room(face)
    assert exported == sorted(exported)
    assert set(exported) == set(typed) == set(loaded)
    assert typed == loaded
    assert (
        sorted(m for m in loaded.values() if _room(m) != room or _private_inside(m) is None) == []
    )
    package = ast.parse(MODULES[room].read_text("utf-8"))
    bound = {
        alias.asname or alias.name
        for node in package.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    assert sorted(bound & set(exported)) == []


def test_every_name_on_a_face_is_used_by_another_room() -> None:
    """A face shrinks when the last outside use of a name goes (no stale entries), and a
    room's own modules import its inside directly, not through its face."""
    used = {(face, item) for name, face, item in _names_from_faces() if _room(name) != _room(face)}
    listed = {(face, item) for face in FACES.values() for item in _face(face)[0]}
    inside = sorted(
        f"{name}: {face}" for name, face, _ in _names_from_faces() if _room(name) == _room(face)
    )
    assert (sorted(listed - used), inside) == ([], [])


@pytest.mark.parametrize("face", sorted(FACES.values()))
def test_a_face_loads_its_names_on_access_and_nothing_before(face: str) -> None:
    """Importing a face loads what importing its room's package loads and no more; each
    name it hands on is the object of its defining module, looked up there at each access
    (a patch of the defining module is seen through the face)."""
    code = (
        "import importlib, sys\n"
        "face, room = sys.argv[1], sys.argv[2]\n"
        "importlib.import_module(room)\n"
        "before = set(sys.modules)\n"
        "module = importlib.import_module(face)\n"
        "print(sorted(set(sys.modules) - before - {face}))\n"
        "for name, where in module._FACE.items():\n"
        "    defining = importlib.import_module(where)\n"
        "    value = getattr(defining, name)\n"
        "    assert getattr(module, name) is value, name\n"
        "    setattr(defining, name, marker := object())\n"
        "    assert getattr(module, name) is marker, name\n"
        "    setattr(defining, name, value)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, face, _room(face)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"


def test_every_listed_room_exists() -> None:
    """Each ``LAYERS`` entry names a module or package of rampart (a room moved away
    cannot linger in the table)."""
    assert sorted(prefix for row in LAYERS for prefix in row if prefix not in MODULES) == []


def test_the_face_finder_tells_the_inside_from_the_face() -> None:
    """The room and face lookups themselves (so an empty answer above means something)."""
    assert _room("rampart.core._stats") == "rampart.core"
    assert _private_inside("rampart.core._stats") == "_stats"
    assert _private_inside("rampart.core.types") is None
    assert _private_inside("rampart._pacing") is None
    assert _private_inside("rampart._pacing._aimd") == "_aimd"
    assert _private_inside("rampart.limits._policy._cubic") == "_policy"
    assert FACES["rampart.core"] == "rampart.core._internal"
    assert FACES["rampart._http"] == "rampart._http._internal"


ARCHITECTURE = SRC.parent / "docs" / "architecture.md"


def _picture() -> dict[int, set[str]]:
    """The rooms of each layer as the picture under "The rooms" draws them: a line
    ``N. name · name   description`` starts layer N, a line starting ``·`` continues
    its names; names end where three spaces begin the description."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    block = text.split("## The rooms", 1)[1].split("```", 2)[1]
    layers: dict[int, set[str]] = {}
    current = -1
    for line in block.splitlines():
        head = re.match(r"\s*(\d+)\.\s+(.*)$", line)
        if head:
            current, names = int(head[1]), head[2]
        elif line.strip().startswith("·"):
            names = line.strip()
        else:
            continue
        for name in re.split(r"\s{3,}", names, maxsplit=1)[0].split("·"):
            if name.strip():
                layers.setdefault(current, set()).add(name.strip())
    return layers


def test_the_architecture_picture_is_the_layers_table() -> None:
    """``docs/architecture.md`` draws exactly ``LAYERS``: the same rooms on the same layers
    (``core`` for ``rampart.core``, ``_checks`` for ``rampart._checks``)."""
    drawn = {
        index: {prefix.removeprefix("rampart.") for prefix in row}
        for index, row in enumerate(LAYERS)
    }
    assert _picture() == drawn


def test_the_architecture_page_lists_the_public_modules() -> None:
    """Below a package, the modules with no ``_`` in their path are exactly the ones the
    architecture page lists under "Private and public modules" (any other is private)."""
    public = {
        name
        for name, path in MODULES.items()
        if "." in name.removeprefix("rampart.")
        and not any(part.startswith("_") for part in name.split(".")[1:])
    }
    page = ARCHITECTURE.read_text(encoding="utf-8")
    section = page.split("**Private and public modules.**", 1)[1].split("**Process-wide", 1)[0]
    listed = set(re.findall(r"`(rampart(?:\.[a-z]\w*){2,})`", section))
    assert sorted(public ^ listed) == []


def test_the_layer_finder_orders_the_rooms() -> None:
    """The layer lookup itself: the longest prefix wins, and the order is the picture's."""
    assert _layer("rampart._checks") < _layer("rampart.core.types") < _layer("rampart.codec")
    assert _layer("rampart.codec._json") < _layer("rampart.engine._trace")
    assert _layer("rampart.engine") < _layer("rampart.attacks._xpia") < _layer("rampart.cli")
    assert _layer("rampart.cli") < _layer("rampart")


def test_cycle_finder_finds_a_cycle() -> None:
    """The finder itself reports a planted cycle (so an empty answer means something)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
