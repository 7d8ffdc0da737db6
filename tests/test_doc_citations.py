"""Code and docs cite only documents the repository contains.

Every ``docs/....md`` path named in ``src/``, ``docs/``, ``scripts/``, ``benchmarks/``,
``README.md`` or ``CHANGELOG.md`` must exist, as must every relative Markdown link in
the docs. Documents that live outside the repository (design notes, specifications,
issue trackers) are never cited: a reader of the repo could not follow them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [
    *sorted((ROOT / "src").rglob("*.py")),
    *sorted((ROOT / "scripts").rglob("*.py")),
    *sorted((ROOT / "benchmarks").rglob("*.py")),
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
]

_DOCS_PATH = re.compile(r"(?<![\w./-])docs/\w[\w./-]*?\.md\b")
_MARKDOWN_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s#]+)(?:#[^)]*)?\)")
# Documents the project was built from that are not part of the repository.
_OUTSIDE = re.compile(
    r"\bspec/0\d\d|\bDESIGN(?:\.md| decision| brief)|style-anchors|upstream-inventory"
    r"|\.\./shared/|\bissue \d+\b",
    re.IGNORECASE,
)


def _relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _cited_docs() -> list[tuple[str, str]]:
    found = []
    for source in SOURCES:
        for match in _DOCS_PATH.finditer(source.read_text(encoding="utf-8")):
            found.append((_relative(source), match.group(0)))
    return found


def test_citations_are_found() -> None:
    """The scan sees the citations it is meant to check (it is not vacuous)."""
    cited = {path for _, path in _cited_docs()}
    assert {"docs/architecture.md", "docs/executions.md", "docs/trace-schema.md"} <= cited


@pytest.mark.parametrize(("source", "cited"), _cited_docs(), ids=lambda value: str(value))
def test_cited_docs_exist(source: str, cited: str) -> None:
    """Every ``docs/...md`` path named anywhere in the repository's code and docs exists."""
    assert (ROOT / cited).is_file(), f"{source} cites {cited}, which the repository lacks"


def _markdown_links() -> list[tuple[str, str]]:
    found = []
    for source in SOURCES:
        if source.suffix != ".md":
            continue
        for match in _MARKDOWN_LINK.finditer(source.read_text(encoding="utf-8")):
            found.append((_relative(source), match.group(1)))
    return found


@pytest.mark.parametrize(("source", "target"), _markdown_links(), ids=lambda value: str(value))
def test_markdown_links_resolve(source: str, target: str) -> None:
    """Relative links in README and docs point at files that exist."""
    assert ((ROOT / source).parent / target).exists(), f"{source} links to missing {target}"


@pytest.mark.parametrize("source", SOURCES, ids=_relative)
def test_no_citation_of_documents_outside_the_repo(source: Path) -> None:
    """No design note, specification or tracker outside the repository is cited."""
    lines = [
        f"{number}: {line.strip()}"
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert lines == []
