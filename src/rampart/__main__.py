"""``python -m rampart``: the ``rampart`` command line (``docs/cli.md``)."""

from rampart.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
