"""The xdist envelope and the controller's bookkeeping, against fake nodes and reports."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from rampart import Result, SafetyStatus
from rampart.core._group_outcome import tally_outcome
from rampart.core._trial_rule import TrialRule, TrialTally
from rampart.pytest_plugin._ledger import Attribution, RecordedResult, RunLedger
from rampart.pytest_plugin._xdist import (
    ENVELOPE_SCHEMA,
    REPORT_ATTRIBUTE,
    STREAMED_KEY,
    XdistController,
    decode_envelope,
    encode_envelope,
)
from rampart.reporting._group_text import group_entry

if TYPE_CHECKING:
    from rampart.reporting._run_data import TrialGroupSummary

NODEID = "t.py::test_x"


def node(worker: str, output: dict[str, Any] | None = None) -> Any:
    return SimpleNamespace(gateway=SimpleNamespace(id=worker), workeroutput=output or {})


def recorded(
    summary: str, *, clone: int | None = None, index: int = 0, group: int = 0
) -> RecordedResult:
    return RecordedResult(
        result=Result(status=SafetyStatus.SAFE, summary=summary),
        attribution=Attribution(
            nodeid=NODEID, name="test_x", clone=clone, index=index, group=group
        ),
    )


def envelope(*results: RecordedResult, group: TrialGroupSummary | None = None) -> dict[str, Any]:
    return encode_envelope(
        nodeid=NODEID,
        name="test_x",
        results=results,
        groups=[] if group is None else [group],
        max_bytes=1 << 20,
    )


def _group(suffix: str = "") -> TrialGroupSummary:
    tally = TrialTally(size=2, rule=TrialRule(threshold=0.5))
    tally.add(SafetyStatus.SAFE)
    tally.add(SafetyStatus.ERROR)
    outcome = tally_outcome(tally, concurrency={"final": 2, "peak": 2})
    return group_entry(
        outcome, nodeid=NODEID + suffix, test_name="test_x" + suffix, harm_category="jailbreak"
    )


class TestEnvelope:
    def test_round_trip_carries_attribution_as_data(self) -> None:
        """Plain versioned JSON; clone and position travel next to each record, not in it."""
        group = _group()
        payload = envelope(
            recorded("a", clone=1, index=0), recorded("b", clone=1, index=1), group=group
        )
        assert json.loads(json.dumps(payload)) == payload
        assert payload["schema"] == ENVELOPE_SCHEMA
        assert all("_pytest_nodeid" not in entry["record"] for entry in payload["results"])
        results, decoded_groups = decode_envelope(payload, worker="gw3")
        assert decoded_groups == [attrs.evolve(group, worker="gw3")]
        assert [r.result.summary for r in results] == ["a", "b"]
        assert [r.attribution for r in results] == [
            Attribution(nodeid=NODEID, name="test_x", clone=1, index=i, worker="gw3")
            for i in range(2)
        ]
        assert results[1].stamped().metadata == {
            "_pytest_nodeid": "t.py::test_x[trial-1]",
            "_pytest_test_name": "test_x[trial-1]",
            "_rampart_result_index": 1,
            "_rampart_source_worker": "gw3",
        }

    def test_encoding_does_not_mutate_the_live_result(self) -> None:
        """Transport preparation works on a copy."""
        entry = recorded("\x1b[31mred\x1b[0m")
        (decoded,), _ = decode_envelope(envelope(entry), worker="gw0")
        assert decoded.result.summary == "red"
        assert entry.result.summary == "\x1b[31mred\x1b[0m"

    def test_unserializable_result_becomes_a_marker(self) -> None:
        """A value outside the canonical domain is replaced, attributed, never dropped."""
        entry = recorded("bad", index=4)
        entry.result.metadata["when"] = object()
        (marker,), _ = decode_envelope(envelope(entry), worker="gw0")
        assert marker.result.status is SafetyStatus.ERROR
        assert marker.lost is not None
        assert marker.lost.startswith("Result lost in xdist transport: not serializable")
        assert marker.attribution.index == 4
        assert marker.result.metadata["_rampart_transport_truncated"] is True

    def test_a_record_with_a_duplicate_key_is_refused(self) -> None:
        """A record whose verdict depends on which duplicate a parser keeps never arrives."""
        payload = envelope(recorded("ok"))
        (entry,) = payload["results"]
        entry["record"] = entry["record"].replace(
            '"status":"safe"', '"status":"unsafe","status":"safe"'
        )
        with pytest.raises(ValueError, match=r"\$\.result\.status: duplicate key"):
            decode_envelope(payload, worker="gw0")

    @pytest.mark.parametrize(
        "payload",
        [
            None,
            {"schema": "rampart.xdist.v1", "records": []},
            {"schema": ENVELOPE_SCHEMA, "nodeid": NODEID, "name": "test_x", "results": [1]},
            {"schema": ENVELOPE_SCHEMA, "nodeid": NODEID, "name": "test_x", "results": None},
            {
                "schema": ENVELOPE_SCHEMA,
                "nodeid": NODEID,
                "name": "test_x",
                "results": [{"record": "{}", "clone": True, "index": 0, "lost": None}],
            },
            {
                "schema": ENVELOPE_SCHEMA,
                "nodeid": NODEID,
                "name": "test_x",
                "results": [],
                "group": {"passed": True},
            },
        ],
    )
    def test_unknown_payloads_fail_closed(self, payload: object) -> None:
        """Other versions and malformed payloads are refused, not guessed at."""
        with pytest.raises(ValueError, match="rampart xdist payload"):
            decode_envelope(payload, worker="gw0")


@pytest.mark.parametrize(
    "nodeid", ["t.py::test_other", "t.py::test_x[population-x]", "t.py::test_x[population-0]"]
)
def test_a_group_entry_of_another_test_is_refused(nodeid: str) -> None:
    """The group rides with its own test's results; one naming another test (or no
    population of it) is refused."""
    payload = envelope(recorded("a", clone=0), group=_group())
    payload["groups"][0]["nodeid"] = nodeid
    with pytest.raises(ValueError, match=r"rampart xdist payload: group\.nodeid must be"):
        decode_envelope(payload, worker="gw0")


def test_a_population_of_the_test_travels_with_its_group_number() -> None:
    """The trials of a test's second population keep their group; its entry is accepted."""
    payload = envelope(recorded("a", clone=3, group=1), group=_group("[population-1]"))
    (result,), (group,) = decode_envelope(payload, worker="gw0")
    assert result.attribution.group == 1
    assert result.stamped().metadata["_pytest_nodeid"] == "t.py::test_x[population-1][trial-3]"
    assert group.nodeid == "t.py::test_x[population-1]"


