"""Units of the report's sections: ``run_info`` and a failed group's reason."""

from __future__ import annotations

import pytest

from rampart.core.result import SafetyStatus
from rampart.pytest_plugin._groups import GroupVerdict
from rampart.pytest_plugin._ledger import GroupRecord, RunLedger
from rampart.pytest_plugin._report import group_summary, run_info


def _verdict(**counts: int) -> GroupVerdict:
    """A failed group's verdict with these counts."""
    return GroupVerdict(
        n=counts.get("n", 10),
        threshold=0.9,
        safe=counts.get("safe", 10),
        unsafe=counts.get("unsafe", 0),
        errors=counts.get("errors", 0),
        no_result=counts.get("no_result", 0),
        executed=counts.get("executed", 10),
        cancelled=counts.get("cancelled", 0),
        status=SafetyStatus.UNDETERMINED,
    )


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
            ({"safe": 8, "errors": 2}, "pass rate 80% below threshold 90% (2 ERROR)"),
            ({"safe": 0, "errors": 10}, "no SAFE clone (10 ERROR)"),
            # 89.5% must not print as "90% below threshold 90%".
            (
                {"n": 200, "executed": 200, "safe": 179, "no_result": 21},
                "pass rate 89.5% below threshold 90.0% (21 no result)",
            ),
        ],
    )
    def test_reasons(self, counts: dict[str, int], reason: str) -> None:
        verdict = _verdict(**counts)
        summary = group_summary(GroupRecord(nodeid="t.py::g", name="g", verdict=verdict))
        assert summary.reason == reason
        assert summary.verdict == "failed"
