"""Every Python example in README.md and docs/*.md runs as written.

The convention (stated in ``docs/architecture.md``, "Examples in the docs"):

- a block fenced as ``python`` is executed, in one of three ways:

  * a block defining ``test_*`` functions is a test module: it runs in a real pytest
    run (pytester), with a conftest that runs async tests on asyncio and trio; every
    test in it must pass;
  * a block whose first line is ``# conftest.py`` is a conftest: a real pytest run loads
    it next to a small sync and async test, which must pass;
  * any other block is a script, executed as a fresh module in an empty directory; a
    script that calls ``anyio.run`` runs once on each backend. A script whose first line
    is ``# continued from the example above`` runs in the same module, after the
    page's previous runnable block (so a guide can build one program step by step);

- a block fenced as ``python fragment`` is shown, not run: a signature, an excerpt of a
  larger program, or code that needs a real service (an API key).
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import attrs
import pytest

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<info>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
PYTHON_NAMES = {"python", "py", "python3", "pycon"}

BOTH_BACKENDS_CONFTEST = """
import pytest


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param
"""

SMOKE_TESTS = """
def test_sync():
    pass


async def test_async():
    pass
"""

# Inner runs disable pytest-asyncio (installed only for the plugin's compatibility tests)
# and hypothesis' plugin (no example uses it; importing it costs seconds per run), and
# turn warnings into errors, as the project's own configuration does.
INNER_OPTIONS = (
    "-p",
    "no:asyncio",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:cacheprovider",
    "-W",
    "error",
)


CONTINUED = "# continued from the example above"


@attrs.frozen(kw_only=True)
class Example:
    """One fenced block: where it is, its info string, its code, the block it continues."""

    page: Path
    line: int
    info: str
    code: str
    previous: Example | None = None

    @property
    def continues(self) -> bool:
        return self.code.startswith(CONTINUED)

    @property
    def chain(self) -> list[Example]:
        """The blocks to run, in order, to run this one."""
        chain: list[Example] = [self]
        while chain[0].continues and chain[0].previous is not None:
            chain.insert(0, chain[0].previous)
        return chain

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def kind(self) -> str:
        """``fragment``, ``test-module``, ``conftest`` or ``script``."""
        if self.info == "python fragment":
            return "fragment"
        if self.code.lstrip().startswith("# conftest.py"):
            return "conftest"
        try:
            tree = ast.parse(self.code, filename=self.name)
        except SyntaxError:
            return "script"  # reported by test_parses
        functions = (ast.FunctionDef, ast.AsyncFunctionDef)
        if any(isinstance(n, functions) and n.name.startswith("test_") for n in tree.body):
            return "test-module"
        return "script"


def _examples() -> Iterator[Example]:
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        previous: Example | None = None
        for match in FENCE.finditer(text):
            info = " ".join(match["info"].split())
            if info.split(" ", 1)[0] not in PYTHON_NAMES:
                continue
            line = text.count("\n", 0, match.start()) + 1
            example = Example(
                page=page, line=line, info=info, code=match["body"], previous=previous
            )
            if example.kind != "fragment":
                previous = example
            yield example


EXAMPLES = list(_examples())
RUNNABLE = [example for example in EXAMPLES if example.kind != "fragment"]


def _script_cases() -> Iterator[Any]:
    for example in RUNNABLE:
        if example.kind != "script":
            continue
        if any("anyio.run(" in part.code for part in example.chain):
            for backend in ("asyncio", "trio"):
                yield pytest.param(example, backend, id=f"{example.name}[{backend}]")
        else:
            yield pytest.param(example, None, id=example.name)


def _pytest_cases() -> Iterator[Any]:
    for example in RUNNABLE:
        if example.kind in {"test-module", "conftest"}:
            yield pytest.param(example, id=example.name)


def _run_on(backend: str) -> Callable[..., Any]:
    """``anyio.run`` pinned to ``backend`` (whatever the example asks for)."""
    real_run = anyio.run

    def run(func: Callable[..., Any], *args: object, **kwargs: Any) -> Any:
        kwargs["backend"] = backend
        return real_run(func, *args, **kwargs)

    return run


class TestConvention:
    def test_examples_are_found(self) -> None:
        """The collector sees the docs' examples (a broken pattern would see none)."""
        assert len(RUNNABLE) >= 40
        assert {example.kind for example in RUNNABLE} == {"script", "test-module", "conftest"}

    @pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
    def test_info_string_is_known(self, example: Example) -> None:
        """Python blocks are fenced as ``python`` or ``python fragment``, nothing else."""
        assert example.info in {"python", "python fragment"}

    @pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
    def test_continuation_follows_a_script(self, example: Example) -> None:
        """Only a script continues, and only a runnable script before it on its page."""
        if example.continues:
            assert example.kind == "script"
            assert example.previous is not None
            assert example.previous.kind == "script"

    @pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
    def test_parses(self, example: Example) -> None:
        """Runnable blocks are valid Python; fragments are shown as they are."""
        if example.kind != "fragment":
            ast.parse(example.code, filename=example.name)


