"""The ``rampart`` parser and dispatcher: one subparser per subcommand module."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rampart.cli import _diff, _history, _report, _rescore, _scan, _sweep, _validate
from rampart.cli._errors import EXIT_INTERRUPTED, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "main"]

_COMMANDS = (_validate, _report, _diff, _history, _rescore, _sweep, _scan)

_DESCRIPTION = """\
rampart's command line: check, re-render, compare, track and re-judge saved runs (JSON
reports and JSONL trace files written by the pytest plugin), and compare
concurrency settings of a suite. 'rampart COMMAND --help' describes each command.
"""

_EPILOG = """\
exit status: 0 success; 1 findings (validate: a bad record; diff, history: a
significant regression); 2 usage or input error (a missing file, a wrong format, an unsupported
schema version). See docs/cli.md.
"""


def build_parser() -> argparse.ArgumentParser:
    """The whole parser; each subcommand module adds its own subparser."""
    from rampart._version import __version__

    parser = argparse.ArgumentParser(
        prog="rampart",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"rampart {__version__}")
    commands = parser.add_subparsers(title="commands", dest="command", metavar="COMMAND")
    commands.required = True
    for command in _COMMANDS:
        command.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); the exit status.

    Input problems are one ``rampart COMMAND: error: ...`` line on stderr and status 2;
    bugs propagate with their traceback.
    """
    parser = build_parser()
    args = parser.parse_args(None if argv is None else list(argv))
    try:
        status: int = args.run(args)
    except CliError as error:
        print(f"rampart {args.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"rampart {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `rampart report ... | head`
        sys.stderr.close()
        return 0
    return status
