"""Trials run concurrently inside one item; every clone is reported; the group decides."""

from __future__ import annotations

import pytest

from rampart.pytest_plugin._exit_status import INFRASTRUCTURE_FAILURE
from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    write_ini,
)


class TestConcurrency:
    def test_clones_run_concurrently(self, pytester: pytest.Pytester) -> None:
        """All clones are in flight at once: each waits for a barrier only all can open."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, record_result

            STARTED = []
            BARRIER = None

            @pytest.mark.trial(n=5, concurrency=5)
            async def test_barrier(rampart_trial):
                global BARRIER
                if BARRIER is None:
                    BARRIER = anyio.Event()
                STARTED.append(rampart_trial.index)
                if len(STARTED) == 5:
                    BARRIER.set()
                with anyio.fail_after(10):
                    await BARRIER.wait()
                record_result(Result(status=SafetyStatus.SAFE, summary="through"))
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)

    def test_concurrency_bound(self, pytester: pytest.Pytester) -> None:
        """No more than ``concurrency`` clones run at once."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, record_result

            IN_FLIGHT = [0]
            PEAK = [0]

            @pytest.mark.trial(n=8, concurrency=3)
            async def test_bounded():
                IN_FLIGHT[0] += 1
                PEAK[0] = max(PEAK[0], IN_FLIGHT[0])
                for _ in range(5):
                    await anyio.lowlevel.checkpoint()
                IN_FLIGHT[0] -= 1
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

            def test_peak():
                assert PEAK[0] == 3
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)

    def test_option_sets_default_concurrency(self, pytester: pytest.Pytester) -> None:
        """``--rampart-concurrency`` bounds trial tests that do not set their own."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest

            IN_FLIGHT = [0]
            PEAK = [0]

            @pytest.mark.trial(n=6, threshold=0.0)
            async def test_bounded():
                IN_FLIGHT[0] += 1
                PEAK[0] = max(PEAK[0], IN_FLIGHT[0])
                await anyio.lowlevel.checkpoint()
                IN_FLIGHT[0] -= 1

            def test_peak():
                assert PEAK[0] == 2
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-concurrency=2")
        result.assert_outcomes(passed=1, failed=1)  # no clone recorded a result
        result.stdout.fnmatch_lines(["*trial group failed: 0/6 safe, 6 no-result*"])

    def test_trials_on_trio(self, pytester: pytest.Pytester) -> None:
        """The clone fan-out is anyio, so trial groups run on trio as well."""
        write_ini(pytester)
        pytester.makeconftest(
            "import pytest\n\n@pytest.fixture\ndef anyio_backend():\n    return 'trio'\n"
        )
        pytester.makepyfile(
            """
            import pytest, sniffio
            from rampart import Result, SafetyStatus, record_result

            @pytest.mark.trial(n=3)
            async def test_t():
                assert sniffio.current_async_library() == "trio"
                record_result(Result(status=SafetyStatus.SAFE, summary="trio"))
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*PASS  test_t [[]3/3 safe, 100% pass rate*-- PASSED"])


GROUP_MODULE = """
import pytest
from rampart import Result, SafetyStatus, current_trial, record_result

STATUSES = {statuses!r}

@pytest.mark.trial(n=len(STATUSES), threshold={threshold})
async def test_group():
    status = STATUSES[current_trial().index]
    if status is not None:
        record_result(Result(status=SafetyStatus(status), summary=f"clone says {{status}}"))
    assert status == "safe"
"""


class TestGroupVerdict:
    @pytest.mark.parametrize(
        ("statuses", "threshold", "verdict", "line"),
        [
            (["safe"] * 4 + ["error"], 0.8, "PASSED", "4/5 safe, 80% pass rate, threshold: 80%"),
            (
                ["safe"] * 3 + ["error"] * 2,
                0.8,
                "FAILED: pass rate 60% below threshold 80% (2 ERROR)",
                "3/5 safe, 60% pass rate, threshold: 80%",
            ),
            (
                ["safe"] * 9 + ["unsafe"],
                0.5,
                "FAILED: 1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)",
                "9/10 safe, 90% pass rate, threshold: 50%",
            ),
            (
                ["safe"] * 4 + ["undetermined"],
                1.0,
                "FAILED: pass rate 80% below threshold 100% (1 UNDETERMINED)",
                "4/5 safe, 80% pass rate",
            ),
            (["safe"] * 4 + [None], 0.8, "PASSED", "4/5 safe, 1 no-result, 80% pass rate"),
            (
                ["safe"] * 3 + [None] * 2,
                0.8,
                "FAILED: pass rate 60% below threshold 80% (2 no result)",
                "3/5 safe, 2 no-result, 60% pass rate",
            ),
        ],
    )
    def test_group_decides_the_outcome(
        self,
        pytester: pytest.Pytester,
        statuses: list[str | None],
        threshold: float,
        verdict: str,
        line: str,
    ) -> None:
        """Any UNSAFE fails; else the SAFE fraction must reach the threshold. A failed
        group's line says why."""
        write_ini(pytester)
        pytester.makepyfile(GROUP_MODULE.format(statuses=statuses, threshold=threshold))
        result = pytester.runpytest(*NO_ASYNCIO)
        passed = verdict == "PASSED"
        if passed:
            result.assert_outcomes(passed=1)
            assert result.ret == pytest.ExitCode.OK
        else:
            result.assert_outcomes(failed=1)
            # A group failed by its ERRORs alone found nothing: the infrastructure status.
            only_errors = "error" in statuses and "unsafe" not in statuses
            assert result.ret == (INFRASTRUCTURE_FAILURE if only_errors else 1)
        label = "PASS" if passed else "FAIL"
        escaped = line.replace("[", "[[]")
        result.stdout.fnmatch_lines([f"  {label}  test_group [[]{escaped}*] -- {verdict}"])

    def test_failure_message_names_counts_and_clones(self, pytester: pytest.Pytester) -> None:
        """A failing group says why and shows the first failing clones' summaries."""
        write_ini(pytester)
        statuses = ["safe", "unsafe", "safe", "error", "unsafe", "unsafe", "unsafe"]
        pytester.makepyfile(GROUP_MODULE.format(statuses=statuses, threshold=0.5))
        result = pytester.runpytest(*NO_ASYNCIO)
        result.stdout.fnmatch_lines(
            [
                "trial group failed: 2/7 safe, 29% pass rate*; 4 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some), 1 ERROR",
                "  test_group[[]trial-1[]]: UNSAFE: clone says unsafe",
                "  test_group[[]trial-3[]]: ERROR: clone says error",
                "  test_group[[]trial-4[]]: UNSAFE: clone says unsafe",
                "  ... and 2 more failing clones",
            ]
        )

    def test_failing_clone_does_not_stop_others(self, pytester: pytest.Pytester) -> None:
        """Every clone runs and is reported on its own line, even after a failure."""
        write_ini(pytester)
        statuses = ["unsafe", "safe", "safe", "safe"]
        pytester.makepyfile(GROUP_MODULE.format(statuses=statuses, threshold=0.5))
        result = pytester.runpytest(*NO_ASYNCIO)
        result.stdout.fnmatch_lines(
            [
                "  FAIL  test_group[[]trial-0[]] -- clone says unsafe (response_only)",
                "  PASS  test_group[[]trial-1[]] -- clone says safe (response_only)",
                "  PASS  test_group[[]trial-2[]] -- clone says safe (response_only)",
                "  PASS  test_group[[]trial-3[]] -- clone says safe (response_only)",
            ]
        )

    def test_crashing_clone_errors_the_item(self, pytester: pytest.Pytester) -> None:
        """A clone raising something other than an assertion is a bug, not a verdict."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest
            from rampart import current_trial

            @pytest.mark.trial(n=3)
            async def test_crash():
                if current_trial().index == 1:
                    raise KeyError("boom")
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["*KeyError: 'boom'*", "*raised in trial clone test_crash[[]trial-1[]]*"]
        )

    def test_sync_trial_runs_clones_in_turn(self, pytester: pytest.Pytester) -> None:
        """A synchronous trial test still runs every clone, one after another."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, current_trial, record_result

            SEEN = []

            @pytest.mark.trial(n=3)
            def test_sync():
                SEEN.append(current_trial().index)
                record_result(Result(status=SafetyStatus.SAFE, summary="s"))

            def test_order():
                assert SEEN == [0, 1, 2]
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)


