"""``_quick_exit.register``: one exit collection per process, however often called."""

from __future__ import annotations

import subprocess
import sys


def test_registering_again_moves_the_handlers_instead_of_adding_more() -> None:
    # Automatic collections are off; a handler registered first (so it runs last)
    # counts the collections the plugin's handlers made at exit.
    code = (
        "import atexit, gc\n"
        "gc.disable()\n"
        "seen = []\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and seen.append(1))\n"
        "atexit.register(lambda: print(len(seen), gc.get_freeze_count() > 0))\n"
        "from rampart.pytest_plugin._quick_exit import register\n"
        "register(); register(); register()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["1", "True"]
