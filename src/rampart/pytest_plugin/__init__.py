"""rampart's pytest plugin: markers, in-item trials, result collection and reporting.

It is auto-registered through the ``pytest11`` entry point (``rampart.pytest_plugin.plugin``),
which collects each feature module's options and wires the private parts at configure
time (``_session``): the markers, their options and ``NoResultWarning`` (``_markers``),
per-item hooks and state (``_items``), the test-function wrapper and trial fan-out
(``_runner``), the group verdict (``_groups``), the populations a test runs as trial
groups (``_populations``), the run ledger every finished result is
recorded on, with its spill store (``_ledger``), the run journal and its settings
(``_journal``), resume (``_resume``), interrupts (``_interrupts``), the report, its sinks
and the terminal summary (``_report``), live progress (``_progress``), the xdist
transport (``_xdist``) and the rate-limit and LLM layers' statistics (``_layers``). Parts
a run may not use (resume, JUnit properties, per-clone fixtures) load when it first
does. ``docs/pytest-plugin.md`` ("How it works") draws the same map.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.engine._internal import (
        ResultCollectionHandler,
        ResultCollector,
        TrialConfig,
        TrialInfo,
        current_trial,
        record_result,
    )
    from rampart.pytest_plugin._markers import NoResultWarning

# Lazy, so that loading the plugin's entry point (a submodule) does not load the engine;
# uncached, so each access reaches the loaded module (see ``lazy_attributes``).
_NAMES = (
    "NoResultWarning",
    "ResultCollectionHandler",
    "ResultCollector",
    "TrialInfo",
    "current_trial",
    "record_result",
)
__getattr__, __dir__ = lazy_attributes(
    __name__,
    globals(),
    {
        **dict.fromkeys(_NAMES, "rampart.engine._results"),
        "NoResultWarning": "rampart.pytest_plugin._markers",
        "TrialConfig": "rampart.engine._populations",
    },
    uncached=frozenset(_NAMES),
)

__all__ = [
    "NoResultWarning",
    "ResultCollectionHandler",
    "ResultCollector",
    "TrialConfig",
    "TrialInfo",
    "current_trial",
    "record_result",
]
