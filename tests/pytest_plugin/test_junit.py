"""``--junitxml``: rampart's verdicts as JUnit test-case properties, with and without xdist."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import TYPE_CHECKING

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

if TYPE_CHECKING:
    from pathlib import Path

SUITE = """
import pytest
from rampart import HarmCategory, Result, SafetyStatus, record_result

@pytest.mark.harm(HarmCategory.DATA_EXFILTRATION)
@pytest.mark.trial(n=5, threshold=0.8)
def test_group(rampart_trial):
    status = SafetyStatus.UNSAFE if rampart_trial.index == 3 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {rampart_trial.index}"))

def test_plain():
    record_result(Result(status=SafetyStatus.SAFE, summary="refused"))
    record_result(Result(status=SafetyStatus.ERROR, summary="agent \\x1b[31mtimed\\x1b[0m out"))

def test_no_results():
    pass
"""


def _properties(path: Path) -> dict[str, dict[str, str]]:
    cases = {}
    for case in ElementTree.parse(path).iter("testcase"):
        cases[case.get("name", "")] = {
            prop.get("name", ""): prop.get("value", "") for prop in case.iter("property")
        }
    return cases


@pytest.mark.parametrize("xdist", [False, True], ids=["single", "xdist"])
def test_cases_carry_rampart_properties(pytester: pytest.Pytester, xdist: bool) -> None:
    write_ini(pytester)
    pytester.makepyfile(SUITE)
    junit = pytester.path / "junit.xml"
    args = [*NO_ASYNCIO, f"--junitxml={junit}"]
    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run(*args, *(("-n", "2") if xdist else ()))
    result.assert_outcomes(passed=2, failed=1)
    cases = _properties(junit)
    group = cases["test_group"]
    assert group["rampart_status"] == "unsafe"
    assert group["rampart_verdict"] == "failed"
    assert (
        group["rampart_reason"]
        == "1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)"
    )
    assert group["rampart_pass_rate"] == "0.8000"
    low, high = (float(x) for x in group["rampart_ci95"].split("-"))
    assert low < 0.8 < high
    assert group["rampart_threshold"] == "0.8"
    assert group["rampart_harm_category"] == "data_exfiltration"
    assert group["rampart_results"] == "5"
    assert group["rampart_counts"].startswith("4/5 safe, 80% pass rate")
    plain = cases["test_plain"]
    assert plain == {
        "rampart_status": "error",
        "rampart_results": "2",
        "rampart_summary": "agent timed out",
    }
    assert cases["test_no_results"] == {}


def test_no_properties_without_junitxml(pytester: pytest.Pytester) -> None:
    """Reports are left alone unless a JUnit file is asked for."""
    write_ini(pytester)
    pytester.makeconftest(
        """
        def pytest_runtest_logreport(report):
            if report.when == "teardown" and report.user_properties:
                raise AssertionError(f"unexpected properties {report.user_properties}")
        """
    )
    pytester.makepyfile(SUITE)
    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2, failed=1)


def test_inconclusive_group_says_so(pytester: pytest.Pytester) -> None:
    """A group judged with a confidence carries its verdict (inconclusive here), the
    confidence and the exact interval the verdict read."""
    write_ini(pytester, "rampart_inconclusive = xfail")
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=20, threshold=0.9, confidence=0.95)
        def test_group(rampart_trial):
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    junit = pytester.path / "junit.xml"
    pytester.runpytest(*NO_ASYNCIO, f"--junitxml={junit}").assert_outcomes(xfailed=1)
    group = _properties(junit)["test_group"]
    assert group["rampart_verdict"] == "inconclusive"
    assert group["rampart_status"] == "undetermined"
    assert group["rampart_confidence"] == "0.95"
    assert group["rampart_exact_interval"] == "0.8316-1.0000"
    assert group["rampart_reason"] == "95% interval 83–100% contains threshold 90%"
