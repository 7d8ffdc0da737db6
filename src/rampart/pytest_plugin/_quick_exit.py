"""A quicker interpreter exit after a run that used rampart.

At exit CPython clears every module and then collects the reference cycles they leave
(classes, functions, the run's model); after a 20-clone trial run with pytest, rampart,
anyio and trio loaded that took about 70 ms of a 0.7 s process, and more in a venv whose
plugins load more. ``register`` adds, once per process, an ``atexit`` handler that
collects the garbage pending at that moment (so its finalizers run, as they would
have) and then freezes what is still alive (``gc.freeze``): modules are still cleared
and their objects freed by reference counting, but the cycles among them are left to
the operating system. Python does not promise to finalize objects that still exist
when the interpreter exits (the language reference, ``object.__del__``); everything
rampart writes -- the journal, the reports -- is closed at unconfigure, before this.
"""

from __future__ import annotations

import atexit
import gc

__all__ = ["register"]


def register() -> None:
    """Register the exit handler (see the module docstring). Calling it again moves it
    rather than adding a second one (pytester's in-process runs each call it)."""
    # atexit runs its handlers last-registered first: collect, then freeze. Both are
    # builtins, so the same handlers are found again even from a reloaded module.
    for handler in (gc.collect, gc.freeze):
        atexit.unregister(handler)
    atexit.register(gc.freeze)
    atexit.register(gc.collect)
