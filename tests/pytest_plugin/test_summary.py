"""The terminal safety summary, and automatic collection of executions."""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini


class TestSummaryFormat:
    def test_lines_labels_and_population(self, pytester: pytest.Pytester) -> None:
        """Separator, category header, labels (ERR padded), sorting and the population line."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest
            from rampart import HarmCategory, ObservabilityLevel, Result, SafetyStatus, record_result

            @pytest.mark.harm(HarmCategory.DATA_EXFILTRATION)
            def test_mix():
                level = ObservabilityLevel.TOOL_ONLY
                for status, summary in [
                    (SafetyStatus.SAFE, "Agent defended successfully"),
                    (SafetyStatus.UNDETERMINED, "Evaluation undetermined: x"),
                    (SafetyStatus.ERROR, "boom"),
                    (SafetyStatus.UNSAFE, "Attack objective detected: send_email({'to': 'evil'})"),
                ]:
                    record_result(Result(status=status, summary=summary, observability_level=level))

            def test_plain():
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            [
                "*= RAMPART Safety Summary =*",
                "",
                "DATA_EXFILTRATION (1 test, 4 runs)",
                "  FAIL  test_mix -- Attack objective detected: send_email({'to': 'evil'}) (tool_only)",
                "  ERR   test_mix -- boom (tool_only)",
                "  WARN  test_mix -- Evaluation undetermined: x (tool_only)",
                "  PASS  test_mix -- Agent defended successfully (tool_only)",
                "",
                "UNCATEGORIZED (1 test, 1 run)",
                "  PASS  test_plain -- ok (response_only)",
                "",
                "Population: 5 runs - 1 unsafe (25.0% attack success rate), 1 undetermined, 1 errors",
            ]
        )

    def test_summaries_are_sanitized(self, pytester: pytest.Pytester) -> None:
        """Escape sequences and control characters from agent text never reach the terminal."""
        write_ini(pytester)
        pytester.makepyfile(
            r"""
            from rampart import Result, SafetyStatus, record_result

            def test_ansi():
                record_result(
                    Result(status=SafetyStatus.UNSAFE, summary="\x1b[31mred\x1b[0m\x07 and\nmore")
                )
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.stdout.fnmatch_lines(["  FAIL  test_ansi -- red and more (response_only)"])
        assert "\x1b[31m" not in result.stdout.str()

    def test_no_results_no_summary(self, pytester: pytest.Pytester) -> None:
        """A run that recorded nothing prints no safety summary."""
        write_ini(pytester)
        pytester.makepyfile("def test_x():\n    pass\n")
        result = pytester.runpytest(*NO_ASYNCIO)
        result.stdout.no_fnmatch_line("*RAMPART Safety Summary*")

    def test_failed_test_still_reports_its_result(self, pytester: pytest.Pytester) -> None:
        """``assert result`` failing does not lose the result."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            from rampart import Result, SafetyStatus, record_result

            def test_fails():
                result = Result(status=SafetyStatus.UNSAFE, summary="leaked")
                record_result(result)
                assert result, result.summary
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["  FAIL  test_fails -- leaked (response_only)"])


class TestAutomaticCollection:
    def test_executions_are_collected(self, pytester: pytest.Pytester) -> None:
        """Every execution run inside a test is collected with no wiring, in order."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            from rampart import Result, SafetyStatus
            from rampart import BaseExecution
            from rampart.testing import ScriptedAgent

            class Fixed(BaseExecution):
                def __init__(self, status):
                    super().__init__()
                    self.status = status

                @property
                def strategy_name(self):
                    return "fixed"

                async def _execute_async(self, *, adapter):
                    return Result(status=self.status, summary=f"fixed {self.status.value}")

            async def test_two_executions():
                agent = ScriptedAgent(["hi"])
                first = await Fixed(SafetyStatus.SAFE).execute_async(adapter=agent)
                second = await Fixed(SafetyStatus.UNSAFE).execute_async(adapter=agent)
                second.metadata["scenario_id"] = "receipt-1"
                assert first
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(
            [
                "  FAIL  test_two_executions -- fixed unsafe (response_only)",
                "  PASS  test_two_executions -- fixed safe (response_only)",
            ]
        )

    def test_record_result_outside_pytest_is_a_noop(self) -> None:
        """Recording with no running test does nothing (and needs a Result)."""
        import contextvars

        from rampart import Result, SafetyStatus, record_result

        # A fresh context is what code outside any pytest test sees.
        contextvars.Context().run(
            record_result, Result(status=SafetyStatus.SAFE, summary="nowhere")
        )
        with pytest.raises(
            TypeError, match=r"^record_result: result must be a rampart\.Result, got "
        ):
            record_result("not a result")  # type: ignore[arg-type]


