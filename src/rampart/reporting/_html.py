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

import anyio.to_thread

from rampart._checks import check_instance, check_path
from rampart._redact import redact_data
from rampart.reporting import _files
from rampart.reporting._html_state import html_state
from rampart.reporting._report import TestRunReport

if TYPE_CHECKING:
    from pathlib import Path

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
    """The state as JSON text that is safe inside a ``<script type="application/json">``."""
    text = json.dumps(state, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return text.translate(_SCRIPT_SAFE)


def render_html(report: TestRunReport) -> bytes:
    """The whole page as UTF-8 bytes.

    Raises :class:`ReportError` when a result is rejected by the canonical codec or the
    run metadata is not JSON-safe (as the JSON report does); nothing is written then.
    """
    from rampart import __version__

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


class HtmlReportSink:
    """Writes each report to ``<output_dir>/run_report_<UTC timestamp>.html``.

    The file naming is the JSON report's: the UTC time with millisecond precision, a
    random UUID suffix when the name is taken, created atomically, never replacing an
    existing file; the directory is created on first write. The page is
    self-contained (inline CSS and JavaScript, no network requests) and shows the run,
    the totals, each harm category and trial group, and every result with its
    drill-down. Building and writing happen in a worker thread.
    """

    def __init__(self, *, output_dir: Path | str) -> None:
        self._output_dir = check_path("HtmlReportSink", "output_dir", output_dir)
        self._last_path: Path | None = None

    @property
    def output_dir(self) -> Path:
        return self._output_dir

    @property
    def last_path(self) -> Path | None:
        """The file the most recent completed write produced, or ``None``."""
        return self._last_path

    def __repr__(self) -> str:
        return f"HtmlReportSink(output_dir={str(self._output_dir)!r})"

    def _write_blocking(self, report: TestRunReport) -> Path:
        data = render_html(report)
        return _files.write_new_file(
            self._output_dir, stem=f"run_report_{_files.utc_timestamp()}", suffix=".html", data=data
        )

    async def write(self, *, report: TestRunReport) -> Path:
        """Write ``report`` as a page and return the new file's path."""
        check_instance(
            "HtmlReportSink.write", "report", report, TestRunReport, expected="a TestRunReport"
        )
        path = await anyio.to_thread.run_sync(functools.partial(self._write_blocking, report))
        self._last_path = path
        return path

    async def emit_async(self, *, report: TestRunReport) -> None:
        """:class:`ReportSink` entry point: :meth:`write` the page."""
        await self.write(report=report)
