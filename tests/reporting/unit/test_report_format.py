"""The JSON report format round-trips: what the sink writes, the format's reader reads
back as the same results, trial groups and run section (``_report_format``)."""

from __future__ import annotations

import attrs
import pytest

from rampart.codec import parse_strict_json
from rampart.core import EvalOutcome, EvalResult, Request, Response, Result, SafetyStatus, Turn
from rampart.core._group_outcome import rebuild_group, tally_outcome
from rampart.core._trial_rule import TrialRule, TrialTally
from rampart.reporting import RunInfo, TestRunReport, TrialGroupSummary
from rampart.reporting._group_text import group_entry
from rampart.reporting._json_report import render_report
from rampart.reporting._report_format import (
    OMITTED_ATTACHMENT,
    REPORT_KEYS,
    report_message,
    report_records,
)
from tests._builders import make_result, make_rich_result


def _as_the_report_keeps_it(result: Result) -> Result:
    """``result`` without what a JSON report leaves out: ANSI codes in the summary,
    injections, turn timestamps and purposes, a turn evaluation's evidence, and
    attachments (an attachment-only request reads back with the stand-in)."""
    from rampart._text import strip_ansi
    from rampart.core import Payload, PayloadFormat

    turns = []
    for turn in result.turns:
        request = turn.request
        if request.prompt is None:
            stand_in = Payload(**{**OMITTED_ATTACHMENT, "format": PayloadFormat.TEXT})
            request = attrs.evolve(request, attachments=[stand_in])
        else:
            request = attrs.evolve(request, attachments=[])
        evaluation = turn.eval_result
        if evaluation is not None:
            evaluation = attrs.evolve(evaluation, evidence=[])
        turns.append(
            attrs.evolve(
                turn, request=request, eval_result=evaluation, eval_purpose=None, timestamp=None
            )
        )
    return attrs.evolve(result, summary=strip_ansi(result.summary), injections=[], turns=turns)


def _groups() -> list[TrialGroupSummary]:
    """A live count-rule group, a confidence group with adaptive concurrency, and an
    INCOMPLETE rebuilt one."""
    count = TrialTally(size=4, rule=TrialRule(threshold=0.75))
    for status in (SafetyStatus.SAFE, SafetyStatus.SAFE, SafetyStatus.ERROR, SafetyStatus.SAFE):
        count.add(status)
    exact = TrialTally(size=30, rule=TrialRule(threshold=0.6, confidence=0.9))
    for index in range(30):
        exact.add(SafetyStatus.SAFE if index % 3 else SafetyStatus.UNDETERMINED)
    cut = rebuild_group(size=10, rule=TrialRule(), clones={0: SafetyStatus.SAFE})
    return [
        group_entry(tally_outcome(count), nodeid="t.py::test_a", test_name="test_a"),
        group_entry(
            tally_outcome(exact, no_result=2, concurrency={"final": 8, "peak": 16}),
            nodeid="t.py::test_b",
            test_name="test_b",
            harm_category="jailbreak",
            worker="gw1",
        ),
        group_entry(cut, nodeid="t.py::test_c", test_name="test_c"),
    ]


def test_a_report_reads_back_as_the_results_and_groups_it_was_written_from() -> None:
    """Write a report, read it back: the same results (as far as the format keeps
    them), the same trial groups and the same run section."""
    plain = make_result(SafetyStatus.SAFE, summary="fine", metadata={"k": [1, "two"]})
    evaluated = Result(
        status=SafetyStatus.UNDETERMINED,
        summary="judge unsure",
        turns=[
            Turn(
                request=Request(prompt="hi"),
                response=Response(text="hello"),
                eval_result=EvalResult(outcome=EvalOutcome.UNDETERMINED, rationale="why not"),
            )
        ],
    )
    results = [make_rich_result(), plain, evaluated]
    run = RunInfo(duration_seconds=2.5, exit_status=1, anyio_backends=["trio"], xdist_workers=2)
    report = TestRunReport.from_results(
        results, duration_seconds=2.5, metadata={"run_id": "r1"}, trial_groups=_groups(), run=run
    )
    document = parse_strict_json(data=render_report(report).decode("utf-8"))
    keys = list(document)
    assert [key for key in keys if key in REPORT_KEYS] == list(REPORT_KEYS)
    assert keys.index("no_result") == keys.index("errors") + 1  # optional, after RAMPART's
    records = report_records(document)
    by_summary = {record.result.summary: record.result for record in records}
    for result in results:
        kept = _as_the_report_keeps_it(result)
        assert by_summary[kept.summary] == kept
    rich = next(record for record in records if record.result.strategy == "xpia")
    assert (rich.pytest_nodeid, rich.result_index) == ("tests/test_x.py::test_exfil[trial-2]", 0)
    groups = [TrialGroupSummary.from_json(entry) for entry in document["trial_groups"]]
    assert groups == list(report.trial_groups)
    assert RunInfo.from_json(document["run"]) == run


@pytest.mark.parametrize(
    ("record_path", "report_path"),
    [
        ("$.result.turns[1].request.prompt", "$.x.turns[1].prompt"),
        ("$.result.turns[0].response.text", "$.x.turns[0].response_text"),
        ("$.result.turns[0].response.tool_calls[2].name", "$.x.turns[0].tool_calls[2].name"),
        ("$.result.turns[0].eval_result.confidence", "$.x.turns[0].eval_confidence"),
        ("$.result.final_trace_evaluation.confidence", "$.x.final_trace_evaluation.confidence"),
    ],
)
def test_decoder_messages_name_the_report_keys(record_path: str, report_path: str) -> None:
    """A decoder message about a rebuilt record names the key the report wrote."""
    message = report_message(f"{record_path}: expected a string", "$.x")
    assert message == f"{report_path}: expected a string"
