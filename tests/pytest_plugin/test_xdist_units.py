"""The xdist transport and the controller's bookkeeping, against fake nodes and reports."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from rampart import Result, SafetyStatus
from rampart.pytest_plugin._summary import GroupLine
from rampart.pytest_plugin._xdist import (
    ENVELOPE_SCHEMA,
    REPORT_ATTRIBUTE,
    STREAMED_KEY,
    XdistController,
    decode_envelope,
    encode_envelope,
)


class FakePlugin:
    def __init__(self) -> None:
        from collections import Counter

        self.results: list[Result] = []
        self.groups: list[GroupLine] = []
        self.incomplete_reasons: list[str] = []
        self.received: Counter[str] = Counter()
        self.workers_seen: set[str] = set()
        self.worker_limit_statistics: list[dict[str, Any]] = []

    def absorb(self, results: list[Result], group: GroupLine | None) -> None:
        self.results.extend(results)
        if group is not None:
            self.groups.append(group)


def node(worker: str, output: dict[str, Any] | None = None) -> Any:
    return SimpleNamespace(gateway=SimpleNamespace(id=worker), workeroutput=output or {})


def tagged(summary: str, nodeid: str = "t.py::test_x") -> Result:
    return Result(
        status=SafetyStatus.SAFE,
        summary=summary,
        metadata={
            "_pytest_nodeid": nodeid,
            "_pytest_test_name": "test_x",
            "_rampart_result_index": 0,
        },
    )


class TestEnvelope:
    def test_round_trip_is_json_and_versioned(self) -> None:
        """The payload is plain JSON with a schema tag; results come back equal."""
        group = GroupLine(nodeid="t.py::test_x", name="test_x", description="1/1 safe", passed=True)
        payload = encode_envelope([tagged("ok")], group, max_bytes=1 << 20, worker="gw3")
        assert json.loads(json.dumps(payload)) == payload
        assert payload["schema"] == ENVELOPE_SCHEMA
        results, decoded_group = decode_envelope(payload)
        assert decoded_group == group
        (result,) = results
        assert result.summary == "ok"
        assert result.metadata["_rampart_source_worker"] == "gw3"

    def test_encoding_does_not_mutate_the_live_result(self) -> None:
        """Transport preparation works on a copy."""
        result = tagged("\x1b[31mred\x1b[0m")
        encode_envelope([result], None, max_bytes=1 << 20, worker="gw0")
        assert result.summary == "\x1b[31mred\x1b[0m"
        assert "_rampart_source_worker" not in result.metadata

    def test_unserializable_result_becomes_a_marker(self) -> None:
        """A value outside the canonical domain is replaced, attributed, never dropped."""
        result = tagged("bad")
        result.metadata["when"] = object()
        (marker,), _ = decode_envelope(
            encode_envelope([result], None, max_bytes=1 << 20, worker="gw0")
        )
        assert marker.status is SafetyStatus.ERROR
        assert marker.summary.startswith("Result lost in xdist transport: not serializable")
        assert marker.metadata["_pytest_nodeid"] == "t.py::test_x"
        assert marker.metadata["_rampart_transport_truncated"] is True

    def test_a_record_with_a_duplicate_key_is_refused(self) -> None:
        """A record whose verdict depends on which duplicate a parser keeps never arrives."""
        payload = encode_envelope([tagged("ok")], None, max_bytes=1 << 20, worker="gw0")
        (text,) = payload["records"]
        payload["records"] = [text.replace('"status":"safe"', '"status":"unsafe","status":"safe"')]
        with pytest.raises(ValueError, match=r"\$\.result\.status: duplicate key"):
            decode_envelope(payload)

    @pytest.mark.parametrize(
        "payload",
        [
            None,
            {"schema": "rampart.xdist.v9", "records": []},
            {"schema": ENVELOPE_SCHEMA, "records": [1]},
        ],
    )
    def test_unknown_payloads_fail_closed(self, payload: object) -> None:
        """Other versions and malformed payloads are refused, not guessed at."""
        with pytest.raises(ValueError, match="rampart xdist payload"):
            decode_envelope(payload)


class TestController:
    def test_merges_reports_and_checks_counts(self) -> None:
        """Results from reports are merged; matching counts leave the run complete."""
        plugin = FakePlugin()
        controller = XdistController(plugin)
        worker = node("gw0", {STREAMED_KEY: 2})
        report = SimpleNamespace(
            nodeid="t.py::test_x",
            node=worker,
            **{
                REPORT_ATTRIBUTE: encode_envelope(
                    [tagged("a"), tagged("b")], None, max_bytes=1 << 20, worker="gw0"
                )
            },
        )
        controller.pytest_runtest_logreport(report)
        controller.pytest_testnodedown(worker, None)
        assert [r.summary for r in plugin.results] == ["a", "b"]
        assert plugin.incomplete_reasons == []

    def test_count_mismatch_marks_incomplete(self) -> None:
        """A worker that streamed more than arrived makes the run incomplete."""
        plugin = FakePlugin()
        XdistController(plugin).pytest_testnodedown(node("gw1", {STREAMED_KEY: 3}), None)
        assert plugin.incomplete_reasons == [
            "xdist worker gw1 streamed 3 results but the controller received 0"
        ]

    def test_missing_count_marks_incomplete(self) -> None:
        """A worker that never reported its count cannot be trusted to be complete."""
        plugin = FakePlugin()
        XdistController(plugin).pytest_testnodedown(node("gw1"), None)
        assert "without reporting its rampart result count" in plugin.incomplete_reasons[0]

    def test_crash_marks_incomplete(self) -> None:
        """A worker going down with an error is an incomplete run."""
        plugin = FakePlugin()
        XdistController(plugin).pytest_testnodedown(node("gw0"), "Traceback: boom")
        assert plugin.incomplete_reasons[0].startswith("xdist worker gw0 crashed")

    def test_unreadable_payload_marks_incomplete(self) -> None:
        """A payload that cannot be decoded is reported with its test, not ignored."""
        plugin = FakePlugin()
        report = SimpleNamespace(
            nodeid="t.py::test_y", node=node("gw0"), **{REPORT_ATTRIBUTE: {"schema": "other"}}
        )
        XdistController(plugin).pytest_runtest_logreport(report)
        assert plugin.results == []
        assert "t.py::test_y" in plugin.incomplete_reasons[0]
