"""Bounded by design: a cap on n and bounded terminal output. (Results kept out of
memory, the ledger's spill store, are units: ``unit/test_ledger.py``.)"""

from __future__ import annotations

import pytest

from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    write_ini,
)


class TestTrialCap:
    def test_marker_above_the_cap_is_a_usage_error(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(
            "import pytest\n\n@pytest.mark.trial(n=10**30)\ndef test_t():\n    pass\n"
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(
            [
                "*test_t: @pytest.mark.trial(n=) must be <= 10000 (ini rampart_max_trials; "
                "raise it to run more clones), got 1000000000000000000000000000000"
            ]
        )

    def test_ini_raises_the_cap(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester, "rampart_max_trials = 12000")
        pytester.makepyfile(
            "import pytest\n\n@pytest.mark.trial(n=11000)\ndef test_t():\n    pass\n"
        )
        result = pytester.runpytest(*NO_ASYNCIO, "--collect-only")
        assert result.ret == pytest.ExitCode.OK
        result = pytester.runpytest(*NO_ASYNCIO, "--collect-only", "--rampart-trials=12001")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*--rampart-trials must be an integer from 1 to 12000*"])


def test_terminal_prints_a_bounded_number_of_clone_lines(pytester: pytest.Pytester) -> None:
    """Thirty clones: twenty clones' lines (the failing ones first), then how many more
    results the report holds."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import pytest
        from rampart import Result, SafetyStatus, record_result

        @pytest.mark.trial(n=30, threshold=0.5)
        def test_group(rampart_trial):
            status = SafetyStatus.ERROR if rampart_trial.index == 29 else SafetyStatus.SAFE
            record_result(Result(status=status, summary=f"clone {rampart_trial.index}"))
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(passed=1)
    lines = [line for line in result.stdout.lines if "test_group[trial-" in line]
    assert len(lines) == 20
    assert lines[0].startswith("  ERR   test_group[trial-29]")
    result.stdout.fnmatch_lines(["  … 10 more results of test_group in the report"])
    assert len(all_results(only_report(pytester))) == 30
