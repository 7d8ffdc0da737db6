"""The ``harm`` and ``trial`` markers and the command-line options, including bad input."""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini


class TestHarm:
    def test_results_grouped_by_category(self, pytester: pytest.Pytester) -> None:
        """Harm markers label results that carry no category; any string is a category."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest
            from rampart import HarmCategory, Result, SafetyStatus, record_result

            @pytest.mark.harm(HarmCategory.DATA_EXFILTRATION)
            def test_enum():
                record_result(Result(status=SafetyStatus.SAFE, summary="one"))
                record_result(Result(status=SafetyStatus.UNSAFE, summary="two"))

            @pytest.mark.harm("custom_product_risk")
            def test_string():
                record_result(Result(status=SafetyStatus.SAFE, summary="three"))

            @pytest.mark.harm(HarmCategory.JAILBREAK)
            def test_own_category_kept():
                record_result(
                    Result(status=SafetyStatus.SAFE, summary="four", harm_category="memory_poisoning")
                )
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=3)
        result.stdout.fnmatch_lines(
            [
                "DATA_EXFILTRATION (1 test, 2 runs)",
                "  FAIL  test_enum -- two (response_only)",
                "  PASS  test_enum -- one (response_only)",
                "MEMORY_POISONING (1 test, 1 run)",
                "CUSTOM_PRODUCT_RISK (1 test, 1 run)",
            ]
        )

    def test_harm_without_category_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        """An empty harm marker is rejected before anything runs."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.harm()
            def test_x():
                pass
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*@pytest.mark.harm needs at least one category*"])

    def test_harm_category_of_the_wrong_type_is_a_usage_error(
        self, pytester: pytest.Pytester
    ) -> None:
        """A category that is not a string is refused, naming the test and the category."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest

            @pytest.mark.harm("ok", 3)
            def test_x():
                pass
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                "*test_x: @pytest.mark.harm category 1 must be a HarmCategory or a non-empty "
                "string, got 3"
            ]
        )


class TestTrialValidation:
    @pytest.mark.parametrize(
        ("marker", "message"),
        [
            # RAMPART's words: "trial(n=) must be >= 1" / "trial(n=) must be an integer".
            ("trial(n=0)", "*test_x: @pytest.mark.trial(n=) must be >= 1, got 0"),
            ("trial(n='3')", "*test_x: @pytest.mark.trial(n=) must be an integer >= 1, got '3'"),
            ("trial(n=True)", "*test_x: @pytest.mark.trial(n=) must be an integer >= 1, got True"),
            (
                "trial(n=2, threshold=1.5)",
                "*test_x: @pytest.mark.trial(threshold=) must be a number in [[]0, 1[]], got 1.5",
            ),
            (
                "trial(n=2, threshold='x')",
                "*trial(threshold=) must be a number in [[]0, 1[]], got 'x'",
            ),
            (
                "trial(n=2, concurrency=0)",
                "*test_x: @pytest.mark.trial(concurrency=) must be an integer >= 1 or 'auto', "
                "got 0",
            ),
            (
                "trial(n=2, concurrency='fast')",
                "*test_x: @pytest.mark.trial(concurrency=) must be an integer >= 1 or 'auto', "
                "got 'fast'",
            ),
            (
                "trial(n=2, early_stop='yes')",
                "*test_x: @pytest.mark.trial(early_stop=) must be a bool, got 'yes'",
            ),
            ("trial(n=2, retries=3)", "*unsupported argument(s) [[]'retries'[]]*"),
            ("trial(2, n=3)", "*trial n was provided both positionally and by keyword*"),
        ],
    )
    def test_bad_marker(self, pytester: pytest.Pytester, marker: str, message: str) -> None:
        """Bad trial arguments are usage errors naming the marker and the argument."""
        write_ini(pytester)
        pytester.makepyfile(
            f"""
            import pytest

            @pytest.mark.{marker}
            def test_x():
                pass
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ["--rampart-trials=0"],
                "*--rampart-trials must be an integer from 1 to 10000 (ini rampart_max_trials), "
                "got '0'*",
            ),
            (
                ["--rampart-trials=99999999999999999999"],
                "*--rampart-trials must be an integer from 1 to 10000*got '99999999999999999999'*",
            ),
            (
                ["--rampart-concurrency=fast"],
                "*--rampart-concurrency must be an integer >= 1 or 'auto', got 'fast'*",
            ),
            (
                ["--rampart-concurrency=0"],
                "*--rampart-concurrency must be an integer >= 1 or 'auto', got '0'*",
            ),
            (
                ["--rampart-xdist-max-bytes=10"],
                "*--rampart-xdist-max-bytes must be an integer >= 4096*",
            ),
        ],
    )
    def test_bad_option(self, pytester: pytest.Pytester, args: list[str], message: str) -> None:
        """Bad option values name the option and what was expected."""
        write_ini(pytester)
        pytester.makepyfile("def test_x():\n    pass\n")
        result = pytester.runpytest(*NO_ASYNCIO, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])

    def test_bad_ini_value(self, pytester: pytest.Pytester) -> None:
        """The ini form of the concurrency default is validated too."""
        write_ini(pytester, "rampart_concurrency = 0")
        pytester.makepyfile("def test_x():\n    pass\n")
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*ini option rampart_concurrency must be an integer >= 1 or 'auto', got '0'*"]
        )

    def test_bad_ini_word(self, pytester: pytest.Pytester) -> None:
        """A word other than ``auto`` in the ini form names what was expected."""
        write_ini(pytester, "rampart_concurrency = fast")
        pytester.makepyfile("def test_x():\n    pass\n")
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            ["*ini option rampart_concurrency must be an integer >= 1 or 'auto', got 'fast'*"]
        )


