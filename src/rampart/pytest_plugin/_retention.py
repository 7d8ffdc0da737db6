"""Retention: how many runs the report directory and the journal directory keep.

Without a bound both grow by a few files per run, forever. At session end, after the
reports are written, the controller (or the single process) removes:

* ``--rampart-keep-runs N`` / ini ``rampart_keep_runs`` (default
  :data:`DEFAULT_KEEP_RUNS`): in ``--rampart-report-dir``, the files of all but the N
  newest runs -- ``run_report_*.json``, ``run_report_*.html`` and ``traces_*.jsonl``,
  each kind by the UTC time stamp in its name (each run writes one of each);
* ``--rampart-keep-journals N`` / ini ``rampart_keep_journals`` (default
  :data:`DEFAULT_KEEP_JOURNALS`): in the journal directory, all but the N newest
  ``rampart-journal-*.jsonl``; never the journal this run wrote or resumed.

``all`` keeps everything. Only files named exactly as rampart names them are removed
(``rampart.reporting._files.prune_stamped``), never anything else in the directory; a
file that cannot be removed is a warning, not a failed run. Sinks from the
``pytest_rampart_sinks`` hook write where their own ``output_dir`` says: retention
covers the built-in report directory only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs
import pytest

from rampart._checks import invalid
from rampart.pytest_plugin._options import add_option, option_or_ini

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = [
    "DEFAULT_KEEP_JOURNALS",
    "DEFAULT_KEEP_RUNS",
    "Retention",
    "add_options",
]

#: Runs a report directory keeps by default (enough for ``rampart history``).
DEFAULT_KEEP_RUNS = 50
#: Journals the journal directory keeps by default (a journal serves ``--rampart-resume``;
#: a finished run's report holds its results).
DEFAULT_KEEP_JOURNALS = 20

_EXPECTED = "a whole number of runs (0 or more) or 'all'"
_REPORT_FILES = ("run_report_", ".json"), ("run_report_", ".html"), ("traces_", ".jsonl")
_JOURNAL_FILES = (("rampart-journal-", ".jsonl"),)


def add_options(parser: pytest.Parser) -> None:
    """``--rampart-keep-runs`` and ``--rampart-keep-journals``, each with its ini option."""
    runs = (
        "How many runs the report directory (--rampart-report-dir) keeps: the files of "
        f"older runs are removed at the end of a run (default {DEFAULT_KEEP_RUNS}; 'all')."
    )
    journals = (
        "How many run journals the journal directory keeps: older ones are removed at the "
        f"end of a run, never the one it wrote or resumed (default {DEFAULT_KEEP_JOURNALS}; "
        "'all')."
    )
    add_option(parser, "rampart_keep_runs", metavar="N", help=runs, ini=runs)
    add_option(parser, "rampart_keep_journals", metavar="N", help=journals, ini=journals)


def _count(config: pytest.Config, name: str, default: int) -> int | None:
    """The option ``name`` as a count (None: keep all); a usage error naming it."""
    found = option_or_ini(config, name)
    if found is None:
        return default
    value, source = found
    text = str(value).strip().lower()
    if text == "all":
        return None
    if text.isascii() and text.isdigit():
        return int(text)
    raise invalid("rampart", source, _EXPECTED, value, error=pytest.UsageError)


@attrs.frozen(kw_only=True)
class Retention:
    """The bounds of one run (None: keep all), read and checked when pytest configures."""

    runs: int | None
    journals: int | None

    @classmethod
    def from_config(cls, config: pytest.Config) -> Retention:
        return cls(
            runs=_count(config, "rampart_keep_runs", DEFAULT_KEEP_RUNS),
            journals=_count(config, "rampart_keep_journals", DEFAULT_KEEP_JOURNALS),
        )

    def apply(
        self, *, report_dir: Path | None, journal: Path | None, warn: Callable[[str], None]
    ) -> None:
        """Remove what the bounds leave out: runs in ``report_dir``, journals beside
        ``journal`` (this run's, kept); each failure is passed to ``warn``."""
        from rampart.reporting._internal import prune_stamped

        failures: list[str] = []
        if report_dir is not None and self.runs is not None and report_dir.is_dir():
            for prefix, suffix in _REPORT_FILES:
                failures += prune_stamped(report_dir, prefix, suffix, keep=self.runs)
        if journal is not None and self.journals is not None and journal.parent.is_dir():
            ((prefix, suffix),) = _JOURNAL_FILES
            failures += prune_stamped(
                journal.parent, prefix, suffix, keep=self.journals, protect=journal
            )
        for failure in failures:
            warn(f"rampart retention: {failure}")
