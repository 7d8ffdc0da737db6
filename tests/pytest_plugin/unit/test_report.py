"""Units of the report's sections: ``run_info`` and a failed group's reason."""

from __future__ import annotations

import pytest

from rampart.core._group_outcome import TrialGroupOutcome, tally_outcome
from rampart.core._trial_rule import TrialRule, TrialTally
from rampart.core.result import SafetyStatus
from rampart.pytest_plugin._ledger import RunLedger
from rampart.pytest_plugin._report import run_info
from rampart.reporting._group_text import group_entry


def _outcome(
    *, n: int = 10, safe: int = 0, error: int = 0, no_result: int = 0
) -> TrialGroupOutcome:
    """A group of ``n`` clones at threshold 0.9, the rest UNDETERMINED."""
    tally = TrialTally(size=n, rule=TrialRule(threshold=0.9))
    for status, count in ((SafetyStatus.SAFE, safe), (SafetyStatus.ERROR, error)):
        for _ in range(count):
            tally.add(status)
    while tally.outstanding:
        tally.add(SafetyStatus.UNDETERMINED)
    return tally_outcome(tally, no_result=no_result)


class TestUnits:
    def test_run_info_reads_the_interrupted_and_incomplete_markers(self) -> None:
        ledger = RunLedger()
        ledger.mark_incomplete("worker gw1 crashed")
        info = run_info(
            ledger=ledger,
            metadata={"interrupted": True, "incomplete": True},
            duration_seconds=1.5,
            exit_status=0,
        )
        assert info.interrupted is True
        assert info.incomplete is True
        assert info.incomplete_reasons == ["worker gw1 crashed"]
        # An incomplete run never reports a clean exit.
        assert info.exit_status == 1

    @pytest.mark.parametrize(
        ("counts", "reason"),
        [
            ({"safe": 8, "error": 2}, "pass rate 80% below threshold 90% (2 ERROR)"),
            ({"safe": 0, "error": 10}, "no SAFE clone (10 ERROR)"),
            # 89.5% must not print as "90% below threshold 90%".
            (
                {"n": 200, "safe": 179, "no_result": 21},
                "pass rate 89.5% below threshold 90.0% (21 no result)",
            ),
        ],
    )
    def test_reasons(self, counts: dict[str, int], reason: str) -> None:
        summary = group_entry(_outcome(**counts), nodeid="t.py::g", test_name="g")
        assert summary.reason == reason
        assert summary.verdict == "failed"
