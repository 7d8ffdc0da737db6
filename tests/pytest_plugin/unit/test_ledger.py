"""The run ledger keeps results out of memory: slim copies, full ones from the spill
store, and the reports streamed from it."""

from __future__ import annotations

import json

from rampart import Result, SafetyStatus
from rampart.core.types import Request, Response, Turn
from rampart.pytest_plugin._ledger import SLIM_KEYS, Attribution, RecordedResult, RunLedger
from rampart.reporting import StoredResults, TestRunReport
from rampart.reporting._json_report import build_document, render_report
from rampart.reporting._jsonl import render_traces


def _full(summary: str) -> Result:
    turn = Turn(request=Request(prompt="hi"), response=Response(text="x" * 2000))
    return Result(
        status=SafetyStatus.SAFE, summary=summary, turns=[turn], metadata={"note": summary}
    )


class TestLedgerMemory:
    def test_ledger_keeps_slim_results_and_the_report_reads_full_ones(self) -> None:
        ledger = RunLedger()
        try:
            for index in range(3):
                ledger.record(
                    RecordedResult(
                        result=_full(f"r{index}"),
                        attribution=Attribution(nodeid="t.py::test_x", name="test_x", index=index),
                    )
                )
            kept = ledger.results
            # A slim copy keeps no turns, and of its metadata only which test and row it
            # is (SLIM_KEYS), never the result's own keys.
            assert all(entry.result.turns == [] for entry in kept)
            assert all(set(entry.result.metadata) <= set(SLIM_KEYS) for entry in kept)
            assert all("note" not in entry.result.metadata for entry in kept)
            assert [entry.result.summary for entry in kept] == ["r0", "r1", "r2"]
            report_results = ledger.report_results()
            assert isinstance(report_results, StoredResults)
            full = report_results[1]
            assert full.turns[0].response.text == "x" * 2000
            assert full.metadata["note"] == "r1"
            assert full.metadata["_pytest_nodeid"] == "t.py::test_x"
        finally:
            ledger.close()

    def test_unrecordable_result_becomes_an_attributed_marker(self) -> None:
        ledger = RunLedger()
        try:
            bad = Result(status=SafetyStatus.SAFE, summary="s", metadata={"t": (1, 2)})
            ledger.record(
                RecordedResult(result=bad, attribution=Attribution(nodeid="t.py::x", name="x"))
            )
            (entry,) = ledger.results
            assert entry.result.status is SafetyStatus.ERROR
            assert ledger.incomplete_reasons
            assert ledger.report_results()[0].metadata["_rampart_original_status"] == "safe"
        finally:
            ledger.close()


class TestStreamedReports:
    def _stored(self) -> tuple[StoredResults, list[int]]:
        full = [_full(f"r{index}") for index in range(4)]
        full[2] = Result(status=SafetyStatus.UNSAFE, summary="u", harm_category="jailbreak")
        loads: list[int] = []

        def load(index: int) -> Result:
            loads.append(index)
            return full[index]

        slim = [
            Result(status=r.status, summary=r.summary, harm_category=r.harm_category) for r in full
        ]
        return StoredResults(slim, load), loads

    def test_counts_come_from_slim_results_without_loading(self) -> None:
        stored, loads = self._stored()
        report = TestRunReport.from_results(stored)
        assert (report.total_runs, report.passed, report.failed) == (4, 3, 1)
        assert report.population_summary().unsafe_count == 1
        assert report.population_summary(harm_category="jailbreak").total_runs == 1
        assert loads == []

    def test_json_report_is_the_same_bytes_streamed(self) -> None:
        """The streamed file equals the document rendered whole, loading each result once."""
        stored, loads = self._stored()
        report = TestRunReport.from_results(stored, metadata={"run_id": "r"})
        streamed = render_report(report)
        assert sorted(loads) == [0, 1, 2, 3]
        whole = json.dumps(build_document(report), indent=2, allow_nan=False, ensure_ascii=False)
        assert streamed == (whole + "\n").encode("utf-8")
        document = json.loads(streamed)
        assert list(document["by_harm_category"]) == ["uncategorized", "jailbreak"]

    def test_stored_record_text_is_written_as_it_is(self) -> None:
        """The plugin's reports use the stored canonical text instead of re-encoding."""
        ledger = RunLedger()
        try:
            ledger.record(
                RecordedResult(
                    result=_full("stored"),
                    attribution=Attribution(nodeid="t.py::test_x", name="test_x"),
                )
            )
            report = TestRunReport.from_results(ledger.report_results())
            again = TestRunReport.from_results(list(ledger.report_results()))
            assert render_report(report) == render_report(again)
            assert render_traces(report) == render_traces(again)
        finally:
            ledger.close()


def test_a_non_finite_confidence_stays_null_through_the_store() -> None:
    """The record carries 0.0 for a NaN confidence and the JSON report null; a result the
    ledger keeps only as its record still reports null."""
    from rampart.core.types import EvalOutcome, EvalResult

    evaluation = EvalResult(outcome=EvalOutcome.NOT_DETECTED, confidence=float("nan"))
    result = Result(status=SafetyStatus.SAFE, summary="s", final_trace_evaluation=evaluation)
    ledger = RunLedger()
    try:
        ledger.record(
            RecordedResult(result=result, attribution=Attribution(nodeid="t.py::x", name="x"))
        )
        document = json.loads(render_report(TestRunReport.from_results(ledger.report_results())))
        (entry,) = document["by_harm_category"]["uncategorized"]
        assert entry["final_trace_evaluation"]["confidence"] is None
    finally:
        ledger.close()


def test_the_store_writes_in_batches_and_reads_back_every_record() -> None:
    """Records are written out together once ``FLUSH_BYTES`` are held (one ``pwrite``
    per batch, not per record); a read flushes first, so records held and records
    written read back alike, and the file holds them all in order."""
    from rampart.pytest_plugin._ledger import ResultStore

    store = ResultStore()
    store.FLUSH_BYTES = 6_000  # a few records a batch
    try:
        locations = [store.put(_full(f"r{index}")) for index in range(7)]
        assert store._file is not None  # a batch went out before any read
        assert store._pending  # the last records are still held
        texts = [store.text(location) for location in locations]
        assert not store._pending
        assert [store.get(location).summary for location in locations] == [
            f"r{index}" for index in range(7)
        ]
        assert all(json.loads(text)["result"]["summary"] for text in texts)
        offsets = [offset for offset, _ in locations]
        assert offsets == sorted(offsets)
        assert store.bytes_written == sum(length for _, length in locations)
        store.put(_full("after a read"))
        assert store.get(store.put(_full("last"))).summary == "last"
    finally:
        store.close()


def test_readers_in_threads_at_once_read_back_every_record() -> None:
    """The report sinks read the store from worker threads at the same time, and in a
    small run the first read is the one that makes the file and writes the held
    records: every reader must read back what was stored (the flush holds a lock;
    without it two readers could each make a file, and reports read empty text)."""
    import threading

    from rampart.pytest_plugin._ledger import ResultStore

    def read_all(store: ResultStore, locations: list[tuple[int, int]]) -> list[list[str]]:
        start = threading.Barrier(4)
        read: list[list[str]] = []

        def reader() -> None:
            start.wait()
            read.append([store.get(location).summary for location in locations])

        threads = [threading.Thread(target=reader) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return read

    for _ in range(30):
        store = ResultStore()
        try:
            locations = [store.put(_full(f"r{index}")) for index in range(5)]
            assert read_all(store, locations) == [[f"r{index}" for index in range(5)]] * 4
        finally:
            store.close()
