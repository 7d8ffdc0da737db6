"""Which run this process is in: the home of state that is one per run.

A *run* is a pytest session (the plugin opens one at configure and closes it at
unconfigure) or, outside pytest, the process. A layer that must keep something once per
run -- rate limiters are one per name per run (``rampart.limits``) -- keeps it in
``current().state(key, factory)``. Runs nest: an in-process pytester run opens its own
and, when it closes, the outer run is current again with its state as it was, so
nothing one run built leaks into another.

This module imports nothing of rampart, so the plugin can open a run without loading
the layers that use it.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["Run", "current", "new_run", "open_run"]

T = TypeVar("T")


class Run:
    """One run's state, by key (each layer uses its own module name as the key)."""

    __slots__ = ("_lock", "_state")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, Any] = {}

    def state(self, key: str, factory: Callable[[], T]) -> T:
        """The run's value under ``key``, made by ``factory`` on first use."""
        value = self._state.get(key)
        if value is None:
            with self._lock:
                value = self._state.get(key)
                if value is None:
                    value = self._state[key] = factory()
        return value


_LOCK = threading.Lock()
_STACK: list[Run] = [Run()]  # the process's own run at the bottom


def current() -> Run:
    """The innermost open run (the process's when none was opened)."""
    return _STACK[-1]


def open_run() -> Callable[[], None]:
    """Open a new run and make it current; returns the function that closes it (which
    makes the run that was current before it current again; idempotent)."""
    return _close(_open())


@contextmanager
def new_run() -> Iterator[Run]:
    """A new run for the block (see ``open_run``)."""
    run = _open()
    try:
        yield run
    finally:
        _close(run)()


def _open() -> Run:
    run = Run()
    with _LOCK:
        _STACK.append(run)
    return run


def _close(run: Run) -> Callable[[], None]:
    def close() -> None:
        with _LOCK:
            if run in _STACK:
                _STACK.remove(run)

    return close