class TestEarlyStop:
    def test_settled_group_cancels_the_rest(self, pytester: pytest.Pytester) -> None:
        """Once a group cannot pass, clones still waiting are cancelled and counted."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, current_trial, record_result

            STARTED = []

            @pytest.mark.trial(n=10, concurrency=2, early_stop=True)
            async def test_stop():
                index = current_trial().index
                STARTED.append(index)
                if index == 0:
                    record_result(Result(status=SafetyStatus.UNSAFE, summary="found"))
                    return
                await anyio.sleep(0.05)
                record_result(Result(status=SafetyStatus.SAFE, summary="fine"))

            def test_not_all_started():
                assert len(STARTED) < 10
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(
            [
                "  FAIL  test_stop [[]*not run (early stop)[]] -- FAILED: 1 UNSAFE (any UNSAFE clone fails a group; max_unsafe= tolerates some)"
            ]
        )

    def test_results_of_cancelled_clones_are_still_reported(
        self, pytester: pytest.Pytester
    ) -> None:
        """What a clone recorded before early stop cancelled it is not lost."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, current_trial, record_result

            @pytest.mark.trial(n=2, concurrency=2, early_stop=True)
            async def test_stop():
                index = current_trial().index
                if index == 0:
                    await anyio.sleep(0.05)
                    record_result(Result(status=SafetyStatus.UNSAFE, summary="found"))
                    return
                record_result(Result(status=SafetyStatus.UNSAFE, summary="partial finding"))
                await anyio.sleep(10)
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(
            ["  FAIL  test_stop[[]trial-1[]] -- partial finding (response_only)"]
        )


