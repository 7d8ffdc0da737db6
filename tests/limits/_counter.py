"""A worker process for the shared-state tests: increment a counter document.

``python -m tests.limits._counter {file|redis} LOCATION KEY COUNT`` prints ``ready``,
waits for a line on stdin (so all workers start together), then applies COUNT
``transact`` increments to the document under KEY and prints ``done``.
"""

from __future__ import annotations

import sys
from typing import Any

from rampart.limits import FileBackend, RedisBackend


def _increment(document: dict[str, Any] | None, now: float) -> tuple[dict[str, Any], int]:
    count = 1 + (0 if document is None else int(document["count"]))
    return {"count": count}, count


def main(argv: list[str]) -> None:
    kind, location, key, count = argv
    backend = FileBackend(location) if kind == "file" else RedisBackend(location)
    print("ready", flush=True)
    sys.stdin.readline()
    for _ in range(int(count)):
        backend.transact_now(key, _increment)
    print("done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
