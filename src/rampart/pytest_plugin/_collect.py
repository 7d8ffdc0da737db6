"""The plugin's face of result collection; the collector itself is the engine's.

The current collector and trial live in context variables owned by
``rampart.engine._results``; the plugin sets them around each test body and trial
clone (``bind_collector``, in ``_runner``) and installs ``ResultCollectionHandler``.
Only ``NoResultWarning`` is the plugin's own.
"""

from __future__ import annotations

from rampart.engine._results import (
    ResultCollectionHandler,
    ResultCollector,
    TrialInfo,
    bind_collector,
    current_trial,
    record_result,
)

__all__ = [
    "NoResultWarning",
    "ResultCollectionHandler",
    "ResultCollector",
    "TrialInfo",
    "bind_collector",
    "current_trial",
    "record_result",
]


class NoResultWarning(UserWarning):
    """A ``harm``-marked test recorded no rampart result.

    Issued instead of failing the test when ini ``rampart_harm_without_result = warn``.
    """
