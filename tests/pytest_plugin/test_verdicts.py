"""Confidence-aware verdicts, sequential trials, max_unsafe and index-order decisions,
through real pytest runs: the test outcome, the group line, the JSON report, xdist."""

from __future__ import annotations

import contextlib
import io
import json
import re
from typing import TYPE_CHECKING

import pytest

from rampart.cli import main
from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, only_report, write_ini
from tests.reporting._html_support import state_of

if TYPE_CHECKING:
    from pathlib import Path

# A trial test whose clones record SAFE, except the indices listed as NOT_SAFE (as
# UNDETERMINED) or UNSAFE. Filled in per test with str.format.
CLONES = """
import anyio
import pytest
from rampart import Result, SafetyStatus, record_result

NOT_SAFE = {not_safe}
UNSAFE = {unsafe}

@pytest.mark.trial({marker})
async def test_group(rampart_trial):
    index = rampart_trial.index
    if index in UNSAFE:
        status = SafetyStatus.UNSAFE
    elif index in NOT_SAFE:
        status = SafetyStatus.UNDETERMINED
    else:
        status = SafetyStatus.SAFE
    await anyio.lowlevel.checkpoint()
    record_result(Result(status=status, summary=f"clone {{index}}: {{status.value}}"))
"""


def _clones(
    pytester: pytest.Pytester,
    marker: str,
    *,
    not_safe: set[int] | None = None,
    unsafe: set[int] | None = None,
) -> None:
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        CLONES.format(marker=marker, not_safe=sorted(not_safe or ()), unsafe=sorted(unsafe or ()))
    )


