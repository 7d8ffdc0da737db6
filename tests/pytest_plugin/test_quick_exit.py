"""A run that used rampart exits without collecting the cycles of the heap it leaves.

Checked in real pytest processes: a conftest's exit handler, registered before the
plugin's, reports what the interpreter holds after the plugin's handler ran; garbage
made after pytest's own last collection is still finalized.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.pytest_plugin.conftest import NO_ASYNCIO

if TYPE_CHECKING:
    import pytest

CONFTEST = """
import atexit, gc, json, os
import pytest

OUT = os.path.join(os.path.dirname(__file__), "exit.json")
SEEN = {"finalized": False}


class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        SEEN["finalized"] = True


def _garbage():
    Cycle()  # unreachable at once, freed only by a collection


# Registered before the plugin's handler, so it runs after it (atexit is last-in,
# first-out); the garbage is made by a handler registered after it, so it runs first.
atexit.register(lambda: open(OUT, "w").write(json.dumps(
    {"frozen": gc.get_freeze_count(), "finalized": SEEN["finalized"]}
)))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    atexit.register(_garbage)
"""

USES_RAMPART = """
from rampart import Result, SafetyStatus


def test_uses_rampart():
    assert Result(status=SafetyStatus.SAFE, summary="ok")
"""

PLAIN = """
def test_plain():
    pass
"""


def _exit_state(pytester: pytest.Pytester, test_source: str) -> dict[str, object]:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_exit=test_source)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO)
    result.assert_outcomes(passed=1)
    state: dict[str, object] = json.loads((pytester.path / "exit.json").read_text())
    return state


def test_a_run_that_used_rampart_leaves_its_heap_to_the_os(pytester: pytest.Pytester) -> None:
    state = _exit_state(pytester, USES_RAMPART)
    assert state["frozen"] != 0, "the heap alive at exit was not frozen"
    assert state["finalized"] is True, "garbage pending at exit was not collected first"


def test_a_run_that_never_used_rampart_exits_as_before(pytester: pytest.Pytester) -> None:
    state = _exit_state(pytester, PLAIN)
    assert state["frozen"] == 0  # its garbage is collected later, as the interpreter ends
