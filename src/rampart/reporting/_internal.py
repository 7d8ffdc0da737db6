"""The internal face of ``rampart.reporting``: what other rooms take from its private modules.

For the report files' rules (names, stamps, atomic replacement), the report format's
reader and renderers, the terminal summary and the group text, which the plugin and the
command line build their output with; and the public names the package loads lazily.
What is not here comes from ``rampart.reporting`` itself; how the face loads is in
``docs/architecture.md`` ("Internal faces").
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.reporting._canonical import record_attribution
    from rampart.reporting._files import (
        STAMP_PATTERN,
        output_file,
        prune_stamped,
        remove_stale_temporaries,
        replace_file,
        utc_timestamp,
        write_new_file,
    )
    from rampart.reporting._group_text import group_description, group_entry
    from rampart.reporting._html import render_html
    from rampart.reporting._json_report import render_report
    from rampart.reporting._report import UNCATEGORIZED, category_key
    from rampart.reporting._report_format import (
        entry_document,
        entry_record,
        iter_report_entries,
        report_count_problems,
        report_message,
        report_records,
        report_shape_problems,
    )
    from rampart.reporting._run_data import INCOMPLETE, TrialGroupSummary
    from rampart.reporting._sarif import SarifReportSink, render_sarif
    from rampart.reporting._stored import (
        StoredResults,
        restore_unusable_confidences,
        unusable_confidences,
    )
    from rampart.reporting._terminal import SummaryEntry, summary_lines

_FACE = {
    "record_attribution": "rampart.reporting._canonical",
    "STAMP_PATTERN": "rampart.reporting._files",
    "output_file": "rampart.reporting._files",
    "prune_stamped": "rampart.reporting._files",
    "remove_stale_temporaries": "rampart.reporting._files",
    "replace_file": "rampart.reporting._files",
    "utc_timestamp": "rampart.reporting._files",
    "write_new_file": "rampart.reporting._files",
    "group_description": "rampart.reporting._group_text",
    "group_entry": "rampart.reporting._group_text",
    "render_html": "rampart.reporting._html",
    "render_report": "rampart.reporting._json_report",
    "category_key": "rampart.reporting._report",
    "entry_document": "rampart.reporting._report_format",
    "entry_record": "rampart.reporting._report_format",
    "iter_report_entries": "rampart.reporting._report_format",
    "report_count_problems": "rampart.reporting._report_format",
    "report_message": "rampart.reporting._report_format",
    "report_records": "rampart.reporting._report_format",
    "report_shape_problems": "rampart.reporting._report_format",
    "INCOMPLETE": "rampart.reporting._run_data",
    "TrialGroupSummary": "rampart.reporting._run_data",
    "SarifReportSink": "rampart.reporting._sarif",
    "render_sarif": "rampart.reporting._sarif",
    "StoredResults": "rampart.reporting._stored",
    "restore_unusable_confidences": "rampart.reporting._stored",
    "unusable_confidences": "rampart.reporting._stored",
    "SummaryEntry": "rampart.reporting._terminal",
    "summary_lines": "rampart.reporting._terminal",
    "UNCATEGORIZED": "rampart.reporting._report",
}
__getattr__, __dir__ = lazy_attributes(__name__, globals(), _FACE, uncached=frozenset(_FACE))

__all__ = [
    "INCOMPLETE",
    "STAMP_PATTERN",
    "SarifReportSink",
    "StoredResults",
    "SummaryEntry",
    "TrialGroupSummary",
    "UNCATEGORIZED",
    "category_key",
    "entry_document",
    "entry_record",
    "group_description",
    "group_entry",
    "iter_report_entries",
    "output_file",
    "prune_stamped",
    "record_attribution",
    "remove_stale_temporaries",
    "render_html",
    "render_report",
    "render_sarif",
    "replace_file",
    "report_count_problems",
    "report_message",
    "report_records",
    "report_shape_problems",
    "restore_unusable_confidences",
    "summary_lines",
    "unusable_confidences",
    "utc_timestamp",
    "write_new_file",
]