def _reprinted(pytester: pytest.Pytester) -> list[str]:
    """The summary ``rampart report`` prints again from the run's saved JSON report."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["report", str(pytester.path / "reports")])
    return out.getvalue().splitlines()


def _group_line(output: str) -> str:
    (line,) = [line for line in output.splitlines() if re.match(r"\s+\w+\s+test_group \[", line)]
    return line.strip()


class TestConfidence:
    def test_inconclusive_fails_by_default_and_says_why(self, pytester: pytest.Pytester) -> None:
        """20 SAFE clones do not show a 90% rate with 95% confidence: the group is
        INCONCLUSIVE, the test fails, and every report says INCONCLUSIVE."""
        write_ini(pytester)
        _clones(pytester, "n=20, threshold=0.9, confidence=0.95")
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        assert _group_line(result.stdout.str()) == (
            "WARN  test_group [20/20 safe, 100% pass rate, threshold: 90%, 95% CI 83–100% "
            "(exact)] -- INCONCLUSIVE: 95% interval 83–100% contains threshold 90%"
        )
        result.stdout.fnmatch_lines(["*trial group inconclusive: 20/20 safe*"])
        (group,) = only_report(pytester)["trial_groups"]
        assert group["verdict"] == "inconclusive"
        assert group["population_status"] == "undetermined"
        assert group["confidence"] == 0.95
        assert group["interval"]["method"] == "clopper-pearson"
        assert group["interval"]["level"] == 0.95
        assert group["interval"]["low"] == pytest.approx(0.8316, abs=1e-4)
        assert group["reason"] == "95% interval 83–100% contains threshold 90%"

    @pytest.mark.parametrize(
        ("setting", "outcome"),
        [
            (("ini", "xfail"), {"xfailed": 1}),
            (("ini", "skip"), {"skipped": 1}),
            (("ini", "pass"), {"passed": 1}),
            (("cli", "skip"), {"skipped": 1}),
            (("ini", "fail"), {"failed": 1}),
        ],
    )
    def test_inconclusive_outcome_is_configurable(
        self, pytester: pytest.Pytester, setting: tuple[str, str], outcome: dict[str, int]
    ) -> None:
        """rampart_inconclusive (or --rampart-inconclusive) picks the test outcome of an
        INCONCLUSIVE group; the group line says INCONCLUSIVE whatever it is."""
        where, value = setting
        args = [*NO_ASYNCIO]
        if where == "ini":
            write_ini(pytester, f"rampart_inconclusive = {value}")
        else:
            write_ini(pytester, "rampart_inconclusive = fail")
            args.append(f"--rampart-inconclusive={value}")
        _clones(pytester, "n=20, threshold=0.9, confidence=0.95")
        result = pytester.runpytest(*args)
        result.assert_outcomes(**outcome)
        assert "-- INCONCLUSIVE" in _group_line(result.stdout.str())

    def test_inconclusive_outcome_never_hides_a_pass_or_fail(
        self, pytester: pytest.Pytester
    ) -> None:
        """The option only affects INCONCLUSIVE groups: a FAILED group still fails."""
        write_ini(pytester, "rampart_inconclusive = pass")
        _clones(pytester, "n=20, threshold=0.9, confidence=0.95", not_safe=set(range(10)))
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        assert _group_line(result.stdout.str()).startswith("FAIL  test_group [10/20 safe")
        assert "-- FAILED: 95% upper bound 73% below threshold 90%" in result.stdout.str()

    def test_pass_with_confidence(self, pytester: pytest.Pytester) -> None:
        """60 SAFE clones show a 90% rate at 95% (the exact lower bound is 94%)."""
        write_ini(pytester)
        _clones(pytester, "n=60, threshold=0.9, confidence=0.95, concurrency=20")
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        assert _group_line(result.stdout.str()) == (
            "PASS  test_group [60/60 safe, 100% pass rate, threshold: 90%, 95% CI 94–100% "
            "(exact)] -- PASSED"
        )

    def test_default_confidence_from_the_command_line(self, pytester: pytest.Pytester) -> None:
        """--rampart-confidence judges groups with a threshold below 1; a group with the
        default threshold 1.0 keeps the count rule, and confidence=None opts out."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.mark.trial(n=20, threshold=0.9)
            def test_judged():
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

            @pytest.mark.trial(n=20)
            def test_zero_tolerance():
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

            @pytest.mark.trial(n=20, threshold=0.9, confidence=None)
            def test_opted_out():
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-confidence=0.95")
        result.assert_outcomes(passed=2, failed=1)
        groups = {g["test_name"]: g for g in only_report(pytester)["trial_groups"]}
        assert groups["test_judged"]["verdict"] == "inconclusive"
        assert groups["test_zero_tolerance"]["confidence"] is None
        assert groups["test_zero_tolerance"]["verdict"] == "passed"
        assert groups["test_opted_out"]["confidence"] is None

    @pytest.mark.parametrize(
        ("marker", "message"),
        [
            (
                "n=5, confidence=0.95",
                "*@pytest.mark.trial(threshold=) must be in (0, 1) when confidence is set*",
            ),
            (
                "n=5, threshold=0.9, sequential=True",
                "*@pytest.mark.trial(sequential=) must be False unless confidence is set*",
            ),
            (
                "n=5, threshold=0.9, confidence=95",
                "*@pytest.mark.trial(confidence=) must be a number or None in (0, 1), got 95*",
            ),
            ("n=5, max_unsafe=-1", "*@pytest.mark.trial(max_unsafe=) must be non-negative*"),
            ("n=5, confidance=0.9", "*unsupported argument(s) ?'confidance'?*"),
        ],
    )
    def test_bad_markers_are_usage_errors(
        self, pytester: pytest.Pytester, marker: str, message: str
    ) -> None:
        """Bad or conflicting marker arguments stop the run before anything runs."""
        write_ini(pytester)
        _clones(pytester, marker)
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])

    @pytest.mark.parametrize(
        ("args", "ini", "message"),
        [
            (
                ["--rampart-confidence=1"],
                [],
                "*--rampart-confidence must be a number in (0, 1), e.g. 0.95, got '1'*",
            ),
            (
                [],
                ["rampart_confidence = high"],
                "*ini option rampart_confidence must be a number in (0, 1)*",
            ),
            (
                ["--rampart-inconclusive=ignore"],
                [],
                "*--rampart-inconclusive must be one of fail, xfail, skip, pass, got 'ignore'*",
            ),
        ],
    )
    def test_bad_options_are_usage_errors(
        self, pytester: pytest.Pytester, args: list[str], ini: list[str], message: str
    ) -> None:
        """The options name themselves and what they accept."""
        write_ini(pytester, *ini)
        _clones(pytester, "n=2")
        result = pytester.runpytest(*NO_ASYNCIO, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([message])


class TestSequential:
    def test_stops_once_decided_and_reports_what_was_not_run(
        self, pytester: pytest.Pytester
    ) -> None:
        """48 SAFE clones in a row decide a 90% group at 95%: the other 152 are not run,
        and the line, the JSON report and the clone lines say so."""
        write_ini(pytester)
        _clones(pytester, "n=200, threshold=0.9, confidence=0.95, sequential=True, concurrency=8")
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        line = _group_line(result.stdout.str())
        assert line.startswith("PASS  test_group [48/48 safe")
        assert "sequential" in line
        assert "not run (sequential stop)" in line
        (group,) = only_report(pytester)["trial_groups"]
        assert (group["verdict"], group["executed"], group["sequential"]) == ("passed", 48, True)
        assert group["not_run"] + group["not_counted"] == 152
        assert group["early_stopped"]
        # The report states enough to print the line again (what ``rampart report`` does).
        assert line in [printed.strip() for printed in _reprinted(pytester)]

    def test_fails_on_evidence_and_on_unsafe(self, pytester: pytest.Pytester) -> None:
        """Five non-SAFE clones in a row are enough evidence to fail; so is an UNSAFE."""
        write_ini(pytester)
        _clones(
            pytester,
            "n=100, threshold=0.9, confidence=0.95, sequential=True, concurrency=1",
            not_safe=set(range(5)),
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        assert "-- FAILED: sequential test: SAFE rate below threshold 90% (95%)" in (
            result.stdout.str()
        )
        (group,) = only_report(pytester)["trial_groups"]
        assert (group["executed"], group["not_run"]) == (5, 95)

    def test_undecided_is_inconclusive(self, pytester: pytest.Pytester) -> None:
        """Too few clones to decide: INCONCLUSIVE, with the reason on the line."""
        write_ini(pytester)
        _clones(pytester, "n=30, threshold=0.9, confidence=0.95, sequential=True")
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        assert _group_line(result.stdout.str()).endswith(
            "-- INCONCLUSIVE: sequential test undecided after 30 of 30 clones"
        )

    def test_sync_test_stops_too(self, pytester: pytest.Pytester) -> None:
        """A synchronous trial test runs its clones one after another and stops alike."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, record_result

            RAN = []

            @pytest.mark.trial(n=100, threshold=0.9, confidence=0.95, sequential=True)
            def test_group(rampart_trial):
                RAN.append(rampart_trial.index)
                record_result(Result(status=SafetyStatus.UNDETERMINED, summary="unclear"))

            def test_ran():
                assert RAN == [0, 1, 2, 3, 4]
            """
        )
        pytester.runpytest(*NO_ASYNCIO, "-p", "no:randomly").assert_outcomes(passed=1, failed=1)


class TestMaxUnsafe:
    def test_tolerated_unsafe_clones_are_shown(self, pytester: pytest.Pytester) -> None:
        """max_unsafe=2 tolerates two UNSAFE clones; the line shows the limit and count."""
        write_ini(pytester)
        _clones(pytester, "n=10, threshold=0.8, max_unsafe=2", unsafe={3, 7})
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(passed=1)
        assert _group_line(result.stdout.str()).startswith(
            "PASS  test_group [8/10 safe, 80% pass rate, threshold: 80%, max unsafe: 2 (2 UNSAFE)"
        )
        (group,) = only_report(pytester)["trial_groups"]
        assert (group["max_unsafe"], group["verdict"]) == (2, "passed")

    def test_one_more_fails(self, pytester: pytest.Pytester) -> None:
        """More UNSAFE clones than max_unsafe fail the group, and the reason says so."""
        write_ini(pytester)
        _clones(pytester, "n=10, threshold=0.5, max_unsafe=2", unsafe={1, 2, 3})
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1)
        assert _group_line(result.stdout.str()).endswith("-- FAILED: 3 UNSAFE (max unsafe: 2)")


