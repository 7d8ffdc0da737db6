"""Entry-point module of rampart's pytest plugin (``pytest11``).

Each feature module declares its own options (``add_options``); this module calls them
from the one ``pytest_addoption``, registers the ``pytest_rampart_sinks`` hook spec
(``_report``) and the markers, and wires the parts when pytest configures a run
(``_session.start``) and closes them at unconfigure (``_session.stop``). Importing the
feature modules stays cheap: each loads what its hooks use -- the engine's trial
machinery, the codec, reporting, rate limiting -- when a run first uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.pytest_plugin import (
    _journal,
    _layers,
    _markers,
    _progress,
    _report,
    _retention,
    _xdist,
)

if TYPE_CHECKING:
    import pytest

#: The feature modules that declare options, in the order ``pytest --help`` lists them.
_FEATURES = (_markers, _xdist, _layers, _report, _progress, _journal, _retention)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(_report)


def pytest_addoption(parser: pytest.Parser) -> None:
    for feature in _FEATURES:
        feature.add_options(parser)


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
    from rampart.pytest_plugin._session import start  # the parts' wiring, loaded here

    start(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from rampart.pytest_plugin._session import stop  # loaded by pytest_configure already

    stop(config)
