"""``--rampart-concurrency auto``, ini ``rampart_concurrency = auto`` and
``@pytest.mark.trial(concurrency="auto")`` in real pytest runs: a group of clones with a
flat latency runs more than the 10 it starts at; a throttled one backs off."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._pacing import DEFAULT_CONCURRENCY
from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

if TYPE_CHECKING:
    import pytest

# 40 clones of 20 ms each (2 s where every slot must fill, however
# loaded the machine); test_peak reads the most that ran at once.
GROUP = """
import anyio
import pytest
from rampart import Result, SafetyStatus, record_result
from rampart.core.types import Request, Response, Turn

IN_FLIGHT = [0]
PEAK = [0]

@pytest.mark.trial({marker})
async def test_group():
    IN_FLIGHT[0] += 1
    PEAK[0] = max(PEAK[0], IN_FLIGHT[0])
    await anyio.sleep({seconds})
    IN_FLIGHT[0] -= 1
    turn = Turn(request=Request(prompt="hi"), response=Response(text="no"), turn_number=0)
    record_result(Result(status=SafetyStatus.SAFE, summary="ok", turns=[turn]))

def test_peak():
    assert PEAK[0] {expect}, PEAK[0]
"""


class TestAutoForms:
    def test_option(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(GROUP.format(seconds=0.02, marker="n=40", expect="> 10"))
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-concurrency", "auto")
        result.assert_outcomes(passed=2)

    def test_ini(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester, "rampart_concurrency = auto")
        pytester.makepyfile(GROUP.format(seconds=0.02, marker="n=40", expect="> 10"))
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)

    def test_marker(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(
            GROUP.format(seconds=0.02, marker='n=40, concurrency="auto"', expect="> 10")
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)

    def test_marker_takes_what_the_option_takes(self, pytester: pytest.Pytester) -> None:
        """The marker reads the setting as ``--rampart-concurrency`` does: ``"AUTO"`` in
        any case, and a number given as text."""
        write_ini(pytester)
        pytester.makepyfile(
            test_auto=GROUP.format(seconds=0.02, marker='n=40, concurrency=" AUTO"', expect="> 10"),
            test_text=GROUP.format(seconds=0.02, marker='n=40, concurrency="4"', expect="== 4"),
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=4)

    def test_marker_number_beats_the_auto_option(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(GROUP.format(seconds=0.02, marker="n=40, concurrency=4", expect="== 4"))
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-concurrency=auto")
        result.assert_outcomes(passed=2)

    def test_default_stays_fixed(self, pytester: pytest.Pytester) -> None:
        """``auto`` is opt-in: without it the fixed default bound holds."""
        write_ini(pytester)
        pytester.makepyfile(
            GROUP.format(seconds=2.0, marker="n=40", expect=f"== {DEFAULT_CONCURRENCY}")
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)


def test_a_throttled_group_backs_off(pytester: pytest.Pytester) -> None:
    """Clones that report throttling above 6 in flight keep the group near 6; the
    verdict is the same as at any concurrency."""
    write_ini(pytester)
    pytester.makepyfile(
        """
        import anyio
        import pytest
        from rampart import Result, SafetyStatus, record_result
        from rampart.core.types import Request, Response, Turn
        from rampart.engine import report_throttle

        IN_FLIGHT = [0]
        LATE_PEAK = [0]
        DONE = [0]

        @pytest.mark.trial(n=80, concurrency="auto")
        async def test_group():
            IN_FLIGHT[0] += 1
            if DONE[0] >= 40:
                LATE_PEAK[0] = max(LATE_PEAK[0], IN_FLIGHT[0])
            if IN_FLIGHT[0] > 6:
                report_throttle()
            await anyio.sleep(0.02)
            IN_FLIGHT[0] -= 1
            DONE[0] += 1
            turn = Turn(request=Request(prompt="hi"), response=Response(text="no"), turn_number=0)
            record_result(Result(status=SafetyStatus.SAFE, summary="ok", turns=[turn]))

        def test_late_peak():
            assert 1 <= LATE_PEAK[0] <= 10, LATE_PEAK[0]
        """
    )
    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)


def test_what_auto_did_is_in_the_report(pytester: pytest.Pytester) -> None:
    """The JSON report's ``trial_groups`` and the HTML report show what the adaptive
    limit did (issue 12's gap); a fixed-concurrency group says nothing about it. Under
    ``-n 2`` too: the statistics cross from the worker."""
    import json

    write_ini(pytester)
    pytester.makepyfile(
        # test_peak may run on the other worker: the report's statistics say it here.
        GROUP.format(seconds=0.02, marker='n=40, concurrency="auto"', expect=">= 0")
        + """
@pytest.mark.trial(n=3, concurrency=2)
def test_fixed():
    record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
"""
    )
    for extra, out in (((), "single"), (("-n", "2"), "xdist")):
        result = pytester.runpytest(*NO_ASYNCIO, f"--rampart-report-dir={out}", *extra)
        result.assert_outcomes(passed=3)
        (report,) = (pytester.path / out).glob("run_report_*.json")
        groups = {g["test_name"]: g for g in json.loads(report.read_text())["trial_groups"]}
        adaptive = groups["test_group"]["concurrency"]
        assert set(adaptive) == {
            "final",
            "peak",
            "peak_in_flight",
            "cuts",
            "throttle_cuts",
            "throttles",
        }
        assert adaptive["peak_in_flight"] > 10
        assert groups["test_fixed"]["concurrency"] is None
        (page,) = (pytester.path / out).glob("run_report_*.html")
        html = page.read_text()
        assert '"peak_in_flight":' in html
        assert "adaptive concurrency: ended at " in html