def report(payload: object, worker: Any) -> Any:
    return SimpleNamespace(nodeid=NODEID, node=worker, **{REPORT_ATTRIBUTE: payload})


class TestController:
    def test_records_reports_and_checks_counts(self) -> None:
        """Results from reports reach the ledger; matching counts leave the run complete."""
        ledger = RunLedger()
        controller = XdistController(ledger)
        worker = node("gw0", {STREAMED_KEY: 2})
        controller.pytest_runtest_logreport(
            report(envelope(recorded("a"), recorded("b", index=1)), worker)
        )
        controller.pytest_testnodedown(worker, None)
        assert [r.result.summary for r in ledger.results] == ["a", "b"]
        assert {r.attribution.worker for r in ledger.results} == {"gw0"}
        assert ledger.incomplete_reasons == ()
        assert ledger.workers == {"gw0"}

    def test_lost_result_marks_incomplete_from_data(self) -> None:
        """The controller learns of a loss from the envelope, not from the result's metadata."""
        ledger = RunLedger()
        controller = XdistController(ledger)
        replayed = recorded("replayed")
        replayed.result.metadata["_rampart_transport_truncated"] = True
        oversized = recorded("x" * 5000, index=1)
        payload = encode_envelope(
            nodeid=NODEID, name="test_x", results=[replayed, oversized], max_bytes=4096
        )
        controller.pytest_runtest_logreport(report(payload, node("gw1")))
        (reason,) = ledger.incomplete_reasons
        assert reason.startswith("a result of t.py::test_x was lost: Result lost in xdist")

    def test_count_mismatch_marks_incomplete(self) -> None:
        """A worker that streamed more than arrived makes the run incomplete."""
        ledger = RunLedger()
        XdistController(ledger).pytest_testnodedown(node("gw1", {STREAMED_KEY: 3}), None)
        assert ledger.incomplete_reasons == (
            "xdist worker gw1 streamed 3 results but the controller received 0",
        )

    def test_missing_count_marks_incomplete(self) -> None:
        """A worker that never reported its count cannot be trusted to be complete."""
        ledger = RunLedger()
        XdistController(ledger).pytest_testnodedown(node("gw1"), None)
        assert "without reporting its rampart result count" in ledger.incomplete_reasons[0]

    def test_crash_marks_incomplete(self) -> None:
        """A worker going down with an error is an incomplete run."""
        ledger = RunLedger()
        XdistController(ledger).pytest_testnodedown(node("gw0"), "Traceback: boom")
        assert ledger.incomplete_reasons[0].startswith("xdist worker gw0 crashed")

    def test_unreadable_payload_marks_incomplete(self) -> None:
        """A payload that cannot be decoded is reported with its test, not ignored."""
        ledger = RunLedger()
        XdistController(ledger).pytest_runtest_logreport(report({"schema": "other"}, node("gw0")))
        assert ledger.results == ()
        assert "t.py::test_x" in ledger.incomplete_reasons[0]
