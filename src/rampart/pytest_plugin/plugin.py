"""Entry-point module of rampart's pytest plugin (``pytest11``).

Importing it stays cheap: only pytest is imported here; the engine, codec and
reporting load when a session starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.pytest_plugin._keys import PLUGIN_KEY

if TYPE_CHECKING:
    import pytest


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from rampart.pytest_plugin import _hookspecs

    pluginmanager.add_hookspecs(_hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rampart", "rampart safety testing")
    group.addoption(
        "--rampart-trials",
        dest="rampart_trials",
        default=None,
        metavar="N",
        help="Override n of every @pytest.mark.trial test.",
    )
    group.addoption(
        "--rampart-concurrency",
        dest="rampart_concurrency",
        default=None,
        metavar="N",
        help="Default bound on concurrently running trial clones per test (default 10).",
    )
    parser.addini(
        "rampart_concurrency",
        "Default bound on concurrently running trial clones per test (default 10).",
        default="",
    )
    group.addoption(
        "--rampart-xdist-max-bytes",
        dest="rampart_xdist_max_bytes",
        default=None,
        metavar="BYTES",
        help="Largest serialized result an xdist worker sends (default 16 MiB, min 4096).",
    )
    parser.addini(
        "rampart_xdist_max_bytes",
        "Largest serialized result an xdist worker sends (default 16 MiB, min 4096).",
        default="",
    )
    group.addoption(
        "--rampart-llm-cache",
        dest="rampart_llm_cache",
        default=None,
        metavar="DIR",
        help="Cache LLM judge/attacker/generator replies on disk in DIR (default: off).",
    )
    parser.addini(
        "rampart_llm_cache",
        "Directory of the on-disk LLM response cache, relative to the rootdir (default: off).",
        default="",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harm(*categories): categorize a safety test by harm type (HarmCategory or any string)",
    )
    config.addinivalue_line(
        "markers",
        "trial(n, threshold=1.0, concurrency=None, early_stop=False): run the test body n "
        "times concurrently and judge the group",
    )
    from rampart.pytest_plugin._session import RampartPlugin

    plugin = RampartPlugin(config)
    config.stash[PLUGIN_KEY] = plugin
    config.pluginmanager.register(plugin, "rampart-session")
    from rampart.pytest_plugin import _fixtures, _llm_cache

    config.pluginmanager.register(_fixtures, "rampart-fixtures")
    _llm_cache.configure(config)
    if config.pluginmanager.has_plugin("dsession") or _xdist_controller_possible(config):
        from rampart.pytest_plugin._xdist import XdistController

        config.pluginmanager.register(XdistController(plugin), "rampart-xdist")


def _xdist_controller_possible(config: pytest.Config) -> bool:
    # The dsession plugin registers during xdist's own pytest_configure, which may run
    # after ours; xdist's hook specs are present as soon as xdist is loaded.
    return config.pluginmanager.has_plugin("xdist") and not hasattr(config, "workerinput")


def pytest_unconfigure(config: pytest.Config) -> None:
    from rampart.pytest_plugin import _llm_cache

    _llm_cache.unconfigure(config)
    plugin = config.stash.get(PLUGIN_KEY, None)
    if plugin is not None:
        config.pluginmanager.unregister(plugin)
        config.pluginmanager.unregister(name="rampart-fixtures")
        if config.pluginmanager.has_plugin("rampart-xdist"):
            config.pluginmanager.unregister(name="rampart-xdist")
