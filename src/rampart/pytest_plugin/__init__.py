"""rampart's pytest plugin: markers, in-item trials, result collection and reporting.

It is auto-registered through the ``pytest11`` entry point (``rampart.pytest_plugin.plugin``).
"""

from rampart.pytest_plugin._collect import (
    ResultCollectionHandler,
    ResultCollector,
    TrialInfo,
    current_trial,
    record_result,
)

__all__ = [
    "ResultCollectionHandler",
    "ResultCollector",
    "TrialInfo",
    "current_trial",
    "record_result",
]