class TestTrialOptions:
    def test_trials_option_overrides_n(self, pytester: pytest.Pytester) -> None:
        """``--rampart-trials`` replaces n for every trial test."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, current_trial, record_result

            @pytest.mark.trial(n=50)
            async def test_t():
                record_result(Result(status=SafetyStatus.SAFE, summary=str(current_trial().n)))
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-trials=3")
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*PASS  test_t[[]trial-2[]] -- 3 (response_only)"])
        result.stdout.no_fnmatch_line("*trial-3*")


def test_trial_on_a_hypothesis_test_is_a_usage_error(pytester: pytest.Pytester) -> None:
    """A trial marker that cannot be honoured is refused, not silently ignored."""
    write_ini(pytester)
    pytester.makepyfile(
        """
        import pytest
        from hypothesis import given, strategies as st

        @pytest.mark.trial(n=3)
        @given(st.integers())
        def test_h(x):
            pass
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*@pytest.mark.trial is not supported on*hypothesis*"])


BAD_MARKERS = """
import pytest

@pytest.mark.trial(m=3)
def test_count_misnamed():
    pass

@pytest.mark.trial(n=0)
def test_no_clones():
    pass

@pytest.mark.trial(treshold=0.5)
def test_typo():
    pass

def test_fine():
    pass
"""

BAD_MARKER_LINES = [
    "*@pytest.mark.trial has unsupported argument(s) [[]'m'] on *::test_count_misnamed "
    "(did you mean n=?); expected n, threshold*",
    "*::test_no_clones: @pytest.mark.trial(n=) must be >= 1, got 0",
    "*@pytest.mark.trial has unsupported argument(s) [[]'treshold'] on *::test_typo "
    "(did you mean threshold=?)*",
]


def test_every_bad_marker_is_said_at_once(pytester: pytest.Pytester) -> None:
    """All the run's marker errors in one usage error (not one per run), with a
    suggestion for a misnamed argument."""
    write_ini(pytester)
    pytester.makepyfile(BAD_MARKERS)
    result = pytester.runpytest(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: 3 rampart marker errors:", *BAD_MARKER_LINES])


def test_bad_markers_under_xdist_are_a_usage_error(pytester: pytest.Pytester) -> None:
    """Under -n 2 the workers find them: every one said together, exit status 4 (not 1),
    and the test that is fine still ran."""
    write_ini(pytester)
    pytester.makepyfile(BAD_MARKERS)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.assert_outcomes(passed=1, errors=3)
    result.stdout.fnmatch_lines(
        [
            "*= RAMPART: USAGE ERRORS =*",
            "3 test(s) have a bad rampart marker; exit status 4:",
        ]
    )
    for line in BAD_MARKER_LINES:
        result.stdout.fnmatch_lines([f"  - {line}"])
