"""Where the run ledger keeps full results: a spill file, read back for the report.

A long trial campaign records tens of thousands of results, each a tree of turns,
requests, responses and evaluations. Keeping them all in memory until the session
ends grew without bound (50,000 clones of a 2-turn attack took about a gigabyte).
So the ledger keeps, per result, only what the summary, the verdicts and the report
order need -- a *slim* copy of the result (status, summary, observability level,
harm category, strategy, population, duration; no turns, injections, evaluation or
metadata) -- and writes the full result, as its canonical ``rampart.trace.v2`` text,
to a ``ResultStore``: an anonymous temporary file (unlinked at once, so nothing is
left behind even by ``kill -9``). The report reads each full result back when a sink
asks for it (``rampart.reporting.StoredResults``), one at a time.

The ledger stores each result as the report will carry it (stamped with its
attribution, ``pytest_nodeid`` and ``result_index`` on the record), so the file sinks
can write the stored canonical text as it is instead of decoding and encoding each
result again. Writing through the canonical codec is also the recordability check: a
result the codec cannot record raises ``SchemaError`` here, and the ledger records an
ERROR marker in its place.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from typing import IO

    from rampart.core.result import Result

__all__ = ["ResultStore", "slim"]


def slim(result: Result) -> Result:
    """``result`` without what only the full report needs (turns, injections, the final
    evaluation, metadata): what the ledger keeps in memory."""
    return attrs.evolve(result, final_trace_evaluation=None, turns=[], injections=[], metadata={})


class ResultStore:
    """Append-only canonical record texts in an anonymous temporary file."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._size = 0
        self.bytes_written = 0

    def put(
        self, result: Result, *, pytest_nodeid: str | None = None, result_index: int | None = None
    ) -> tuple[int, int]:
        """Store ``result`` as a canonical record; its ``(offset, length)``.

        Raises ``SchemaError`` when the canonical codec cannot record it (nothing is
        stored then).
        """
        from rampart.codec._record import ResultRecord, serialize_record

        record = ResultRecord(result=result, pytest_nodeid=pytest_nodeid, result_index=result_index)
        data = serialize_record(record=record).encode("utf-8")
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="rampart-results-")  # noqa: SIM115
            # A store dropped without close() (a ledger built outside a session) still
            # closes its file.
            weakref.finalize(self, self._file.close)
        handle = self._file
        offset = self._size
        os.pwrite(handle.fileno(), data, offset)
        self._size += len(data)
        self.bytes_written += len(data)
        return offset, len(data)

    def text(self, location: tuple[int, int]) -> str:
        """The canonical record text stored at ``location``."""
        if self._file is None:
            raise LookupError("the result store is empty")
        offset, length = location
        return os.pread(self._file.fileno(), length, offset).decode("utf-8")

    def get(self, location: tuple[int, int]) -> Result:
        """The full result stored at ``location``."""
        from rampart.codec._record import deserialize_record

        return deserialize_record(data=self.text(location)).result

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
