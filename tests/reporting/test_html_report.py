"""``HtmlReportSink``: one self-contained file, the canonical data, untrusted text escaped.

What the page does in a browser is checked in ``test_html_browser.py``.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import tempfile
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from rampart.codec import ResultRecord, serialize_record
from rampart.core import Result, SafetyStatus

# Private seam: _files.utc_timestamp is frozen so file names can be predicted.
from rampart.reporting import HtmlReportSink, ReportError, ReportSink, TestRunReport, _files
from tests._builders import make_result, make_rich_result
from tests.reporting._html_support import XSS, hostile_report, state_of, trial_report

if TYPE_CHECKING:
    from pathlib import Path

STAMP = "2026-04-25T14-30-00-123"


def render_html(report: TestRunReport) -> bytes:
    """The page ``HtmlReportSink`` writes for ``report`` (into a fresh directory)."""
    with tempfile.TemporaryDirectory() as directory:
        sink = HtmlReportSink(output_dir=directory)
        path = anyio.run(functools.partial(sink.write, report=report))
        return path.read_bytes()


@pytest.fixture
def frozen_clock(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(_files, "utc_timestamp", lambda: STAMP)
    return STAMP


def _write(directory: Path, report: TestRunReport) -> Path:
    sink = HtmlReportSink(output_dir=directory)

    async def main() -> Path:
        return await sink.write(report=report)

    path = anyio.run(main)
    assert sink.last_path == path
    return path


class TestFiles:
    def test_is_a_sink_named_like_the_json_report(self, tmp_path: Path, frozen_clock: str) -> None:
        sink = HtmlReportSink(output_dir=tmp_path)
        assert isinstance(sink, ReportSink)
        assert repr(sink) == f"HtmlReportSink(output_dir={str(tmp_path)!r})"
        path = _write(tmp_path, trial_report())
        assert path == tmp_path / f"run_report_{frozen_clock}.html"

    def test_never_overwrites(self, tmp_path: Path, frozen_clock: str) -> None:
        first = _write(tmp_path, trial_report())
        before = first.read_bytes()
        second = _write(tmp_path, TestRunReport())
        assert second != first
        assert re.fullmatch(rf"run_report_{frozen_clock}_[0-9a-f]{{32}}\.html", second.name)
        assert first.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([first.name, second.name])

    def test_bad_output_dir_is_refused(self) -> None:
        with pytest.raises(TypeError, match="HtmlReportSink: output_dir must be"):
            HtmlReportSink(output_dir=3)  # type: ignore[arg-type]

    def test_codec_rejection_writes_nothing(self, tmp_path: Path) -> None:
        bad = make_result(metadata={"blob": b"bytes"})
        with pytest.raises(ReportError, match=r"report.results\[0\]"):
            _write(tmp_path / "out", TestRunReport.from_results([bad]))
        assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())

    def test_non_json_metadata_is_refused(self, tmp_path: Path) -> None:
        report = TestRunReport.from_results([], metadata={"x": {1, 2}})
        with pytest.raises(ReportError, match=r"report\.metadata must hold only JSON-safe"):
            _write(tmp_path, report)


class TestSelfContained:
    def test_no_external_resources_and_a_hashed_csp(self) -> None:
        """One inline script and stylesheet, allowed by hash; nothing loads from elsewhere."""
        page = render_html(trial_report()).decode("utf-8")
        assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
        assert "<link" not in page
        assert "@import" not in page
        csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
        assert csp is not None
        policy = dict(part.strip().split(" ", 1) for part in csp.group(1).split(";"))
        assert policy["default-src"] == "'none'"
        scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
        styles = re.findall(r"<style>(.*?)</style>", page, re.S)
        assert len(scripts) == 1
        assert len(styles) == 1

        def digest(text: str) -> str:
            return (
                "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"
            )

        assert policy["script-src"] == digest(scripts[0])
        assert policy["style-src"] == digest(styles[0])

    def test_hostile_text_cannot_leave_the_data_block(self) -> None:
        """`</script>`, `<!--` and tags in agent text are escaped inside the JSON block."""
        page = render_html(hostile_report()).decode("utf-8")
        # The only "</script" in the page end the two real script elements.
        assert page.count("</script") == 2
        assert "<!--" not in page.split('id="rampart-state">', 1)[1]
        for text in XSS:
            if "<" in text:
                assert text not in page
        # ... and the data reads back unchanged.
        state = state_of(page)
        result = state["results"][0]
        assert result["summary"].startswith("summary <script>")
        assert result["turns"][0]["response"]["tool_calls"][0]["arguments"][XSS[1]] == XSS[2]


class TestData:
    def test_results_are_the_canonical_bodies(self) -> None:
        """Each result in the page is the codec's own output, plus its category key."""
        results: list[Result] = [make_rich_result(), make_result(SafetyStatus.ERROR)]
        state = state_of(render_html(TestRunReport.from_results(results)).decode())
        for result, shown in zip(results, state["results"], strict=True):
            body: dict[str, Any] = json.loads(serialize_record(record=ResultRecord(result=result)))[
                "result"
            ]
            assert {k: v for k, v in shown.items() if k != "category"} == body
        assert [r["category"] for r in state["results"]] == ["data_exfiltration", "uncategorized"]

    def test_sections(self) -> None:
        report = trial_report()
        state = state_of(render_html(report).decode())
        assert state["format"] == "rampart.html-state.v1"
        assert state["run"] == report.run.to_json()
        assert state["totals"]["total_runs"] == 6
        assert [c["name"] for c in state["categories"]] == ["data_exfiltration", "jailbreak"]
        (group,) = state["groups"]
        assert group["verdict"] == "failed"
        assert group["reason"] == "1 UNSAFE, 1 ERROR"
        # One cell per clone: its status, the result it links to and its case (none:
        # the marker gave no ids=).
        assert group["clones"] == [
            ["safe", 0, None],
            ["unsafe", 1, None],
            ["safe", 2, None],
            ["error", 3, None],
            ["safe", 4, None],
        ]
        assert state["metadata"]["llm"]["llm:judge"]["calls"] == 3

    def test_clone_without_result_is_an_empty_cell(self) -> None:
        report = trial_report()
        kept = [r for r in report.results if not r.metadata["_pytest_nodeid"].endswith("[trial-2]")]
        state = state_of(
            render_html(TestRunReport.from_results(kept, trial_groups=report.trial_groups)).decode()
        )
        assert state["groups"][0]["clones"][2] == [None, -1, None]

    def test_size_grows_linearly(self) -> None:
        """The page is a fixed frame plus the state: bytes per result do not grow with n."""
        report = trial_report()

        def size(copies: int) -> int:
            results = [r for _ in range(copies) for r in report.results]
            return len(render_html(TestRunReport.from_results(results)))

        frame = size(0)
        per_result_small = (size(10) - frame) / 60
        per_result_large = (size(100) - frame) / 600
        assert per_result_large == pytest.approx(per_result_small, rel=0.02)