class TestIndexOrder:
    def test_fast_unsafe_clones_do_not_bias_the_decision(self, pytester: pytest.Pytester) -> None:
        """Clones whose UNSAFE answers come 10x faster than SAFE ones (in scheduler
        turns): the group decides on the clones in index order, as a run with one
        clone at a time would."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import random
            import anyio
            import pytest
            from rampart import Result, SafetyStatus, record_result

            rng = random.Random(4)
            OUTCOMES = [
                SafetyStatus.SAFE if rng.random() < 0.985 else SafetyStatus.UNSAFE
                for _ in range(150)
            ]

            async def clone(index):
                status = OUTCOMES[index]
                turns = 10 if status is SafetyStatus.SAFE else 1
                for _ in range(turns):
                    await anyio.lowlevel.checkpoint()
                record_result(Result(status=status, summary=f"clone {index}"))

            @pytest.mark.trial(
                n=150, threshold=0.9, confidence=0.95, sequential=True, concurrency=40
            )
            async def test_wide(rampart_trial):
                await clone(rampart_trial.index)

            @pytest.mark.trial(
                n=150, threshold=0.9, confidence=0.95, sequential=True, concurrency=1
            )
            async def test_narrow(rampart_trial):
                await clone(rampart_trial.index)
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        groups = {g["test_name"]: g for g in only_report(pytester)["trial_groups"]}
        wide, narrow = groups["test_wide"], groups["test_narrow"]
        for key in ("verdict", "executed", "counts", "population_status"):
            assert wide[key] == narrow[key], key
        # With seed 4 the first UNSAFE clone is clone 54, after 48 SAFE ones: the
        # index-order decision is a PASS, although with 40 clones at once the fast
        # UNSAFE answer arrived before the 48th SAFE one (it is reported, not counted).
        assert (wide["verdict"], wide["executed"]) == ("passed", 48)
        assert wide["not_counted"] > 0
        result.assert_outcomes(passed=2)
        # The late UNSAFE answer is not counted, but it is not hidden either.
        (line,) = [ln for ln in result.stdout.lines if "test_wide [" in ln]
        assert "finished after the decision, not counted (1 UNSAFE)" in line
        # The report keeps that count, so the line prints again from it as it did here.
        assert wide["not_counted_unsafe"] == 1
        assert line in _reprinted(pytester)
        result.stdout.fnmatch_lines(["*FAIL  test_wide?trial-54? -- clone 54*"])


class TestReports:
    def test_xdist_carries_the_extended_verdict(self, pytester: pytest.Pytester) -> None:
        """Under -n 2 the controller's group line and report state INCONCLUSIVE."""
        write_ini(pytester)
        _clones(pytester, "n=20, threshold=0.9, confidence=0.95, max_unsafe=1")
        result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2")
        result.assert_outcomes(failed=1)
        line = _group_line(result.stdout.str())
        assert line.startswith("WARN  test_group [20/20 safe")
        assert "max unsafe: 1 (0 UNSAFE)" in line
        (group,) = only_report(pytester)["trial_groups"]
        assert (group["verdict"], group["confidence"], group["max_unsafe"]) == (
            "inconclusive",
            0.95,
            1,
        )
        assert group["worker"] in ("gw0", "gw1")

    def test_html_report_states_inconclusive(self, pytester: pytest.Pytester) -> None:
        """The HTML report's data carries the verdict, the exact interval and the rule."""
        write_ini(pytester)
        _clones(pytester, "n=20, threshold=0.9, confidence=0.95")
        pytester.runpytest(*NO_ASYNCIO, "--rampart-report-dir=out")
        (page,) = (pytester.path / "out").glob("*.html")
        (group,) = state_of(page.read_text())["groups"]
        assert group["verdict"] == "inconclusive"
        assert group["interval"]["method"] == "clopper-pearson"
        assert group["confidence"] == 0.95
        json.dumps(group)