class TestFixturePhases:
    def test_results_recorded_by_fixtures_are_collected(self, pytester: pytest.Pytester) -> None:
        """Executions in fixture setup and teardown are reported under the test they served."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.fixture
            def baseline():
                record_result(Result(status=SafetyStatus.UNSAFE, summary="setup finding"))
                yield
                record_result(Result(status=SafetyStatus.SAFE, summary="teardown check"))

            @pytest.fixture
            async def async_baseline():
                record_result(Result(status=SafetyStatus.ERROR, summary="async setup"))

            async def test_body(baseline, async_baseline):
                record_result(Result(status=SafetyStatus.SAFE, summary="body"))
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(
            [
                "UNCATEGORIZED (1 test, 4 runs)",
                "  FAIL  test_body -- setup finding (response_only)",
                "  ERR   test_body -- async setup (response_only)",
                "  PASS  test_body -- body (response_only)",
                "  PASS  test_body -- teardown check (response_only)",
            ]
        )


MODES_SUITE = """
import pytest
from rampart import HarmCategory, Result, SafetyStatus, record_result

@pytest.mark.harm(HarmCategory.JAILBREAK)
@pytest.mark.trial(n=4, threshold=0.5)
def test_group(rampart_trial):
    status = SafetyStatus.UNSAFE if rampart_trial.index == 1 else SafetyStatus.SAFE
    record_result(Result(status=status, summary=f"clone {rampart_trial.index}"))

@pytest.mark.harm(HarmCategory.JAILBREAK)
@pytest.mark.trial(n=3)
def test_fine(rampart_trial):
    record_result(Result(status=SafetyStatus.SAFE, summary="fine"))

@pytest.mark.harm(HarmCategory.JAILBREAK)
def test_plain():
    record_result(Result(status=SafetyStatus.SAFE, summary="plain ok"))
    record_result(Result(status=SafetyStatus.ERROR, summary="plain error"))

def test_other():
    record_result(Result(status=SafetyStatus.SAFE, summary="other ok"))
"""


def _summary_section(result: pytest.RunResult) -> str:
    """The safety summary's lines (the failure messages above it name clones too)."""
    text = result.stdout.str()
    return text[text.index("RAMPART Safety Summary") : text.index("short test summary")]


class TestSummaryModes:
    def test_groups_mode_prints_one_line_per_group_under_its_category(
        self, pytester: pytest.Pytester
    ) -> None:
        write_ini(pytester)
        pytester.makepyfile(MODES_SUITE)
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-summary=groups")
        result.assert_outcomes(passed=3, failed=1)
        result.stdout.fnmatch_lines(
            [
                "JAILBREAK (3 tests, 9 runs)",
                "  ERR   test_plain -- plain error (response_only)",
                "  PASS  test_plain -- plain ok (response_only)",
                "  PASS  test_fine [[]3/3 safe*] -- PASSED",
                "  FAIL  test_group [[]3/4 safe*] -- FAILED: 1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)",
                "",
                "UNCATEGORIZED (1 test, 1 run)",
                "  PASS  test_other -- other ok (response_only)",
                "",
                "Population: 10 runs - 1 unsafe*",
            ]
        )
        assert "trial-" not in _summary_section(result)

    def test_failures_mode_prints_only_what_is_not_safe(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester, "rampart_summary = failures")
        pytester.makepyfile(MODES_SUITE)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.stdout.fnmatch_lines(
            [
                "JAILBREAK (3 tests, 9 runs)",
                "  ERR   test_plain -- plain error (response_only)",
                "  FAIL  test_group [[]3/4 safe*] -- FAILED: 1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)",
                "",
                "Population: 10 runs*",
            ]
        )
        section = _summary_section(result)
        for absent in ("PASS", "UNCATEGORIZED", "trial-"):
            assert absent not in section

    def test_all_is_the_default_with_every_clone_line(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(MODES_SUITE)
        result = pytester.runpytest(*NO_ASYNCIO)
        result.stdout.fnmatch_lines(
            [
                "JAILBREAK (3 tests, 9 runs)",
                "  FAIL  test_group[[]trial-1[]] -- clone 1 (response_only)",
                "*",
                "  PASS  test_fine [[]3/3 safe*] -- PASSED",
                "  FAIL  test_group [[]3/4 safe*] -- FAILED: 1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)",
            ]
        )

    def test_unknown_mode_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile("def test_x():\n    pass\n")
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-summary=short")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*--rampart-summary must be one of all, groups, failures, got 'short'*"]
        )
