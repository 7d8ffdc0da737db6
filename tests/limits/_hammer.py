"""A worker process for the shared-budget tests: reserve tokens as fast as possible.

``python -m tests.limits._hammer {file|redis} LOCATION KEY RATE BURST COUNT`` prints
``ready``, waits for a line on stdin (so all workers start together), then reserves
COUNT tokens and prints one JSON list of ``[now, wait]`` pairs, as measured by the
backend inside its atomic section.
"""

from __future__ import annotations

import json
import sys

from rampart.limits import FileBackend, RedisBackend


def main(argv: list[str]) -> None:
    kind, location, key, rate, burst, count = argv
    backend = FileBackend(location) if kind == "file" else RedisBackend(location)
    print("ready", flush=True)
    sys.stdin.readline()
    # Private seam: _reserve also returns the clock reading taken inside the backend's
    # atomic section, which the budget check needs (acquire() returns the wait only).
    grants = [backend._reserve(key, rate=float(rate), burst=int(burst)) for _ in range(int(count))]
    print(json.dumps(grants), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
