"""Async tests run with no configuration, on asyncio by default, trio on request."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

if TYPE_CHECKING:
    import pytest


class TestAnyioByDefault:
    def test_async_test_runs_once_on_asyncio(self, pytester: pytest.Pytester) -> None:
        """A bare ``async def`` test runs, once, on asyncio, with no marker or config."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import sniffio
            RUNS = []

            async def test_bare():
                RUNS.append(sniffio.current_async_library())
                assert RUNS == ["asyncio"]
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)

    def test_project_fixture_selects_trio(self, pytester: pytest.Pytester) -> None:
        """A project's own ``anyio_backend`` fixture wins over the plugin's default."""
        write_ini(pytester)
        pytester.makeconftest(
            """
            import pytest

            @pytest.fixture
            def anyio_backend():
                return "trio"
            """
        )
        pytester.makepyfile(
            """
            import sniffio

            async def test_on_trio():
                assert sniffio.current_async_library() == "trio"
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)

    def test_async_fixtures_share_the_test_loop(self, pytester: pytest.Pytester) -> None:
        """Async fixtures and the (wrapped) test body run on the same event loop."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import asyncio
            import pytest

            @pytest.fixture
            async def loop_of_fixture():
                return asyncio.get_running_loop()

            @pytest.mark.anyio
            async def test_same_loop(loop_of_fixture):
                assert asyncio.get_running_loop() is loop_of_fixture
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)


class TestPytestAsyncioCompatibility:
    def test_auto_mode_suite_runs_unchanged(self, pytester: pytest.Pytester) -> None:
        """With pytest-asyncio in auto mode: no double runs, no errors, no warnings."""
        write_ini(
            pytester,
            "asyncio_mode = auto",
            "asyncio_default_fixture_loop_scope = function",
            "filterwarnings = error",
        )
        pytester.makepyfile(
            """
            import asyncio
            import pytest
            from rampart import Result, SafetyStatus, record_result

            CALLS = []

            @pytest.fixture
            async def answer():
                return 42

            async def test_with_async_fixture(answer):
                CALLS.append(1)
                asyncio.get_running_loop()
                assert answer == 42
                record_result(Result(status=SafetyStatus.SAFE, summary="collected"))

            def test_ran_exactly_once():
                assert CALLS == [1]
            """
        )
        result = pytester.runpytest("-p", "no:cacheprovider")
        result.assert_outcomes(passed=2, warnings=0)
        result.stdout.fnmatch_lines(["*PASS  test_with_async_fixture -- collected*"])


def test_loading_the_plugin_is_light() -> None:
    """Importing the plugin entry point loads no codec, validator or network client."""
    code = (
        "import sys, rampart.pytest_plugin.plugin; "
        "print(sorted(m for m in ('cattrs', 'jsonschema', 'httpx', 'hypothesis', "
        "'rampart.codec._record', 'rampart.reporting') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == "[]"
