"""Plain ``async def`` tests run with no configuration, on anyio's pytest plugin.

A coroutine test function gets anyio's marker (unless it has one) and the
``anyio_backend`` fixture, whose default the plugin provides (asyncio). Tests that
pytest-asyncio owns (auto mode, or its marker in strict mode) and hypothesis tests are
left alone, so nothing runs twice.
"""

from __future__ import annotations

import inspect

import pytest

__all__ = ["AnyioByDefault"]


class AnyioByDefault:
    """The collection hook that hands coroutine tests to anyio."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(
        self, collector: pytest.Module | pytest.Class, name: str, obj: object
    ) -> None:
        if not (collector.istestfunction(obj, name) and inspect.iscoroutinefunction(obj)):
            return
        if hasattr(obj, "hypothesis") or self._asyncio_owns(collector, obj):
            return
        own = getattr(obj, "pytestmark", ())
        if not any(mark.name == "anyio" for mark in own) and not collector.get_closest_marker(
            "anyio"
        ):
            pytest.mark.anyio(obj)
        pytest.mark.usefixtures("anyio_backend")(obj)

    def _asyncio_owns(self, collector: pytest.Module | pytest.Class, obj: object) -> bool:
        if not self._config.pluginmanager.has_plugin("asyncio"):
            return False
        if self._config.getini("asyncio_mode") == "auto":
            return True
        own = getattr(obj, "pytestmark", ())
        return any(mark.name == "asyncio" for mark in own) or bool(
            collector.get_closest_marker("asyncio")
        )
