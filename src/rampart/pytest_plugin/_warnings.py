"""The plugin's own warning category (``rampart.pytest_plugin.NoResultWarning``).

The other names ``rampart.pytest_plugin`` exports (the result collector, the current
trial, ``record_result``) are the engine's (``rampart.engine._results``); the plugin
only sets them around each test body and trial clone (``_runner``).
"""

from __future__ import annotations

__all__ = ["NoResultWarning"]


class NoResultWarning(UserWarning):
    """A ``harm``-marked test recorded no rampart result.

    Issued instead of failing the test when ini ``rampart_harm_without_result = warn``.
    """