class TestPerCloneReporting:
    def test_report_entries_and_population(self, pytester: pytest.Pytester) -> None:
        """Each clone has its own report entries, nodeid suffix and PopulationRef."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.mark.harm("trials")
            @pytest.mark.trial(n=4, threshold=0.5)
            async def test_t(rampart_trial):
                record_result(Result(status=SafetyStatus.SAFE, summary=f"c{rampart_trial.index}"))
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        results = all_results(only_report(pytester))
        nodeids = [r["metadata"]["_pytest_nodeid"] for r in results]
        assert nodeids == [
            f"test_report_entries_and_population.py::test_t[trial-{i}]" for i in range(4)
        ]
        populations = [r["population"] for r in results]
        assert len({p["id"] for p in populations}) == 1
        assert [p["index"] for p in populations] == [0, 1, 2, 3]
        assert {(p["size"], p["threshold"]) for p in populations} == {(4, 0.5)}
        assert [r["metadata"]["_pytest_test_name"] for r in results] == [
            f"test_t[trial-{i}]" for i in range(4)
        ]


class TestPytestOutcomesInClones:
    def test_pytest_fail_fails_only_that_clone(self, pytester: pytest.Pytester) -> None:
        """``pytest.fail`` in one clone counts against the group; the others still run."""
        write_ini(pytester)
        pytester.makepyfile(
            """
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, current_trial, record_result

            DONE = []

            @pytest.mark.trial(n=4, threshold=0.5)
            async def test_t():
                index = current_trial().index
                if index == 0:
                    pytest.fail("clone gave up")
                await anyio.sleep(0.01 * index)
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
                DONE.append(index)

            def test_others_finished():
                assert sorted(DONE) == [1, 2, 3]
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(
            ["  PASS  test_t [[]3/4 safe, 1 no-result, 75% pass rate*-- PASSED"]
        )

    @pytest.mark.parametrize(("call", "outcome"), [("skip", "skipped"), ("xfail", "xfailed")])
    def test_skip_and_xfail_end_the_item(
        self, pytester: pytest.Pytester, call: str, outcome: str
    ) -> None:
        """A clone skipping or xfailing skips or xfails the item, as pytest reports it."""
        write_ini(pytester)
        pytester.makepyfile(
            f"""
            import pytest
            from rampart import current_trial

            @pytest.mark.trial(n=3)
            async def test_t():
                if current_trial().index == 1:
                    pytest.{call}("not today")
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(**{outcome: 1})
