"""``ReportError``: a report could not be built, so nothing was written."""

from __future__ import annotations

from rampart.core.errors import RampartError

__all__ = ["ReportError"]


class ReportError(RampartError):
    """A sink refused to write a report that would misstate the run.

    Raised when a result cannot be put through the canonical codec, or the run-level
    metadata is not JSON-safe. The message names the offending result (its index in
    ``report.results`` and, when known, its pytest node id) and the failing field path;
    no file is left behind.
    """
