"""A pytest plugin ``rampart sweep`` loads into each run (``-p rampart.cli._sweep_probe``).

It measures turn latency: every execution gets one extra event handler (through the
default-handler hook, ``register_default_handler_factory``, chained to any factory
already registered) that notes the wall time when the execution starts; when it
ends, each turn's latency is the time from the start (first turn) or from the
previous turn's response to that turn's response (``Turn.timestamp``, taken when the
response arrived). So a turn's latency includes what runs before it is sent (the
injection's setup for the first turn, the driver for later ones).

At the end of the session the process writes its latencies, in seconds, to
``$RAMPART_SWEEP_LATENCY_DIR/latency_<pid>.json`` (one file per process, so xdist
workers each write their own). Nothing is written when the variable is unset.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

__all__ = ["LATENCY_DIR_ENV", "pytest_configure", "pytest_sessionfinish"]

LATENCY_DIR_ENV = "RAMPART_SWEEP_LATENCY_DIR"

_LATENCIES: list[float] = []


class _TurnClock:
    """One per execution: the start time, then the gap to each turn's response."""

    def __init__(self) -> None:
        self._started: float | None = None

    async def on_event_async(self, *, event_data: Any) -> None:
        event = event_data.event.value
        if event == "on_pre_execute":
            self._started = time.time()
            return
        result = event_data.result
        if event != "on_post_execute" or result is None or self._started is None:
            return
        previous = self._started
        for turn in result.turns:
            if turn.timestamp is None:
                continue
            stamp = turn.timestamp.timestamp()
            _LATENCIES.append(max(0.0, stamp - previous))
            previous = stamp


def pytest_configure(config: pytest.Config) -> None:
    from rampart.engine._internal import default_handler_factory, register_default_handler_factory

    previous = default_handler_factory()

    def factory() -> list[Any]:
        return [_TurnClock(), *(previous() if previous is not None else [])]

    register_default_handler_factory(factory)


def pytest_sessionfinish(session: pytest.Session) -> None:
    directory = os.environ.get(LATENCY_DIR_ENV)
    if not directory:
        return
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    (path / f"latency_{os.getpid()}.json").write_text(json.dumps(_LATENCIES), encoding="utf-8")
