"""Terminal and message hygiene (issue 9): what the plugin prints and reports is true.

Each case read wrong before: a raw harm category on the terminal, a self-cancelled clone reported as "not run (early stop)", a usage
error run writing a clean-looking empty report, a replacement xdist worker counted as
an extra worker, and a skip in one clone hiding another clone's UNSAFE finding.
"""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    only_report,
    reports,
    write_ini,
)


def test_harm_category_is_sanitized_on_the_terminal(pytester: pytest.Pytester) -> None:
    """Escape sequences, newlines and bidi overrides in a category never reach the
    terminal raw."""
    write_ini(pytester)
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.harm("\\x1b]0;PWNED\\x07evil\\nnext line\\u202eesrever")
        def test_x():
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    for raw in ("\x1b", "\x07", "\u202e", "PWNED\x07"):
        assert raw not in text
    result.stdout.fnmatch_lines(["EVIL NEXT LINEESREVER (1 test, 1 run)"])


def test_a_clone_cancelling_itself_is_not_an_early_stop(pytester: pytest.Pytester) -> None:
    """Without early stop, a clone whose own code raises a cancellation counts as a
    failed clone and says so; nothing reads "not run (early stop)"."""
    write_ini(pytester)
    pytester.makepyfile(
        """
        import asyncio
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.fixture
        def anyio_backend():
            return "asyncio"

        @pytest.mark.trial(n=4, concurrency=4)
        async def test_group(rampart_trial):
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            if rampart_trial.index == 2:
                raise asyncio.CancelledError
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(failed=1)
    assert "not run (early stop)" not in result.stdout.str()
    # (On asyncio the cancellation may also stop clones not started yet; those are
    # failed clones too, "never started".)
    result.stdout.fnmatch_lines(
        [
            "*trial group failed: *",
            "*test_group[[]trial-2[]]: CloneCancelled: the clone ended with a cancellation "
            "that early stop did not request*",
        ]
    )


def test_usage_error_run_writes_no_report(pytester: pytest.Pytester) -> None:
    """A run stopped by a usage error (exit 4) leaves no clean-looking empty report."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile("import pytest\n\n@pytest.mark.trial(n=0)\ndef test_t():\n    pass\n")
    result = pytester.runpytest(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert reports(pytester) == []


def test_collection_error_report_records_the_exit_status(pytester: pytest.Pytester) -> None:
    """A run pytest stops early (here a collection error) says so in its report."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n", test_broken="import nothing_here\n")
    result = pytester.runpytest(*NO_ASYNCIO)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = only_report(pytester)
    assert report["run"]["exit_status"] == 2
    assert report["run"]["interrupted"] is False  # not a Ctrl-C
    assert "interrupted" not in report["metadata"]


def test_replacement_worker_takes_the_crashed_ones_slot(pytester: pytest.Pytester) -> None:
    """xdist replaces a crashed worker under a new id; worker_count stays 2 and the
    replacement is counted as such."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import os
        from rampart import Result, SafetyStatus, record_result

        def test_crash():
            os._exit(1)

        def test_a():
            record_result(Result(status=SafetyStatus.SAFE, summary="a"))

        def test_b():
            record_result(Result(status=SafetyStatus.SAFE, summary="b"))
        """
    )
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
    metadata = only_report(pytester)["metadata"]
    assert metadata["worker_count"] == 2, result.stdout.str()
    assert metadata["workers_replaced"] == 1


class TestSkipInAClone:
    SUITE = """
    import pytest
    from rampart import Result, SafetyStatus, record_result

    @pytest.mark.trial(n=4, concurrency=1)
    def test_group(rampart_trial):
        if rampart_trial.index == 0:
            record_result(Result(status=SafetyStatus.{status}, summary="finding"))
            return
        pytest.{outcome}("environment not ready")
    """

    @pytest.mark.parametrize("outcome", ["skip", "xfail"])
    def test_unsafe_findings_still_fail_the_group(
        self, pytester: pytest.Pytester, outcome: str
    ) -> None:
        write_ini(pytester)
        pytester.makepyfile(self.SUITE.format(status="UNSAFE", outcome=outcome))
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            [
                f"*1 clone(s) recorded UNSAFE results (test_group[[]trial-0[]]) before a clone "
                f"called pytest.{outcome}()*"
            ]
        )

    @pytest.mark.parametrize(("outcome", "counted"), [("skip", "skipped"), ("xfail", "xfailed")])
    def test_without_findings_the_outcome_stands(
        self, pytester: pytest.Pytester, outcome: str, counted: str
    ) -> None:
        write_ini(pytester)
        pytester.makepyfile(self.SUITE.format(status="SAFE", outcome=outcome))
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(**{counted: 1})

    def test_async_clones_too(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.mark.trial(n=3, concurrency=3)
            async def test_group(rampart_trial):
                if rampart_trial.index == 0:
                    record_result(Result(status=SafetyStatus.UNSAFE, summary="finding"))
                    return
                await anyio.sleep(0.05)
                pytest.skip("later clones skip")
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*recorded UNSAFE results*pytest.skip()*"])
