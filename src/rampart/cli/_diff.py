"""``rampart diff``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

__all__ = ["register", "run"]


def register(commands: Any) -> None:
    parser = commands.add_parser("diff", help="(not yet)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    return 0
