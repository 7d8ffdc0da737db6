"""A skip, xfail or exit in one trial clone's own fixture (issue 33, item 3).

RAMPART runs each clone as its own item, so a fixture that skips in one clone skips
that clone only. It used to end the whole item: "1 skipped", the other clones
cancelled before they recorded anything, no results and no group in the JSON report,
and the run not marked incomplete. Now only that clone does not run; the group counts
it as a clone that recorded nothing (never as evidence of safety). When no clone ran
at all (a fixture that skips without an API key, say) the item is skipped, as before.
A skip in a clone's teardown changes nothing (the clone ran and was judged), and
``pytest.exit`` still ends the run, which is then marked incomplete.

Every case runs through a real pytest run (pytester); async fixtures on asyncio and
trio, and synchronous tests through the sequential path.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, all_results, only_report

BACKENDS = pytest.mark.parametrize("backend", ["asyncio", "trio"])


def _conftest(backend: str) -> str:
    return (
        "import pytest\n\n"
        "@pytest.fixture(scope='module')\n"
        f"def anyio_backend():\n    return {backend!r}\n{REPORT_HOOK}\n"
    )


def _group(report: dict[str, Any], name: str) -> dict[str, Any]:
    groups = [group for group in report["trial_groups"] if group["nodeid"].endswith(name)]
    assert len(groups) == 1, report["trial_groups"]
    return groups[0]


def _statuses(report: dict[str, Any]) -> list[str]:
    return sorted(result["status"] for result in all_results(report))


SKIP_ONE = """
import pytest
from rampart import Result, SafetyStatus, record_result

RAN = []

@pytest.fixture
{kind} agent(rampart_trial):
    if rampart_trial.index == 0:
        pytest.{call}("no sandbox for this clone")
    return rampart_trial.index

@pytest.mark.trial(n=4, concurrency=4{threshold})
{kind} test_clones(agent):
    RAN.append(agent)
    record_result(Result(status=SafetyStatus.{status}, summary=f"clone {{agent}}"))

def test_after():
    assert sorted(RAN) == [1, 2, 3]
