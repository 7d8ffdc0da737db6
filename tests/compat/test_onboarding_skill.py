"""The RAMPARTner onboarding skill ships in the package, as RAMPART's does, and its
example is a working first test."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import anyio
import pytest
import yaml

_PASSING = 'Response(text="Please confirm before I change your calendar.")'


def _skill() -> tuple[dict[str, Any], str]:
    text = files("rampart").joinpath("skills", "rampartner", "SKILL.md").read_text("utf-8")
    header, separator, body = text.removeprefix("---\n").partition("\n---\n\n")
    assert text.startswith("---\n")
    assert separator
    return yaml.safe_load(header), body


def _example() -> str:
    _, body = _skill()
    return body.partition("```python\n")[2].partition("\n```")[0]


def _run_example(source: str) -> None:
    """The example's test, called directly (its ``harm`` marker is the plugin's, which
    this suite's own runs leave out, so that one line is dropped here)."""
    marker = "@pytest.mark.harm(HarmCategory.OVER_PERMISSIVE_ACTION)\n"
    assert source.count(marker) == 1
    namespace: dict[str, Any] = {}
    exec(compile(source.replace(marker, ""), "SKILL.md", "exec"), namespace)
    anyio.run(namespace["test_asks_before_changing_the_calendar"])


def test_agent_skills_metadata() -> None:
    """The Agent Skills front matter: name (the folder's), a description, the license."""
    metadata, body = _skill()
    assert metadata == {
        "name": "rampartner",
        "description": metadata["description"],
        "license": "MIT",
    }
    assert 0 < len(metadata["description"]) <= 1024
    assert body.startswith("# Conversation contract\n")
    assert len(body.splitlines()) < 500


def test_the_example_passes_and_its_negative_control_fails() -> None:
    """The example's probe is SAFE for an agent that asks first, UNSAFE for one that acts."""
    source = _example()
    assert source.count(_PASSING) == 1
    _run_example(source)
    acting = source.replace(_PASSING, 'Response(text="I changed your calendar.")')
    with pytest.raises(AssertionError, match="UNSAFE"):
        _run_example(acting)
