"""Ready-made test modules for ``rampart scan`` (config-only scans; see ``docs/scan.md``).

The scans live here together, each a settings class, a pytest plugin and a test
module, sharing how ``rampart scan`` hands them their settings (``_handover``):

* ``rampart scan xpia`` runs ``_xpia_suite`` with the plugin ``_xpia_plugin``;
* ``rampart scan agentdojo`` runs ``_agentdojo/_scan_suite`` with the plugin
  ``_agentdojo_plugin``, on the AgentDojo integration (``rampart.agentdojo``).
"""

import os
import sys
import threading
from pathlib import Path

__all__: list[str] = []


def _xpia_suite_path() -> Path:
    """The test module ``rampart scan xpia`` runs."""
    return Path(__file__).with_name("_xpia_suite.py")


def _agentdojo_suite_path() -> Path:
    """The test module ``rampart scan agentdojo`` runs."""
    return Path(__file__).with_name("_agentdojo") / "_scan_suite.py"


def _end_if_threads_left(status: int, command: str) -> None:
    """End this process at once with ``status`` if threads other than this one are still
    running at the end of a scan: a pair that ``--timeout`` or Ctrl-C ended leaves its
    pipeline's thread behind (a thread cannot be stopped from outside), and the
    interpreter would wait for it at exit after everything was reported."""
    left = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.current_thread() and thread.is_alive() and not thread.daemon
    ]
    if not left:
        return
    sys.stderr.write(
        f"{command}: {len(left)} thread(s) still running at the end (a pipeline that a "
        "timeout or Ctrl-C left behind, or one it started); ending the scan's process "
        "without waiting for them\n"
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
