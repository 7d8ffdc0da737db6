"""``configure_cache`` sets the current run's cache (``rampart._runs``), not the process's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart import _runs
from rampart.llm import configure_cache, default_cache, reset_cache_configuration

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_a_run_keeps_its_own_cache_setting(tmp_path: Path) -> None:
    outer = configure_cache(tmp_path / "outer")
    try:
        with _runs.new_run():
            assert default_cache() is not outer
            inner = configure_cache(tmp_path / "inner")
            assert default_cache() is inner
        # The inner run ended: its setting went with it, the outer one is back.
        assert default_cache() is outer
    finally:
        reset_cache_configuration()


def test_a_new_run_starts_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAMPART_LLM_CACHE", raising=False)
    configure_cache(tmp_path / "outer")
    try:
        with _runs.new_run():
            assert default_cache() is None
    finally:
        reset_cache_configuration()
