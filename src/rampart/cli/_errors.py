"""``CliError``: a problem with the command line's input, reported on one line."""

from __future__ import annotations

__all__ = ["CliError", "EXIT_FINDINGS", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK = 0
EXIT_FINDINGS = 1
"""``validate``: a bad record; ``diff``: a significant regression."""
EXIT_USAGE = 2
"""A wrong option, a missing or unreadable file, a file of the wrong kind (argparse's own
status for usage errors)."""
EXIT_INTERRUPTED = 130
"""Ctrl-C (the shell's status for a process ended by SIGINT)."""


class CliError(Exception):
    """An input problem (missing file, wrong format, unsupported schema version).

    ``main`` prints it as ``rampart <command>: error: <message>`` and exits with
    :data:`EXIT_USAGE`; the message names the file and the rule, never file content.
    """
