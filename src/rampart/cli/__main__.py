"""``python -m rampart.cli``: the ``rampart`` command line."""

from rampart.cli._main import main

if __name__ == "__main__":
    raise SystemExit(main())