@pytest.mark.parametrize(("example", "backend"), list(_script_cases()))
def test_script_runs(
    example: Example,
    backend: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The example runs to its end as a fresh module (each backend for anyio.run)."""
    monkeypatch.chdir(tmp_path)
    if backend is not None:
        monkeypatch.setattr(anyio, "run", _run_on(backend))
    module = types.ModuleType("docs_example")
    module.__file__ = str(tmp_path / "docs_example.py")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for part in example.chain:
        exec(compile(part.code, part.name, "exec"), module.__dict__)


@pytest.mark.parametrize("example", list(_pytest_cases()))
def test_pytest_example_passes(example: Example, pytester: pytest.Pytester) -> None:
    """The example's tests pass in a real pytest run (async ones on both backends)."""
    if example.kind == "conftest":
        pytester.makeconftest(example.code)
        pytester.makepyfile(test_smoke=SMOKE_TESTS)
    else:
        pytester.makeconftest(BOTH_BACKENDS_CONFTEST)
        pytester.makepyfile(test_docs_example=example.code)
    result = pytester.runpytest(*INNER_OPTIONS)
    outcomes = result.parseoutcomes()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert outcomes.get("passed", 0) > 0
    assert set(outcomes) == {"passed"}, result.stdout.str()


def _public_names() -> list[Any]:
    from tests.test_public_api import PUBLIC_MODULES

    names: dict[str, list[str]] = {}
    for module in PUBLIC_MODULES:
        for name in importlib.import_module(module).__all__:
            names.setdefault(name, []).append(module)
    return [pytest.param(name, modules, id=name) for name, modules in sorted(names.items())]


DOCS_TEXT = "\n".join(page.read_text(encoding="utf-8") for page in sorted(ROOT.glob("docs/*.md")))


@pytest.mark.parametrize(("name", "modules"), _public_names())
def test_public_name_is_documented(name: str, modules: list[str]) -> None:
    """Every name in a public ``__all__`` appears (as a whole word) on some docs page."""
    pattern = rf"(?<![\w]){re.escape(name)}(?![\w])"
    assert re.search(pattern, DOCS_TEXT), (
        f"{name} (exported by {', '.join(modules)}) is undocumented"
    )


LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)\s]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    """Links from the README and the docs to files of the repository point at files that
    exist (documents are cited only if the repository contains them)."""
    targets = [m["target"] for m in LINK.finditer(page.read_text(encoding="utf-8"))]
    local = [t for t in targets if "://" not in t and not t.startswith("mailto:")]
    missing = [t for t in local if not (page.parent / t).exists()]
    assert missing == []


def test_readme_links_every_docs_page() -> None:
    """The README's documentation table reaches every page under docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in sorted(ROOT.glob("docs/*.md")) if f"](docs/{p.name})" not in readme]
    assert unlinked == []


def test_readme_says_how_to_install_every_extra() -> None:
    """A new user learns from the README how to install rampart into their project and
    what each extra adds: every extra in pyproject.toml but the project's own (``dev``,
    and ``browser`` for the HTML report's browser tests) has a row in its table."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    install = readme.split("## Install it into your own project", 1)[1].split("\n## ", 1)[0]
    assert 'pip install "/path/to/rampart[' in install
    missing = [name for name in extras if name not in {"dev", "browser"}]
    missing = [name for name in missing if f"\n| `{name}` |" not in install]
    assert missing == []