"""


def _skip_one(kind: str, *, call: str = "skip", status: str = "UNSAFE", threshold: str = "") -> str:
    return SKIP_ONE.format(kind=kind, call=call, status=status, threshold=threshold)


class TestOneCloneSkipped:
    @BACKENDS
    @pytest.mark.parametrize("call", ["skip", "xfail"])
    def test_only_that_clone_is_not_run_and_the_findings_stay(
        self, pytester: pytest.Pytester, backend: str, call: str
    ) -> None:
        """The issue's case: clone 0's async fixture skips, every other clone is UNSAFE.
        The other three run and record their findings, the group is in the report and
        fails, and the skipped clone is named with its reason."""
        pytester.makeconftest(_conftest(backend))
        pytester.makepyfile(_skip_one("async def", call=call))
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1, passed=1)
        result.stdout.fnmatch_lines(
            [
                f"*test_clones[[]trial-0[]]: CloneNotRun: fixture 'agent' called pytest.{call}() "
                "in this trial clone's setup, so the clone did not run (no sandbox for this "
                "clone)*"
            ]
        )
        report = only_report(pytester)
        assert _statuses(report) == ["unsafe", "unsafe", "unsafe"]
        group = _group(report, "test_clones")
        assert group["verdict"] == "failed"
        assert group["counts"]["unsafe"] == 3
        assert group["counts"]["no_result"] == 1
        assert group["executed"] == 4
        assert report["run"]["incomplete"] is False

    def test_a_synchronous_test(self, pytester: pytest.Pytester) -> None:
        """The same through the sequential path (a synchronous test and fixture)."""
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(_skip_one("def"))
        result = pytester.runpytest(*NO_ASYNCIO)
        result.assert_outcomes(failed=1, passed=1)
        report = only_report(pytester)
        assert _statuses(report) == ["unsafe", "unsafe", "unsafe"]
        assert _group(report, "test_clones")["counts"]["no_result"] == 1

    @BACKENDS
    def test_a_skipped_clone_is_never_evidence_of_safety(
        self, pytester: pytest.Pytester, backend: str
    ) -> None:
        """Three SAFE clones and one skipped: with the default threshold (every clone
        SAFE) the group fails, since only three of its four clones were tested; with a
        threshold of 0.75 it passes on exactly those three."""
        pytester.makeconftest(_conftest(backend))
        pytester.makepyfile(
            test_strict=_skip_one("async def", status="SAFE"),
            test_lenient=_skip_one("async def", status="SAFE", threshold=", threshold=0.75"),
        )
        result = pytester.runpytest(*NO_ASYNCIO, "-p", "no:randomly")
        result.assert_outcomes(failed=1, passed=3)
        report = only_report(pytester)
        strict = _group(report, "test_strict.py::test_clones")
        lenient = _group(report, "test_lenient.py::test_clones")
        assert (strict["verdict"], strict["counts"]["safe"], strict["executed"]) == ("failed", 3, 4)
        assert (lenient["verdict"], lenient["counts"]["safe"], lenient["executed"]) == (
            "passed",
            3,
            4,
        )

    def test_unittest_skiptest_too(self, pytester: pytest.Pytester) -> None:
        """``unittest.SkipTest`` (which pytest treats as a skip) is the same outcome."""
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import unittest
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.fixture
            def agent(rampart_trial):
                if rampart_trial.index == 1:
                    raise unittest.SkipTest("not on this clone")
                return rampart_trial.index

            @pytest.mark.trial(n=3, threshold=0.5)
            async def test_clones(agent):
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        group = _group(only_report(pytester), "test_clones")
        assert (group["counts"]["safe"], group["counts"]["no_result"]) == (2, 1)


class TestNoCloneRan:
    @BACKENDS
    @pytest.mark.parametrize(("call", "outcome"), [("skip", "skipped"), ("xfail", "xfailed")])
    def test_every_clone_skipped_skips_the_item(
        self, pytester: pytest.Pytester, backend: str, call: str, outcome: str
    ) -> None:
        """A fixture that skips in every clone (no API key in this CI): nothing was
        tested, so the item is skipped (xfailed) with the fixture's reason and line, as
        pytest skips a test whose fixture skips; no group is claimed."""
        pytester.makeconftest(_conftest(backend))
        pytester.makepyfile(
            f"""
            import pytest
            from rampart import Result, SafetyStatus, record_result

            @pytest.fixture
            async def agent():
                pytest.{call}("no API key")

            @pytest.mark.trial(n=4, concurrency=2)
            async def test_clones(agent):
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO, "-rsx")
        result.assert_outcomes(**{outcome: 1})
        assert result.ret == pytest.ExitCode.OK
        if call == "skip":
            result.stdout.fnmatch_lines(
                ["SKIPPED [[]1[]] test_every_clone_skipped*.py:6: no API key"]
            )
        report = only_report(pytester)
        assert report["trial_groups"] == []
        assert all_results(report) == []

    def test_a_synchronous_test(self, pytester: pytest.Pytester) -> None:
        pytester.makeconftest(REPORT_HOOK)
        pytester.makepyfile(
            """
            import pytest

            @pytest.fixture
            def agent():
                pytest.skip("no API key")

            @pytest.mark.trial(n=3)
            def test_clones(agent):
                raise AssertionError("never runs")
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(skipped=1)


class TestTeardown:
    @BACKENDS
    def test_a_skip_in_teardown_keeps_the_group(
        self, pytester: pytest.Pytester, backend: str
    ) -> None:
        """A finalizer that calls ``pytest.skip()`` after the clone ran: the clone was
        judged, the other finalizers still run, and the group is in the report."""
        pytester.makeconftest(_conftest(backend))
        pytester.makepyfile(
            """
            import pytest
            from rampart import Result, SafetyStatus, record_result

            CLOSED = []

            @pytest.fixture
            def outer(rampart_trial):
                yield
                CLOSED.append(rampart_trial.index)

            @pytest.fixture
            async def tidy(outer, rampart_trial):
                yield
                if rampart_trial.index == 1:
                    pytest.skip("cleanup not needed")

            @pytest.mark.trial(n=3, concurrency=3)
            async def test_clones(tidy):
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

            def test_after():
                assert sorted(CLOSED) == [0, 1, 2]
            """
        )
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=2)
        report = only_report(pytester)
        group = _group(report, "test_clones")
        assert (group["verdict"], group["counts"]["safe"]) == ("passed", 3)
        assert _statuses(report) == ["safe", "safe", "safe"]


class TestExit:
    @pytest.mark.parametrize("kind", ["def", "async def"])
    def test_exit_ends_the_run_and_marks_it_incomplete(
        self, pytester: pytest.Pytester, kind: str
    ) -> None:
        """``pytest.exit()`` in clone 1's fixture still ends the run (the next test
        never runs; it used to be caught as that clone's ERROR and the run went on),
        after that clone's finalizers ran; clone 0's result is reported and the run is
        marked incomplete, saying why."""
        pytester.makeconftest(_conftest("trio"))
        pytester.makepyfile(
            f"""
            import pytest
            from rampart import Result, SafetyStatus, record_result

            from pathlib import Path

            @pytest.fixture
            def opened(rampart_trial):
                yield
                with (Path(__file__).parent / "closed.txt").open("a") as log:
                    log.write(f"{{rampart_trial.index}}\\n")

            @pytest.fixture
            def quitter(opened, rampart_trial):
                if rampart_trial.index == 1:
                    pytest.exit("the agent's quota is spent")
                return rampart_trial.index

            @pytest.mark.trial(n=3, concurrency=1)
            {kind} test_clones(quitter):
                record_result(Result(status=SafetyStatus.SAFE, summary="ok"))

            def test_never():
                raise AssertionError("the run should have ended")
            """
        )
        result = pytester.runpytest(*NO_ASYNCIO)
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(
            [
                "*RAMPART: INCOMPLETE RUN*",
                "*pytest.exit() ended the run before it finished: the agent's quota is spent*",
            ]
        )
        result.stdout.no_fnmatch_line("*the run should have ended*")
        assert (pytester.path / "closed.txt").read_text().split() == ["0", "1"]
        report = only_report(pytester)
        assert _statuses(report) == ["safe"]
        assert report["run"]["incomplete"] is True
        assert report["run"]["incomplete_reasons"] == [
            "pytest.exit() ended the run before it finished: the agent's quota is spent"
        ]


def test_a_resumed_run_tries_a_skipped_clone_again(pytester: pytest.Pytester) -> None:
    """A clone its fixture skipped did not run: ``--rampart-resume`` runs it (and only
    it) again, and the group then counts all four."""
    pytester.makeini("[pytest]")
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import pathlib
        import pytest
        from rampart import Result, SafetyStatus, record_result

        HERE = pathlib.Path(__file__).parent

        @pytest.fixture
        def sandbox(rampart_trial):
            if rampart_trial.index == 2 and not (HERE / "SANDBOX").exists():
                pytest.skip("no sandbox yet")
            return rampart_trial.index

        @pytest.mark.trial(n=4, concurrency=1, threshold=0.75)
        def test_group(sandbox):
            (HERE / f"ran-{sandbox}").touch()
            record_result(Result(status=SafetyStatus.SAFE, summary="ok"))
        """
    )

    def ran() -> set[str]:
        found = {path.name.removeprefix("ran-") for path in pytester.path.glob("ran-*")}
        for path in pytester.path.glob("ran-*"):
            path.unlink()
        return found

    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
    assert ran() == {"0", "1", "3"}
    (pytester.path / "SANDBOX").touch()
    pytester.runpytest(*NO_ASYNCIO, "--rampart-resume").assert_outcomes(passed=1)
    assert ran() == {"2"}
    reports = sorted((pytester.path / "reports").glob("run_report_*.json"))
    group = _group(json.loads(reports[-1].read_text()), "test_group")
    assert (group["counts"]["safe"], group["counts"]["no_result"]) == (4, 0)
