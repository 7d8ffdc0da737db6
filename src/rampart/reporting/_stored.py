"""``StoredResults``: a report's results, read from disk one at a time.

The pytest plugin keeps a long run's full results in a spill file, not in memory
(``rampart.pytest_plugin._ledger``); the ``TestRunReport`` it builds holds them as a
``StoredResults`` sequence. Reading an item loads and decodes that one result; the
*slim* results (status, summary, harm category, no turns) answer counts and grouping
without loading anything. Sinks iterate it like a list; a sink that needs random
access can index it, or copy it with ``list(report.results)`` (which loads them all).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import overload

from rampart._text import safe_float
from rampart.core.result import Result

__all__ = [
    "StoredResults",
    "confidence_unusable",
    "restore_unusable_confidences",
    "unusable_confidences",
]

#: The position of the final evaluation in ``unusable_confidences``; turns are 0, 1, ...
FINAL = -1


def confidence_unusable(evaluation: object) -> bool:
    """True for a live evaluation whose confidence is not a finite number."""
    if evaluation is None:
        return False
    try:
        confidence = getattr(evaluation, "confidence", None)
    except Exception:  # a subclass property that raises
        return True
    return safe_float(confidence) is None


def unusable_confidences(result: Result) -> tuple[int, ...]:
    """Where ``result``'s confidences are not finite numbers (``FINAL``, turn indices).

    The canonical record writes such a confidence as ``0.0``, the JSON report as
    ``null``; a result kept only as its record (``StoredResults``) remembers these
    positions so its report entry still says ``null``.
    """
    found = [FINAL] if confidence_unusable(result.final_trace_evaluation) else []
    found.extend(
        index for index, turn in enumerate(result.turns) if confidence_unusable(turn.eval_result)
    )
    return tuple(found)


def restore_unusable_confidences(result: Result, positions: tuple[int, ...]) -> Result:
    """``result`` (decoded from its record) with NaN again where ``positions`` say the
    live confidence was not a finite number; changed in place and returned."""
    for position in positions:
        evaluation = (
            result.final_trace_evaluation
            if position == FINAL
            else result.turns[position].eval_result
        )
        if evaluation is not None:
            evaluation.confidence = float("nan")
    return result


class StoredResults(Sequence[Result]):
    """A read-only sequence of full results, each loaded when it is read.

    ``slim_results[i]`` is result ``i`` without turns, injections, final evaluation and
    metadata: enough for status counts and harm categories. ``load(i)`` produces the
    full result ``i``.
    """

    def __init__(
        self,
        slim_results: Sequence[Result],
        load: Callable[[int], Result],
        *,
        record_text: Callable[[int], str | None] | None = None,
    ) -> None:
        self._slim = slim_results
        self._load = load
        self._record_text = record_text

    def record_text(self, index: int) -> str | None:
        """Result ``index``'s canonical ``rampart.trace`` record text, when it is stored
        that way (the file sinks then write it without decoding it); else None.

        The record carries the result's ``pytest_nodeid`` / ``result_index``
        attribution, as the JSONL trace sink writes it.
        """
        return None if self._record_text is None else self._record_text(index)

    @property
    def slim_results(self) -> Sequence[Result]:
        return self._slim

    def __len__(self) -> int:
        return len(self._slim)

    @overload
    def __getitem__(self, index: int) -> Result: ...

    @overload
    def __getitem__(self, index: slice) -> list[Result]: ...

    def __getitem__(self, index: int | slice) -> Result | list[Result]:
        if isinstance(index, slice):
            return [self._load(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("result index out of range")
        return self._load(index)

    def __iter__(self) -> Iterator[Result]:
        for index in range(len(self)):
            yield self._load(index)

    def __repr__(self) -> str:
        return f"<StoredResults: {len(self)} results, loaded on access>"
