"""The history as one self-contained HTML page (``rampart history --html OUT``).

Static HTML with inline CSS and no script (a Content-Security-Policy forbids any):
every text from the runs is made one safe cell (``_table.cell``: one line, secrets
redacted, hidden characters escaped) and HTML-escaped, so a hostile node id is text.
"""

from __future__ import annotations

from html import escape
from typing import Any

from rampart.cli import _table
from rampart.cli._trend import regression_line

__all__ = ["render_page"]

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}
td.num{text-align:right}
td.v{text-align:center;font-family:monospace;width:1.5em}
.P{background:#d8f5d8}.F{background:#f8d0d0}.U,.E,.I{background:#f7ecc8}.Q{background:#e6e6e6}
tr.regressed td:first-child{font-weight:bold;color:#a00}
p.rule{max-width:60em}
"""

_LETTER_CLASS = {"P": "P", "F": "F", "U": "U", "E": "E", "I": "I", "?": "Q", "-": ""}


def _text(value: object) -> str:
    return escape(_table.cell(value))


def _percent(value: float) -> str:
    from rampart.core._internal import percent

    return percent(value)


def _runs_table(runs: list[dict[str, Any]]) -> list[str]:
    rows = [
        "<table id='runs'><tr><th>run</th><th>started (UTC)</th><th>run id</th>"
        "<th>results</th><th>exit</th><th>file</th></tr>"
    ]
    for entry in runs:
        rows.append(
            "<tr>"
            f"<td class='num'>{entry['run']}</td><td>{_text(entry['started_at'])}</td>"
            f"<td>{_text((entry['run_id'] or '-')[:8])}</td>"
            f"<td class='num'>{entry['results']}</td><td>{_text(entry['exit_status'])}</td>"
            f"<td>{_text(entry['path'])}</td></tr>"
        )
    rows.append("</table>")
    return rows


def _series_table(data: dict[str, Any]) -> list[str]:
    count = len(data["runs"])
    head = "".join(f"<th>{index}</th>" for index in range(1, count + 1))
    rows = [
        "<table id='series'><tr><th>test</th><th>pass rate</th><th>interval</th>"
        f"{head}<th>flips</th><th>regression</th></tr>"
    ]
    for entry in data["series"]:
        cells = []
        for letter, point in zip(entry["verdicts"], entry["runs"], strict=True):
            title = (
                "absent"
                if point is None
                else f"{point['verdict']}: {point['safe']}/{point['executed']} safe"
            )
            cells.append(
                f"<td class='v {_LETTER_CLASS.get(letter, '')}' title='{_text(title)}'>"
                f"{escape(letter)}</td>"
            )
        low, high = entry["interval"]
        rate = (
            f"{entry['safe']}/{entry['executed']} ({_percent(entry['pass_rate'])})"
            if entry["executed"]
            else "-"
        )
        interval = f"{_percent(low)}-{_percent(high)}" if entry["executed"] else "-"
        change = entry["change"]
        verdict = ""
        if entry["regressed"]:
            verdict = f"since run {change['since_run']} (Holm p {change['p_adjusted']:.3g})"
        kind = " (group)" if entry["kind"] == "group" else ""
        rows.append(
            f"<tr class='{'regressed' if entry['regressed'] else ''}'>"
            f"<td>{_text(entry['nodeid'])}{kind}</td><td class='num'>{rate}</td>"
            f"<td>{interval}</td>{''.join(cells)}<td class='num'>{len(entry['flips'])}</td>"
            f"<td>{_text(verdict)}</td></tr>"
        )
    rows.append("</table>")
    return rows


def render_page(data: dict[str, Any]) -> str:
    """The page for ``data`` (``_trend.history``'s dict)."""
    runs = data["runs"]
    regressed = [entry for entry in data["series"] if entry["regressed"]]
    findings = [f"<li>{_text(regression_line(entry, runs))}</li>" for entry in regressed]
    summary = (
        f"{len(regressed)} significant regression{'s' * (len(regressed) != 1)}"
        if regressed
        else "no significant regression"
    )
    parts = [
        "<!DOCTYPE html>",
        "<html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\">",
        "<title>rampart history</title>",
        f"<style>{_STYLE}</style></head><body>",
        f"<h1>rampart history: {len(runs)} runs</h1>",
        "<h2>Runs (oldest first)</h2>",
        *_runs_table(runs),
        "<h2>Tests and trial groups</h2>",
        f"<p>Pass rate over the runs with its {data['confidence']:.0%} Wilson interval; "
        "one column per run, oldest first (P pass, F fail, U undetermined, E error, "
        "I inconclusive, ? incomplete, - absent).</p>",
        *_series_table(data),
        "<h2 id='regressions'>Regressions</h2>",
        f"<p class='rule'>Test: {escape(data['rule'])} (alpha {data['alpha']}).</p>",
        f"<p id='verdict'>{summary}</p>",
        f"<ul>{''.join(findings)}</ul>" if findings else "",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"
