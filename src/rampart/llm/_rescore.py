"""Re-judge saved work: evaluate recorded traces again with another evaluator.

A ``rampart.trace.v2`` record holds the whole conversation (requests, responses, tool
calls, side effects), so a new evaluator, a stricter LLM judge, say, can decide the
verdict again without calling the agent. ``rescore_result`` does it for one
``Result``; ``rescore_records`` for decoded records (``read_trace_records`` reads a
``JsonlTraceSink`` file); a ``rampart rescore`` command can call them.

Rules, so a re-judged record never claims more than the original run observed:

* the evaluator sees the raw turns (online stop-check annotations removed), the
  record's observability level and no manifest (records do not store one);
* the strategy's declaration (``rampart.strategies``) decides the verdict: its
  polarity (``"xpia"``: attack, ``"probe"``: probe; other strategies need
  ``polarity=``, which words the result as that polarity's default strategy), its
  shaping (XPIA's rule for response-only adapters: a SAFE nobody could check is
  UNDETERMINED) and its summary;
* a record whose run ended in ERROR, or failed after a finding was kept (its
  ``metadata["error_type"]`` says so: the turns are only those completed before the
  failure), or that has no turns, is returned unchanged (the agent was not fully
  observed, so no verdict can be derived from it, and a kept finding is never erased);
* an infrastructure failure of the evaluator (``EvaluatorError``, a rate limit, ...)
  gives an ERROR result naming it, by the execution boundary's own rule and words
  (``rampart.engine._execution.boundary_failure``), as it would during a run; bugs
  propagate;
* the new result keeps everything else (turns as recorded, injections, timing,
  population) and records ``metadata["rescored"]``: the evaluator, and the previous
  status and summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from rampart._checks import check_choice, check_instance, check_int
from rampart._text import safe_str
from rampart.codec import ResultRecord
from rampart.core._internal import Polarity as VerdictPolarity
from rampart.core.evaluator import require_evaluator
from rampart.core.result import Result, SafetyStatus
from rampart.core.types import EvalContext, Turn
from rampart.engine._internal import boundary_failure, evaluate
from rampart.strategies import Strategy, strategy_for, strategy_named

if TYPE_CHECKING:
    import os
    from collections.abc import Iterable

    from rampart.core.evaluator import Evaluator
    from rampart.core.types import EvalResult

__all__ = ["Polarity", "read_trace_records", "rescore_records", "rescore_result"]

Polarity = Literal["attack", "probe"]
_POLARITIES = tuple(polarity.value for polarity in VerdictPolarity)


def read_trace_records(path: str | os.PathLike[str]) -> list[ResultRecord]:
    """Every record of a JSONL trace file (one ``rampart.trace.v2`` record per line).

    Read by the codec's JSONL reader (``rampart.codec._jsonl.read_records``): blank lines
    are skipped, lines end at ``"\n"`` only, and every line goes through the JSON reading
    policy and the record decoder. A bad line raises ``SchemaError`` naming the file and
    its line number (``<path>:<line>: ...``).
    """
    from rampart.codec._internal import read_records

    return read_records(Path(path).read_bytes(), source=str(path))


def _raw(turn: Turn) -> Turn:
    return Turn(
        request=turn.request,
        response=turn.response,
        turn_number=turn.turn_number,
        timestamp=turn.timestamp,
        driver_reasoning=turn.driver_reasoning,
    )


def _strategy(result: Result, polarity: Polarity | None) -> Strategy:
    """The declaration that re-judges ``result``: ``polarity``'s default strategy when
    given, else the strategy the result names (a ValueError when rampart knows none)."""
    if polarity is not None:
        chosen = check_choice("rescore", "polarity", polarity, _POLARITIES)
        return strategy_for(VerdictPolarity(chosen))
    known = strategy_named(result.strategy)
    if known is None:
        raise ValueError(
            f"rescore: the result's strategy {result.strategy!r} has no known polarity; "
            "pass polarity='attack' (DETECTED means UNSAFE) or 'probe' (DETECTED means SAFE)"
        )
    return known


def _describe(evaluator: object) -> str:
    text = safe_str(evaluator)
    return text if len(text) <= 300 else text[:300] + "..."


def _rebuilt(
    result: Result,
    *,
    status: SafetyStatus,
    summary: str,
    evaluation: EvalResult | None,
    note: dict[str, object],
) -> Result:
    metadata = dict(result.metadata)
    metadata["rescored"] = note
    return Result(
        status=status,
        summary=summary,
        observability_level=result.observability_level,
        final_trace_evaluation=evaluation,
        turns=list(result.turns),
        trace_end_reason=result.trace_end_reason,
        duration_seconds=result.duration_seconds,
        harm_category=result.harm_category,
        strategy=result.strategy,
        injections=list(result.injections),
        population=result.population,
        metadata=metadata,
    )


def _rejudgeable(result: Result) -> bool:
    """A completed run with turns: not ERROR, and no failure the boundary recorded."""
    return (
        result.status is not SafetyStatus.ERROR
        and bool(result.turns)
        and "error_type" not in result.metadata
    )


async def rescore_result(
    result: Result, *, evaluator: Evaluator, polarity: Polarity | None = None
) -> Result:
    """``result`` judged again by ``evaluator`` over its recorded turns (see the module)."""
    check_instance("rescore_result", "result", result, Result, expected="a Result")
    evaluator = require_evaluator(evaluator, name="evaluator")
    if not _rejudgeable(result):
        return result
    strategy = _strategy(result, polarity)
    note: dict[str, object] = {
        "evaluator": _describe(evaluator),
        "previous_status": result.status.value,
        "previous_summary": result.summary,
    }
    context = EvalContext(
        turns=[_raw(turn) for turn in result.turns],
        observability_level=result.observability_level,
    )
    try:
        evaluation = await evaluate(evaluator, context)
    except Exception as raised:
        failure = boundary_failure(raised)
        if failure is None:
            raise
        error, summary = failure
        note["error_type"] = type(error).__name__
        return _rebuilt(
            result, status=SafetyStatus.ERROR, summary=summary, evaluation=None, note=note
        )
    # No reasons to withhold a SAFE beyond the strategy's own rules, and what the
    # shaping notes is not recorded: the record keeps the metadata it had.
    status = strategy.verdict(
        evaluation,
        observability_level=result.observability_level,
        turns=context.turns,
        metadata={},
    )
    summary = strategy.summary(
        status=status, evaluation=evaluation, trace_end_reason=result.trace_end_reason
    )
    return _rebuilt(result, status=status, summary=summary, evaluation=evaluation, note=note)


async def rescore_records(
    records: Iterable[ResultRecord],
    *,
    evaluator: Evaluator,
    polarity: Polarity | None = None,
    concurrency: int = 8,
) -> list[ResultRecord]:
    """Every record re-judged by ``evaluator``, in input order, ``concurrency`` at a time.

    The pytest attribution (``pytest_nodeid``, ``result_index``) is kept.
    """
    items = list(records)
    for index, record in enumerate(items):
        check_instance(
            "rescore_records", f"records[{index}]", record, ResultRecord, expected="a ResultRecord"
        )
    concurrency = check_int("rescore_records", "concurrency", concurrency, minimum=1)
    evaluator = require_evaluator(evaluator, name="evaluator")
    for record in items:
        if _rejudgeable(record.result):
            _strategy(record.result, polarity)  # fail before any judge call
    rescored: list[ResultRecord | None] = [None] * len(items)
    limiter = anyio.CapacityLimiter(concurrency)

    async def one(index: int, record: ResultRecord) -> None:
        async with limiter:
            result = await rescore_result(record.result, evaluator=evaluator, polarity=polarity)
        rescored[index] = ResultRecord(
            result=result, pytest_nodeid=record.pytest_nodeid, result_index=record.result_index
        )

    async with anyio.create_task_group() as group:
        for index, record in enumerate(items):
            group.start_soon(one, index, record)
    return [record for record in rescored if record is not None]
