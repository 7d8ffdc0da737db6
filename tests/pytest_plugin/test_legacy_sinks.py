"""The deprecated ``rampart_sinks`` under xdist, as RAMPART's "xdist compatibility" says.

The controller resolves it directly: a parameterless fixture is called, a fixture that
depends on other fixtures is skipped with a warning, a module-level list is used; the
``pytest_rampart_sinks`` hook still takes precedence.
"""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, only_report, reports, write_ini

TEST = (
    "from rampart import Result, SafetyStatus, record_result\n\n"
    "def test_one():\n"
    "    record_result(Result(status=SafetyStatus.SAFE, summary='one'))\n\n"
    "def test_two():\n"
    "    record_result(Result(status=SafetyStatus.SAFE, summary='two'))\n"
)

PARAMETERLESS = """
import pytest
from pathlib import Path
from rampart.reporting import JsonFileReportSink

@pytest.fixture(scope="session")
def rampart_sinks():
    return [JsonFileReportSink(output_dir=Path(__file__).parent / "reports")]
"""


@pytest.mark.parametrize("xdist", [True, False], ids=["n2", "single"])
def test_parameterless_fixture(pytester: pytest.Pytester, xdist: bool) -> None:
    """Called directly on the controller (resolved by pytest in a single process); the
    report holds every result and the deprecation is reported."""
    write_ini(pytester)
    pytester.makeconftest(PARAMETERLESS)
    pytester.makepyfile(TEST)
    args = ["-n", "2"] if xdist else []
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-W", "default::DeprecationWarning", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert only_report(pytester)["total_runs"] == 2
    # One line that says what to write instead.
    result.stdout.fnmatch_lines(
        [
            "*rampart_sinks fixture is deprecated*Use the pytest_rampart_sinks hook instead: "
            "in conftest.py, replace the fixture with "
            "`def pytest_rampart_sinks(config): return [[]...[]]` returning the same sinks."
        ]
    )


def test_fixture_with_dependencies_is_skipped_with_a_warning(pytester: pytest.Pytester) -> None:
    write_ini(pytester)
    pytester.makeconftest(
        """
import pytest
from rampart.reporting import JsonFileReportSink

@pytest.fixture(scope="session")
def rampart_sinks(tmp_path_factory):
    return [JsonFileReportSink(output_dir=tmp_path_factory.mktemp("r"))]
"""
    )
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "RAMPART WARNING: the rampart_sinks fixture in *conftest.py depends on other "
            "fixtures (tmp_path_factory)*skipped*pytest_rampart_sinks hook"
        ]
    )


@pytest.mark.parametrize("xdist", [True, False], ids=["n2", "single"])
def test_module_level_list(pytester: pytest.Pytester, xdist: bool) -> None:
    write_ini(pytester)
    pytester.makeconftest(
        """
from pathlib import Path
from rampart.reporting import JsonFileReportSink

rampart_sinks = [JsonFileReportSink(output_dir=Path(__file__).parent / "reports")]
"""
    )
    pytester.makepyfile(TEST)
    args = ["-n", "2"] if xdist else []
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-W", "default::DeprecationWarning", *args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert only_report(pytester)["total_runs"] == 2


def test_the_hook_takes_precedence(pytester: pytest.Pytester) -> None:
    """With a hook implementation, the fixture is never called, on the controller either."""
    write_ini(pytester)
    pytester.makeconftest(
        """
import pathlib
import pytest
from rampart.reporting import JsonFileReportSink

HERE = pathlib.Path(__file__).parent

def pytest_rampart_sinks(config):
    return [JsonFileReportSink(output_dir=HERE / "reports")]

@pytest.fixture(scope="session")
def rampart_sinks():
    (HERE / "fixture-called").touch()
    return [JsonFileReportSink(output_dir=HERE / "fixture-reports")]
"""
    )
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert len(reports(pytester)) == 1
    assert not (pytester.path / "fixture-called").exists()
    assert not (pytester.path / "fixture-reports").exists()
