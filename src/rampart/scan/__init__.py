"""Ready-made test modules for ``rampart scan`` (config-only scans; see ``docs/scan.md``).

The scans live here together, each a settings class, a pytest plugin and a test
module, sharing how ``rampart scan`` hands them their settings (``_handover``):

* ``rampart scan xpia`` runs ``_xpia_suite`` with the plugin ``_xpia_plugin``;
* ``rampart scan agentdojo`` runs ``_agentdojo/_scan_suite`` with the plugin
  ``_agentdojo_plugin``, on the AgentDojo integration (``rampart.agentdojo``).
"""

from pathlib import Path

__all__: list[str] = []


def _xpia_suite_path() -> Path:
    """The test module ``rampart scan xpia`` runs."""
    return Path(__file__).with_name("_xpia_suite.py")


def _agentdojo_suite_path() -> Path:
    """The test module ``rampart scan agentdojo`` runs."""
    return Path(__file__).with_name("_agentdojo") / "_scan_suite.py"
