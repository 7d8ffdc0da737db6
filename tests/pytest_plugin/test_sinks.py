"""Report sinks: the hook, the deprecated fixture, failures, and never overwriting."""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    reports,
    write_ini,
)

ONE_RESULT = """
from rampart import Result, SafetyStatus, record_result

def test_one():
    result = Result(status=SafetyStatus.SAFE, summary="fine")
    record_result(result)
    result.metadata["scenario_id"] = "receipt-7"
"""


class TestHook:
    def test_hook_sink_receives_every_result(self, pytester: pytest.Pytester) -> None:
        """The JSON report holds the results, their tags and the user's receipt keys."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["RAMPART report written to *run_report_*.json"])
        report = only_report(pytester)
        assert report["total_runs"] == 1
        (entry,) = all_results(report)
        assert entry["summary"] == "fine"
        assert entry["metadata"]["scenario_id"] == "receipt-7"
        assert (
            entry["metadata"]["_pytest_nodeid"]
            == "test_hook_sink_receives_every_result.py::test_one"
        )
        assert entry["metadata"]["_rampart_result_index"] == 0

    def test_union_of_implementations(self, pytester: pytest.Pytester) -> None:
        """Every hook implementation contributes its sinks."""
        write_ini(pytester)
        pytester.makeconftest(
            REPORT_HOOK
            + """
import pytest

class Memory:
    reports = []
    async def emit_async(self, *, report):
        Memory.reports.append(report)

class Second:
    def pytest_rampart_sinks(self, config):
        return [Memory()]

def pytest_configure(config):
    config.pluginmanager.register(Second())

def pytest_unconfigure(config):
    assert len(Memory.reports) == 1 and Memory.reports[0].total_runs == 1
"""
        )
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.OK
        assert len(reports(pytester)) == 1

    def test_bad_return_is_dropped_with_a_warning(self, pytester: pytest.Pytester) -> None:
        """A hook returning something other than sinks is named in a warning and ignored."""
        write_ini(pytester)
        pytester.makeconftest("def pytest_rampart_sinks(config):\n    return ['not a sink']\n")
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(
            [
                "RAMPART WARNING: pytest_rampart_sinks in *conftest.py returned str, which has no emit_async(); ignored"
            ]
        )

    def test_failing_sink_fails_the_run(self, pytester: pytest.Pytester) -> None:
        """A sink that raises is reported and forces a non-zero exit: no silent loss."""
        write_ini(pytester)
        pytester.makeconftest(
            """
class Broken:
    async def emit_async(self, *, report):
        raise OSError("disk full")
    def __repr__(self):
        return "Broken()"

def pytest_rampart_sinks(config):
    return [Broken()]
"""
        )
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            ["*RAMPART: REPORT SINK FAILED*", "  - Broken(): OSError: disk full"]
        )

    def test_reports_are_never_overwritten(self, pytester: pytest.Pytester) -> None:
        """Two runs into the same directory leave two reports."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(ONE_RESULT)
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        assert len(reports(pytester)) == 2


LEGACY_FIXTURE = """
import pytest
from pathlib import Path
from rampart.reporting import JsonFileReportSink

@pytest.fixture(scope="session")
def rampart_sinks():
    return [JsonFileReportSink(output_dir=Path(__file__).parent / "reports")]
"""


class TestLegacyFixture:
    def test_fixture_still_works_and_warns(self, pytester: pytest.Pytester) -> None:
        """The deprecated fixture path writes reports and emits a DeprecationWarning."""
        write_ini(pytester)
        pytester.makeconftest(LEGACY_FIXTURE)
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1, warnings=1)
        result.stdout.fnmatch_lines(
            [
                "*DeprecationWarning: The rampart_sinks fixture is deprecated and will be removed in 0.3.0*"
            ]
        )
        assert only_report(pytester)["total_runs"] == 1

    def test_fixture_skipped_when_a_hook_exists(self, pytester: pytest.Pytester) -> None:
        """With any hook implementation, the fixture is never resolved: no double reports."""
        write_ini(pytester)
        pytester.makeconftest(
            LEGACY_FIXTURE.replace(
                "def rampart_sinks():", "def rampart_sinks():\n    raise AssertionError('resolved')"
            )
            + "\n\ndef pytest_rampart_sinks(config):\n    return []\n"
        )
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        assert result.ret == pytest.ExitCode.OK
        assert reports(pytester) == []


class TestHookImplementations:
    def test_hook_without_config_argument(self, pytester: pytest.Pytester) -> None:
        """Like any pluggy hook, an implementation may omit the ``config`` argument."""
        write_ini(pytester)
        pytester.makeconftest(
            REPORT_HOOK.replace("def pytest_rampart_sinks(config):", "def pytest_rampart_sinks():")
        )
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.OK
        assert only_report(pytester)["total_runs"] == 1

    def test_raising_hook_is_reported_and_others_still_emit(
        self, pytester: pytest.Pytester
    ) -> None:
        """A hook that raises fails the run loudly without stopping the other sinks."""
        write_ini(pytester)
        pytester.makeconftest(
            REPORT_HOOK
            + """

class Broken:
    def pytest_rampart_sinks(self, config):
        raise RuntimeError("db down")

def pytest_configure(config):
    config.pluginmanager.register(Broken(), "broken-sinks")
"""
        )
        pytester.makepyfile(ONE_RESULT)
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            [
                "*REPORT SINK FAILED*",
                "  - pytest_rampart_sinks in broken-sinks raised RuntimeError: db down",
            ]
        )
        assert only_report(pytester)["total_runs"] == 1


def test_function_scoped_legacy_fixture_is_reported(pytester: pytest.Pytester) -> None:
    """A rampart_sinks fixture with the wrong scope is named, and the run fails, not the test."""
    write_ini(pytester)
    pytester.makeconftest(
        LEGACY_FIXTURE.replace('@pytest.fixture(scope="session")', "@pytest.fixture")
    )
    pytester.makepyfile(ONE_RESULT)
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["RAMPART WARNING: the rampart_sinks fixture could not be resolved*"]
    )


def test_unrecordable_result_is_marked_not_lost(pytester: pytest.Pytester) -> None:
    """A result the trace codec cannot record becomes an attributed ERROR; the run is incomplete."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        from rampart import Result, SafetyStatus, record_result

        def test_bad_metadata():
            record_result(Result(status=SafetyStatus.UNSAFE, summary="found", metadata={"k": (1, 2)}))

        def test_fine():
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*RAMPART: INCOMPLETE RUN*",
            "  - a result of *test_bad_metadata was lost: not recordable*",
        ]
    )
    report = only_report(pytester)
    assert report["metadata"]["incomplete"] is True
    marker = next(r for r in all_results(report) if r["status"] == "error")
    assert marker["metadata"]["_rampart_original_status"] == "unsafe"
    assert marker["metadata"]["_pytest_nodeid"].endswith("::test_bad_metadata")
