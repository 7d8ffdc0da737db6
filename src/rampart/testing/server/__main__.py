"""Entry point: ``python -m rampart.testing.server --port 0 --rate 50 --burst 10``."""

import sys

from rampart.testing.server._cli import main

if __name__ == "__main__":
    sys.exit(main())
