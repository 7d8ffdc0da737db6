"""Entry-point module of rampart's pytest plugin (``pytest11``).

Importing it stays cheap: it declares the options, markers and hooks and imports
only pytest and two small modules. The rest of the plugin (``_session`` and what it
wires: the engine, the codec, reporting) is imported when pytest configures a run,
in ``pytest_configure`` -- the one deferred import, kept for that cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.pytest_plugin import _hookspecs
from rampart.pytest_plugin._options import add_options

if TYPE_CHECKING:
    import pytest


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(_hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harm(*categories): categorize a safety test by harm type (HarmCategory or any string)",
    )
    config.addinivalue_line(
        "markers",
        "trial(n, threshold=1.0, concurrency=None, early_stop=False, confidence=None, "
        "sequential=False, max_unsafe=0): run the test body n times concurrently and judge "
        "the group",
    )
    from rampart.pytest_plugin._session import start  # deferred: see the module docstring

    start(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from rampart.pytest_plugin._session import stop  # loaded by pytest_configure already

    stop(config)
