"""``TestRunReport`` and ``PopulationSummary``: counts, rates and grouping."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from rampart.core import HarmCategory, Result, SafetyStatus
from rampart.reporting import PopulationSummary, ReportSink, TestRunReport
from tests._builders import make_result

SAFE, UNSAFE, UNDET, ERROR = (
    SafetyStatus.SAFE,
    SafetyStatus.UNSAFE,
    SafetyStatus.UNDETERMINED,
    SafetyStatus.ERROR,
)


def _mixed() -> list[Result]:
    return [
        make_result(SAFE, category=HarmCategory.DATA_EXFILTRATION),
        make_result(UNSAFE, category="custom_label"),
        make_result(SAFE),
        make_result(ERROR, category=HarmCategory.DATA_EXFILTRATION),
        make_result(UNDET, category="data_exfiltration"),
        make_result(UNSAFE, category=HarmCategory.DATA_EXFILTRATION),
        make_result(SAFE, category=""),
    ]


class TestCounts:
    def test_from_results_counts_each_status(self) -> None:
        """passed counts SAFE, failed UNSAFE, and every status has its own count."""
        report = TestRunReport.from_results(_mixed(), duration_seconds=2.5, metadata={"a": 1})
        assert (report.total_runs, report.passed, report.failed) == (7, 3, 2)
        assert (report.undetermined, report.errors) == (1, 1)
        assert report.duration_seconds == 2.5
        assert report.metadata == {"a": 1}

    def test_constructor_derives_omitted_counts(self) -> None:
        """Counts left out of the constructor are computed from the results."""
        report = TestRunReport(results=_mixed(), total_runs=7)
        assert (report.passed, report.failed, report.errors) == (3, 2, 1)

    def test_empty_report(self) -> None:
        """A report with no results has zero counts and an empty metadata dict."""
        report = TestRunReport()
        assert (report.total_runs, report.passed, report.duration_seconds) == (0, 0, 0.0)
        assert report.results == []
        assert report.metadata == {}

    def test_contradicting_count_rejected(self) -> None:
        """A count that disagrees with the results is refused, naming the field."""
        with pytest.raises(
            ValueError, match=r"^TestRunReport: failed must be 1, the count results give .*, got 0$"
        ):
            TestRunReport(results=[make_result(UNSAFE)], failed=0)

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            (
                {"results": [object()]},
                TypeError,
                r"^TestRunReport: results\[0\] must be a Result, got <object object",
            ),
            (
                {"results": "abc"},
                TypeError,
                r"^TestRunReport: results must be an iterable of Result, got 'abc'$",
            ),
            ({"passed": -1}, ValueError, r"^TestRunReport: passed must be non-negative, got -1$"),
            (
                {"errors": True},
                TypeError,
                r"^TestRunReport: errors must be a non-negative integer, got True$",
            ),
            (
                {"duration_seconds": float("nan")},
                ValueError,
                r"^TestRunReport: duration_seconds must be a finite number of seconds >= 0, got nan$",
            ),
            (
                {"duration_seconds": -1.0},
                ValueError,
                r"duration_seconds must be a finite number of seconds >= 0, got -1\.0$",
            ),
            (
                {"duration_seconds": "1"},
                TypeError,
                r"duration_seconds must be a finite number of seconds >= 0, got '1'$",
            ),
            (
                {"metadata": []},
                TypeError,
                r"^TestRunReport: metadata must be a dict with str keys, got \[\]$",
            ),
            (
                {"metadata": {1: "x"}},
                TypeError,
                r"^TestRunReport: metadata keys must be str, got 1$",
            ),
        ],
    )
    def test_bad_input_named(
        self, kwargs: dict[str, Any], error: type[Exception], match: str
    ) -> None:
        """Every bad argument raises an error that names it and what was expected."""
        with pytest.raises(error, match=match):
            TestRunReport(**kwargs)

    def test_not_collected_by_pytest(self) -> None:
        """The class opts out of pytest collection despite its ``Test`` prefix."""
        assert TestRunReport.__test__ is False

    def test_frozen(self) -> None:
        """A report is a value: its fields cannot be reassigned."""
        report = TestRunReport()
        with pytest.raises(AttributeError):
            report.total_runs = 3  # type: ignore[misc]


class TestByHarmCategory:
    def test_first_seen_order_and_string_keys(self) -> None:
        """Groups follow first appearance; enum and equal plain string share one key."""
        results = _mixed()
        groups = TestRunReport.from_results(results).by_harm_category()
        assert list(groups) == ["data_exfiltration", "custom_label", "uncategorized"]
        assert groups["data_exfiltration"] == [results[0], results[3], results[4], results[5]]
        assert groups["custom_label"] == [results[1]]

    def test_none_and_empty_are_uncategorized(self) -> None:
        """A result without a category, or with an empty one, lands in "uncategorized"."""
        results = _mixed()
        groups = TestRunReport.from_results(results).by_harm_category()
        assert groups["uncategorized"] == [results[2], results[6]]


class TestPopulationSummary:
    def test_rates_exclude_errors(self) -> None:
        """Both rates divide by the non-ERROR total; ERROR still counts in total_runs."""
        summary = TestRunReport.from_results(_mixed()).population_summary()
        assert summary == PopulationSummary(
            total_runs=7,
            safe_count=3,
            unsafe_count=2,
            undetermined_count=1,
            error_count=1,
            attack_success_rate=2 / 6,
            safety_pass_rate=3 / 6,
        )

    def test_only_errors_gives_zero_rates(self) -> None:
        """When every result is ERROR the rates are 0.0, not a division error."""
        summary = PopulationSummary.from_results([make_result(ERROR), make_result(ERROR)])
        assert (summary.attack_success_rate, summary.safety_pass_rate) == (0.0, 0.0)
        assert summary.error_count == 2
        assert not summary.is_clean_run

    def test_empty_population(self) -> None:
        """An empty population has zero rates and is a clean run without failures."""
        summary = PopulationSummary.from_results([])
        assert (summary.total_runs, summary.attack_success_rate) == (0, 0.0)
        assert summary.is_clean_run
        assert not summary.has_failures

    def test_filter_by_category(self) -> None:
        """Filtering matches the enum and its plain-string spelling alike."""
        report = TestRunReport.from_results(_mixed())
        by_enum = report.population_summary(harm_category=HarmCategory.DATA_EXFILTRATION)
        by_str = report.population_summary(harm_category="data_exfiltration")
        assert by_enum == by_str
        assert (by_enum.total_runs, by_enum.safe_count, by_enum.unsafe_count) == (4, 1, 1)
        assert by_enum.attack_success_rate == pytest.approx(1 / 3)

    def test_filter_rejects_non_string(self) -> None:
        """A category filter that is not a string is a usage error naming the argument."""
        with pytest.raises(TypeError, match="harm_category must be"):
            TestRunReport().population_summary(harm_category=3)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("statuses", "has_failures", "is_clean"),
        [
            ([SAFE, SAFE], False, True),
            ([SAFE, UNSAFE], True, False),
            ([SAFE, UNDET], False, False),
            ([SAFE, ERROR], False, False),
        ],
    )
    def test_flags(self, statuses: list[SafetyStatus], has_failures: bool, is_clean: bool) -> None:
        """has_failures means an UNSAFE result; a clean run has only SAFE results."""
        summary = PopulationSummary.from_results(make_result(s) for s in statuses)
        assert summary.has_failures is has_failures
        assert summary.is_clean_run is is_clean

    def test_frozen(self) -> None:
        """A summary is an immutable value."""
        summary = PopulationSummary.from_results([])
        with pytest.raises(AttributeError):
            summary.total_runs = 1  # type: ignore[misc]


class TestReportSinkProtocol:
    def test_runtime_checkable(self) -> None:
        """Any object with ``emit_async`` is a ReportSink; others are not."""

        class Custom:
            async def emit_async(self, *, report: TestRunReport) -> None:
                del report

        assert isinstance(Custom(), ReportSink)
        assert not isinstance(object(), ReportSink)


def test_import_stays_light() -> None:
    """Importing rampart.reporting loads no codec or validator; they load on first write."""
    code = (
        "import sys, rampart.reporting; "
        "heavy = [m for m in ('cattrs', 'jsonschema', 'rampart.codec._record') "
        "if m in sys.modules]; print(','.join(heavy))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == ""
