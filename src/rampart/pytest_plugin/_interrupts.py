"""Ctrl-C ends the run cleanly; a second Ctrl-C ends it at once.

The first ``KeyboardInterrupt`` -- wherever it is raised: the engine, a trial clone's
own code (``_runner`` re-raises it bare out of any exception group), a fixture -- is
left to pytest, which stops the session with exit status 2 and still runs the
session's end. ``pytest_keyboard_interrupt`` marks the run ledger interrupted (the
report says ``interrupted``, the terminal says INTERRUPTED in red) and arms the
second interrupt: while the session ends (fixture teardown, injections removed,
reports written) another SIGINT exits the process at once with status 130, what a
shell reports for a process SIGINT ended. That exit never cuts a journal line in
half: a SIGINT arriving during a journal write takes effect when the line is down.

The handler is installed only from the first interrupt on, so the event loops'
own SIGINT handling (trio's in particular) is untouched while tests run.

``pytest.exit()`` in a test or a fixture (a trial clone's own fixture included) is not
an interrupt: pytest ends the run with the exit status it asks for, and the run is
marked incomplete (the report does not hold the tests that never ran).

Two Ctrl-C in quick succession never leave a report that reads as a clean run. The
first ``KeyboardInterrupt`` is seen as it leaves ``pytest_runtestloop`` (an
innermost wrapper), where the run is marked interrupted and the second Ctrl-C armed,
before pytest's own handling, which is slow (it formats the traceback). A second
SIGINT that lands before that -- while the loop unwinds, or inside pytest's handler,
which then leaves ``session.exitstatus`` at 0 -- still cannot pass for a clean end:
the loop did not return, so ``cut_short`` stays set, and the reporter marks the run
interrupted from it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from rampart._text import one_line

if TYPE_CHECKING:
    from collections.abc import Callable, Generator
    from pathlib import Path

__all__ = ["EXIT_AT_ONCE", "InterruptWatch"]

#: Exit status of a second Ctrl-C: 128 + SIGINT, as a shell reports it.
EXIT_AT_ONCE = 128 + signal.SIGINT


class JournalWriter(Protocol):
    """What the interrupt watch reads of the run journal's writer (``_journal``, which
    calls back into this module, so it is named here by its shape, not imported)."""

    path: Path
    lines: int
    writing: bool
    exit_after_write: Callable[[], None] | None


class Marks(Protocol):
    """What the interrupt watch marks on the run: its ledger (``_ledger.RunLedger``), or
    before a run uses rampart, what wires it (``_session.Waiting``)."""

    def mark_interrupted(self) -> None: ...

    def mark_incomplete(self, reason: str) -> None: ...


class InterruptWatch:
    """Marks the run interrupted and arms the second Ctrl-C (see the module docstring)."""

    def __init__(self, *, ledger: Marks, writer: JournalWriter | None) -> None:
        self._ledger = ledger
        self.writer = writer
        self._previous: Any = None
        self._armed = False
        #: Told once, at the first interrupt (an xdist worker says so to its controller).
        self.on_interrupt: list[Callable[[], None]] = []
        self._told = False
        #: The test loop started and has not returned or failed in a known way: an
        #: interrupt may have cut it short (see the module docstring).
        self.cut_short = False

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        del session
        self.cut_short = True
        try:
            outcome = yield
        except KeyboardInterrupt as exc:
            if type(exc) is KeyboardInterrupt:  # a Ctrl-C, not pytest's own stop
                self._ledger.mark_interrupted()
                self.arm()
            else:
                self.cut_short = False
            raise
        except pytest.exit.Exception as exc:
            # ``pytest.exit()`` in a test or a fixture (a trial clone's too) ends the
            # run on purpose: not an interrupt, but the report does not hold every test.
            self.cut_short = False
            reason = one_line(str(exc.msg), limit=200)
            self._ledger.mark_incomplete(
                f"pytest.exit() ended the run before it finished: {reason}"
            )
            raise
        except BaseException:
            self.cut_short = False
            raise
        self.cut_short = False
        return outcome

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # pytest reports its own stops through this hook too (``Session.Interrupted``
        # for collection errors, ``pytest.exit``); only a real KeyboardInterrupt is a
        # Ctrl-C. (xdist reports an interrupted worker separately: ``_xdist``.)
        if type(excinfo.value) is KeyboardInterrupt:
            self._ledger.mark_interrupted()
            self.arm()

    def arm(self) -> None:
        """From now on SIGINT exits at once (main thread only, where signals land); then
        tell ``on_interrupt`` (once), which a second Ctrl-C may cut short."""
        if not self._armed and threading.current_thread() is threading.main_thread():
            try:
                self._previous = signal.signal(signal.SIGINT, self._exit_now)
                self._armed = True
            except (ValueError, OSError):  # not the main interpreter, or no signals here
                pass
        if not self._told:
            self._told = True
            for told in self.on_interrupt:
                told()

    def _exit_now(self, signum: int, frame: object) -> None:
        del signum, frame
        writer = self.writer
        if writer is not None and writer.writing:
            # The writer calls this when the line is down (it never imports this module).
            writer.exit_after_write = functools.partial(exit_at_once, writer)
            return
        exit_at_once(writer)

    def close(self) -> None:
        """Give SIGINT back its previous handler (at unconfigure, from ``_session.stop``)."""
        if self._armed:
            self._armed = False
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signal.SIGINT, self._previous or signal.default_int_handler)


def exit_at_once(writer: JournalWriter | None) -> None:
    """Say where the finished results are, then leave without any cleanup."""
    where = ""
    if writer is not None and (writer.lines or _holds_lines(writer.path)):
        where = f"; finished results are in {writer.path}"
    message = f"\nrampart: second interrupt, exiting at once (no report written){where}\n"
    try:
        os.write(2, message.encode("utf-8", "replace"))
    finally:
        os._exit(EXIT_AT_ONCE)


def _holds_lines(path: Path) -> bool:
    """The journal file holds something (under xdist the workers wrote it)."""
    try:
        return path.stat().st_size > 0
    except OSError:
        return False
