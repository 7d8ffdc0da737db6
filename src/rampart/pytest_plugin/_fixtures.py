"""Fixtures the plugin provides (``rampart_trial``, ``trial_config``, the default
``anyio_backend``, the deprecated ``rampart_sinks`` bootstrap), and async tests on anyio
by default.

This module is registered as a plugin at configure time. Plain ``async def`` tests run
with no configuration, on anyio's pytest plugin: a coroutine test function gets anyio's
marker (unless it has one) and the ``anyio_backend`` fixture, whose default is here
(asyncio). Tests that pytest-asyncio owns (auto mode, or its marker in strict mode) and
hypothesis tests are left alone, so nothing runs twice.
"""

from __future__ import annotations

import inspect
import warnings
from typing import TYPE_CHECKING

import pytest

from rampart.pytest_plugin._markers import TRIAL_CONFIG_KEY
from rampart.pytest_plugin._report import LEGACY_FIXTURE_WARNING, SINKS_KEY

if TYPE_CHECKING:
    from rampart.engine._internal import TrialConfig, TrialInfo


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> None:
    """Hand a coroutine test function to anyio (see the module docstring)."""
    if not (collector.istestfunction(obj, name) and inspect.iscoroutinefunction(obj)):
        return
    if hasattr(obj, "hypothesis") or _asyncio_owns(collector, obj):
        return
    own = getattr(obj, "pytestmark", ())
    if not any(mark.name == "anyio" for mark in own) and not collector.get_closest_marker("anyio"):
        pytest.mark.anyio(obj)
    pytest.mark.usefixtures("anyio_backend")(obj)


def _asyncio_owns(collector: pytest.Module | pytest.Class, obj: object) -> bool:
    config = collector.config
    if not config.pluginmanager.has_plugin("asyncio"):
        return False
    if config.getini("asyncio_mode") == "auto":
        return True
    own = getattr(obj, "pytestmark", ())
    return any(mark.name == "asyncio" for mark in own) or bool(
        collector.get_closest_marker("asyncio")
    )


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    """Default backend for async tests: asyncio. Override it in your conftest for trio."""
    return "asyncio"


class TrialView:
    """The running clone's trial info, read at access time.

    Each trial clone gets its own (it is function-scoped); reading at access time also
    keeps it right where a test shares it across clones (``shared_fixtures=``).
    """

    @property
    def info(self) -> TrialInfo | None:
        # The engine: loaded by the test that requests this fixture, not at configure.
        from rampart.engine._internal import current_trial

        return current_trial()

    @property
    def index(self) -> int:
        info = self.info
        return 0 if info is None else info.index

    @property
    def n(self) -> int:
        info = self.info
        return 1 if info is None else info.n

    def __repr__(self) -> str:
        return f"<rampart trial {self.index} of {self.n}>"


@pytest.fixture
def rampart_trial() -> TrialView:
    """Index and size of the running trial clone (0 of 1 outside trial tests)."""
    return TrialView()


@pytest.fixture
def trial_config(request: pytest.FixtureRequest) -> TrialConfig:
    """What the test's ``@pytest.mark.trial`` declared (RAMPART's declaration form: the
    marker does not clone the test, which runs its population itself)."""
    config: TrialConfig | None = request.node.stash.get(TRIAL_CONFIG_KEY, None)
    if config is None:
        # Requested where collection could not see it (``getfixturevalue``).
        pytest.fail(f"trial_config requires @pytest.mark.trial on {request.node.nodeid}")
    return config


@pytest.fixture(scope="session", autouse=True)
def _rampart_sink_bootstrap(request: pytest.FixtureRequest) -> None:
    """Resolve a user's deprecated ``rampart_sinks`` fixture when no hook exists."""
    # No sinks on an xdist worker: the controller reports.
    sinks = request.config.stash.get(SINKS_KEY, None)
    if sinks is None or sinks.has_hook_implementations():
        return
    try:
        value = request.getfixturevalue("rampart_sinks")
    except pytest.FixtureLookupError:
        return
    except pytest.fail.Exception:
        # pytest reports a scope mismatch this way: a function-scoped rampart_sinks
        # cannot be resolved from this session-scoped bootstrap.
        from rampart.pytest_plugin._ledger import LEDGER_KEY

        ledger = request.config.stash[LEDGER_KEY]
        ledger.warn(
            "the rampart_sinks fixture could not be resolved (it must be session-scoped); "
            "its sinks were not used - implement the pytest_rampart_sinks hook instead"
        )
        ledger.sink_failed("rampart_sinks fixture could not be resolved")
        return
    warnings.warn(LEGACY_FIXTURE_WARNING, DeprecationWarning, stacklevel=2)
    sinks.use_fixture_sinks(value)
