"""``HtmlReportSink``: one self-contained HTML file per run, for people to read.

The page is the template ``_html_assets/report.html`` with its stylesheet and script
inlined and the report's data (``_html_state.html_state``, a projection of the
canonical codec) embedded as a JSON block. It loads nothing from anywhere: a
Content-Security-Policy allows only that one inline script and stylesheet (by their
SHA-256 hashes), so the file works from ``file://`` and makes no network request.

The whole state passes the redaction policy (``rampart._redact``), as the JSON report
does. Untrusted text (agent output, payloads, node ids, metadata) reaches the page only as
JSON data, escaped so it cannot end the ``<script>`` block that holds it, and the
script puts it into the document as text nodes, never as HTML.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

from rampart._redact import redact_data
from rampart._text import reveal_hidden_json
from rampart.reporting._file_sink import ReportFileSink
from rampart.reporting._html_state import html_state

if TYPE_CHECKING:
    from rampart.reporting._report import TestRunReport

__all__ = ["HtmlReportSink", "render_html"]

_PLACEHOLDER = re.compile(r"\{\{([A-Z]+)\}\}")

# Inside a <script> element the HTML parser ends the block at "</script" and treats
# "<!--" specially; escaping "<", ">" and "&" (JSON \u escapes decode to the same
# text) rules both out. U+2028/2029 are escaped too, for older JavaScript parsers.
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


@functools.cache
def _asset(name: str) -> str:
    return resources.files("rampart.reporting").joinpath("_html_assets", name).read_text("utf-8")


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(script: str, style: str) -> str:
    """No source at all, except the page's own inline script and stylesheet."""
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src {_sha256(script)}",
            f"style-src {_sha256(style)}",
            "img-src data:",
            "base-uri 'none'",
            "form-action 'none'",
        ]
    )


def embed_state(state: dict[str, Any]) -> str:
    """The state as JSON text that is safe inside a ``<script type="application/json">``.

    Characters the page would obey without showing them (C1 controls, bidi overrides,
    zero-width characters) become visible ``[U+XXXX]`` text: agent output cannot
    reorder or hide what a reviewer reads.
    """
    text = json.dumps(state, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return reveal_hidden_json(text).translate(_SCRIPT_SAFE)


def render_html(report: TestRunReport) -> bytes:
    """The whole page as UTF-8 bytes.

    Raises :class:`ReportError` when a result is rejected by the canonical codec or the
    run metadata is not JSON-safe (as the JSON report does); nothing is written then.
    """
    from rampart._version import __version__

    script, style = _asset("report.js"), _asset("report.css")
    values = {
        "CSP": content_security_policy(script, style),
        "VERSION": __version__,
        "STYLE": style,
        "SCRIPT": script,
        "STATE": embed_state(redact_data(html_state(report))),
    }
    # One pass over the template: text substituted in is never scanned for placeholders.
    page = _PLACEHOLDER.sub(lambda match: values[match.group(1)], _asset("report.html"))
    return page.encode("utf-8")


class HtmlReportSink(ReportFileSink):
    """Writes each report to ``<output_dir>/run_report_<UTC timestamp>.html``.

    The file naming is the JSON report's: the UTC time with millisecond precision, a
    random UUID suffix when the name is taken, created atomically, never replacing an
    existing file; the directory is created on first write. The page is
    self-contained (inline CSS and JavaScript, no network requests) and shows the run,
    the totals, each harm category and trial group, and every result with its
    drill-down. Building and writing happen in a worker thread.
    """

    suffix = ".html"

    def _content(self, report: TestRunReport) -> bytes:
        return render_html(report)
