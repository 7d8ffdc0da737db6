"""Ready-made test modules for ``rampart scan`` (config-only scans; see ``docs/scan.md``).

``rampart scan xpia`` runs ``_xpia_suite`` with the plugin ``_xpia_plugin``; the
AgentDojo scan lives with its integration, in ``rampart.agentdojo``.
"""

from pathlib import Path

__all__: list[str] = []


def _xpia_suite_path() -> Path:
    """The test module ``rampart scan xpia`` runs."""
    return Path(__file__).with_name("_xpia_suite.py")