# A sequential group (SAFE clones) and a test after it; STOP_AT names a clone (or
# "after") that raises KeyboardInterrupt, as Ctrl-C would; every clone leaves a file.
RESUMABLE = """
import pathlib
import pytest
from rampart import Result, SafetyStatus, record_result

HERE = pathlib.Path(__file__).parent

def stop_at():
    flag = HERE / "STOP_AT"
    return flag.read_text() if flag.exists() else None

@pytest.mark.trial(n=100, threshold=0.9, confidence=0.95, sequential=True, concurrency=1)
def test_group(rampart_trial):
    k = rampart_trial.index
    (HERE / f"ran-{k}").touch()
    if str(k) == stop_at():
        raise KeyboardInterrupt
    record_result(Result(status=SafetyStatus.SAFE, summary=f"clone {k}"))

def test_z_after():
    if stop_at() == "after":
        raise KeyboardInterrupt
    record_result(Result(status=SafetyStatus.SAFE, summary="after"))
"""


def _ran(directory: Path) -> set[int]:
    found = set()
    for path in directory.glob("ran-*"):
        found.add(int(path.name.removeprefix("ran-")))
        path.unlink()
    return found


class TestResume:
    def test_resumed_clones_count_in_index_order(self, pytester: pytest.Pytester) -> None:
        """A sequential group stopped at clone 30 resumes with clones 0-29 from the
        journal, in index order: it runs 30-47 only and passes at 47, as an
        uninterrupted run does."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(RESUMABLE)
        (pytester.path / "STOP_AT").write_text("30")
        stopped = pytester.runpytest(*NO_ASYNCIO, no_reraise_ctrlc=True)
        assert stopped.ret == pytest.ExitCode.INTERRUPTED
        assert _ran(pytester.path) == set(range(31))
        (pytester.path / "STOP_AT").unlink()
        resumed = pytester.runpytest(*NO_ASYNCIO, "--rampart-resume")
        assert _ran(pytester.path) == set(range(30, 48))
        resumed.assert_outcomes(passed=2)
        assert _group_line(resumed.stdout.str()).startswith("PASS  test_group [48/48 safe")

    def test_a_decided_group_is_not_run_again(self, pytester: pytest.Pytester) -> None:
        """A group the journal already decided (clones 0-47 of 100) runs no clone on
        resume, though the journal does not hold all 100."""
        write_ini(pytester)
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(RESUMABLE)
        (pytester.path / "STOP_AT").write_text("after")
        stopped = pytester.runpytest(*NO_ASYNCIO, no_reraise_ctrlc=True)
        assert stopped.ret == pytest.ExitCode.INTERRUPTED
        assert _ran(pytester.path) == set(range(48))
        (pytester.path / "STOP_AT").unlink()
        resumed = pytester.runpytest(*NO_ASYNCIO, "--rampart-resume")
        assert _ran(pytester.path) == set()
        resumed.assert_outcomes(passed=2)
        line = _group_line(resumed.stdout.str())
        assert line.startswith("PASS  test_group [48/48 safe")
        assert "52 not run (sequential stop)" in line
