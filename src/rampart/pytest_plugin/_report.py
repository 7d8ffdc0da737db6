"""The run's report: its options, where it goes (the sinks), what it says, and when.

**Options** (``add_options``): ``--rampart-report-dir DIR`` / ini ``rampart_report_dir``,
``--rampart-summary`` / ini ``rampart_summary``, ``--rampart-sarif PATH`` / ini
``rampart_sarif`` (a SARIF 2.1.0 log, ``sarif_sinks``) and ``--rampart-risk-map FILE`` /
ini ``rampart_risk_map`` (the risk map the reports' coverage matrix and SARIF use,
``risk_map``).

**The sinks** (``ReportSinks``): from the ``pytest_rampart_sinks`` hook (its spec is
here; the entry point registers it), else the deprecated fixture. Resolved once, at
session end, on the xdist controller or the single process. Each hook implementation
is called through pluggy on its own (a subset hook caller holding just that
implementation), so one that raises is named and the others still contribute.
Anything a sink or an implementation gets wrong is recorded on the run ledger: a
warning for a return value that is not sinks, a sink failure (which fails the run) for
an exception. A report never goes missing silently.

Without a hook implementation, the deprecated ``rampart_sinks`` is used, as RAMPART
documents it ("xdist compatibility"): in a single process the session fixture is
resolved by pytest (``_fixtures``); where no test ran it -- the xdist controller -- a
conftest's ``rampart_sinks`` is resolved directly: a module-level list (or tuple) of sinks is
used as is, a fixture function without parameters is called, and a fixture that
depends on other fixtures is skipped with a warning. A module-level list works in a
single process too. Only conftest files pytest loaded at start-up are seen there.

``--rampart-report-dir DIR`` (``report_dir_sinks``): the built-in sinks, with no
conftest code. The option (or ini ``rampart_report_dir``) adds a JSON report, a JSONL trace and an
HTML report in ``DIR`` to whatever the ``pytest_rampart_sinks`` hook (or the deprecated
fixture) provides; they are emitted and checked like any other sink.

**What it says**: each trial group is on the ledger as its report entry already
(``TrialGroupSummary``, stated by ``rampart.reporting._group_text.group_entry`` from the
outcome the runner computed once); ``run_info`` gathers the ``RunInfo``: start time, exit
status, interrupted / incomplete markers, versions, backends and xdist workers.
``note_backend`` notes which anyio backend each test ran on, on its call report
(called by the item hooks, which note it on the ledger; the attribute crosses from an
xdist worker like any report attribute, and the xdist controller reads it back with
``backend_of``). ``summary_lines`` is the terminal safety summary of this run: the
ledger's entries, rendered by ``rampart.reporting._terminal`` (the renderer ``rampart
report`` uses too). Each ``RecordedResult`` becomes a ``SummaryEntry`` from its
attribution, and each group is its report entry, so the summary is a projection of
the same data as the report.

**When** (``RunReporter``, registered on the xdist controller or the single process):
at session start it removes stale temporary files rampart left in the report and
journal directories; at session end it builds the report from the ledger when there
is a sink, emits it, and forces a non-zero exit for an incomplete run or a failed
sink; then it prints the terminal summary.

The entry point imports this module for its options and hook spec: reporting itself
(``rampart.reporting``) loads when a report is built or a sink is made.
"""

from __future__ import annotations

import inspect
import platform
import sys
import time
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy
import pytest

from rampart._checks import invalid
from rampart._redact import redact
from rampart._text import one_line
from rampart.pytest_plugin._journal import report_directory
from rampart.pytest_plugin._layers import merge_limit_statistics
from rampart.pytest_plugin._options import add_option, choice

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from rampart.pytest_plugin._interrupts import InterruptWatch
    from rampart.pytest_plugin._journal import RunJournal
    from rampart.pytest_plugin._layers import LimitTracker, LLMRunStatistics
    from rampart.pytest_plugin._ledger import RecordedResult, RunLedger
    from rampart.pytest_plugin._resume import ResumePlan
    from rampart.pytest_plugin._retention import Retention
    from rampart.reporting import ReportSink, RunInfo, TestRunReport, TrialGroupSummary
    from rampart.reporting._internal import SummaryEntry
    from rampart.risk import RiskMap

__all__ = [
    "BACKEND_ATTRIBUTE",
    "INTERRUPTED_REASON",
    "LEGACY_FIXTURE_WARNING",
    "ReportSinks",
    "RunReporter",
    "SINKS_KEY",
    "STALE_GRACE_SECONDS",
    "SUMMARY_MODES",
    "add_options",
    "backend_of",
    "entry",
    "note_backend",
    "pytest_rampart_sinks",
    "report_dir",
    "risk_map",
    "run_info",
    "sarif_sinks",
    "summary_lines",
]

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_rampart_sinks(config: pytest.Config) -> list[ReportSink]:  # type: ignore[empty-body]
    """Return report sinks for this run; rampart emits to the union of all implementations.

    Resolved once, on the xdist controller or the single process, at session end. When
    any implementation exists, the deprecated ``rampart_sinks`` fixture is ignored.
    Implementations are called one at a time, so one that raises is reported by name
    (and fails the run) while the others still receive the report.
    """


# -- options ---------------------------------------------------------------------------

#: ``all``: every result line and every group line (the default); ``groups``: trial
#: groups as one line each, other results line by line; ``failures``: only results
#: and groups that are not SAFE / did not pass.
SUMMARY_MODES = ("all", "groups", "failures")
_REPORT_DIR_HELP = (
    "Write the JSON report, the JSONL trace and the HTML report to DIR (in addition to "
    "any pytest_rampart_sinks sinks)."
)
_SUMMARY_HELP = (
    "Terminal safety summary: all (every result and group line, the default), groups "
    "(one line per trial group instead of its clones), failures (only what is not SAFE)."
)


_SARIF_HELP = (
    "Write the run's findings as a SARIF 2.1.0 log to PATH (replaced atomically), for "
    "code-scanning UIs."
)
_RISK_MAP_HELP = (
    "A risk map file (rampart.risk-map.v1) that extends or overrides the built-in "
    "mapping to OWASP LLM, OWASP Agentic and MITRE ATLAS items (docs/risk-mapping.md)."
)


def add_options(parser: pytest.Parser) -> None:
    """``--rampart-report-dir``, ``--rampart-summary``, ``--rampart-sarif`` and
    ``--rampart-risk-map``, with their ini options."""
    add_option(
        parser,
        "rampart_report_dir",
        metavar="DIR",
        help=_REPORT_DIR_HELP,
        ini="Directory for the JSON, JSONL and HTML reports, relative to the rootdir "
        "(default: none).",
    )
    add_option(parser, "rampart_summary", metavar="MODE", help=_SUMMARY_HELP, ini=_SUMMARY_HELP)
    add_option(
        parser,
        "rampart_sarif",
        metavar="PATH",
        help=_SARIF_HELP,
        ini="File for the SARIF 2.1.0 log, relative to the rootdir (default: none).",
    )
    add_option(
        parser,
        "rampart_risk_map",
        metavar="FILE",
        help=_RISK_MAP_HELP,
        ini="Risk map file, relative to the rootdir (default: the built-in map only).",
    )


def _path_option(config: pytest.Config, name: str, expected: str) -> Path | None:
    """``--name`` (relative to the current directory), else the ini option ``name``
    (relative to the rootdir); None when neither is set."""
    value = config.getoption(name, None)
    if value is not None:
        if not str(value).strip():
            option = f"--{name.replace('_', '-')}"
            raise invalid("rampart", option, expected, value, error=pytest.UsageError)
        return Path(value).absolute()
    raw = config.getini(name)
    if not isinstance(raw, str) or not raw.strip():
        return None
    return (config.rootpath / raw.strip()).absolute()


def sarif_sinks(config: pytest.Config) -> list[ReportSink]:
    """``--rampart-sarif PATH`` (or ini ``rampart_sarif``): the SARIF sink, checked when
    pytest configures the run (a folder that does not exist, a directory or a device at
    PATH is a usage error before any test runs)."""
    path = _path_option(config, "rampart_sarif", "a file path")
    if path is None:
        return []
    from rampart.reporting._internal import SarifReportSink, output_file

    try:
        output_file(path)
    except ValueError as exc:
        raise pytest.UsageError(f"rampart: --rampart-sarif / rampart_sarif: {exc}") from None
    return [SarifReportSink(path=path)]


def risk_map(config: pytest.Config) -> RiskMap | None:
    """``--rampart-risk-map FILE`` (or ini ``rampart_risk_map``) applied over the built-in
    map; None without one (the reports use the built-in map). A file that cannot be read
    or is not a valid map is a usage error naming the option and the entry."""
    path = _path_option(config, "rampart_risk_map", "a file path")
    if path is None:
        return None
    from rampart.risk import RiskMap

    try:
        return RiskMap.load([path])
    except (OSError, ValueError, TypeError) as exc:
        raise pytest.UsageError(f"rampart: --rampart-risk-map / rampart_risk_map: {exc}") from None


def report_dir(config: pytest.Config) -> Path | None:
    """``--rampart-report-dir`` (relative to the current directory), else the ini option
    (relative to the rootdir); None when neither is set."""
    return _path_option(config, "rampart_report_dir", "a directory path")


# -- the sinks -------------------------------------------------------------------------

SINKS_KEY = pytest.StashKey["ReportSinks"]()


#: A temporary file must be this much older than the session to count as stale: a
#: report another session is publishing right now is never touched.
STALE_GRACE_SECONDS = 60.0


_HOOK = "pytest_rampart_sinks"


LEGACY_FIXTURE_WARNING = (
    "The rampart_sinks fixture is deprecated and will be removed in 0.3.0. "
    "Use the pytest_rampart_sinks hook instead: in conftest.py, replace the fixture with "
    "`def pytest_rampart_sinks(config): return [...]` returning the same sinks."
)


class ReportSinks:
    """Where the run report goes; see the module docstring."""

    def __init__(self, *, config: pytest.Config, ledger: RunLedger) -> None:
        self._config = config
        self._ledger = ledger
        self._fixture_sinks: list[object] | None = None

    def has_hook_implementations(self) -> bool:
        return bool(self._config.hook.pytest_rampart_sinks.get_hookimpls())

    def use_fixture_sinks(self, sinks: object) -> None:
        """The value of the deprecated ``rampart_sinks`` fixture (used without a hook)."""
        self._fixture_sinks = list(sinks) if isinstance(sinks, list | tuple) else [sinks]

    def resolve(self) -> list[ReportSink]:
        if self.has_hook_implementations():
            return list(self._hook_sinks())
        if self._fixture_sinks is None:
            self._fixture_sinks = self._legacy_sinks_directly()
            if self._fixture_sinks is None:
                return []
        from rampart.reporting import ReportSink

        kept = [sink for sink in self._fixture_sinks if isinstance(sink, ReportSink)]
        if len(kept) != len(self._fixture_sinks):
            self._ledger.warn("rampart_sinks fixture returned items that are not report sinks")
        return kept

    def _hook_sinks(self) -> Iterator[ReportSink]:
        """Every implementation's sinks, each implementation called on its own."""
        from rampart.reporting import ReportSink

        manager = self._config.pluginmanager
        implementations = self._config.hook.pytest_rampart_sinks.get_hookimpls()
        plugins = [implementation.plugin for implementation in implementations]
        for implementation in implementations:
            name = implementation.plugin_name
            others = [plugin for plugin in plugins if plugin is not implementation.plugin]
            call_one = manager.subset_hook_caller(_HOOK, remove_plugins=others)
            try:
                # pluggy passes only the arguments the implementation declares and
                # drops a None return, so [] means "returned None".
                returned = call_one(config=self._config)
            except Exception as exc:  # reported loudly, exit status forced
                self._ledger.sink_failed(f"{_HOOK} in {name} raised {type(exc).__name__}: {exc}")
                continue
            value = returned[0] if returned else None
            if not isinstance(value, list | tuple):
                self._ledger.warn(
                    f"{_HOOK} in {name} returned {type(value).__name__}, "
                    "expected a list of report sinks; ignored"
                )
                continue
            for sink in value:
                if isinstance(sink, ReportSink):
                    yield sink
                else:
                    self._ledger.warn(
                        f"{_HOOK} in {name} returned {type(sink).__name__}, "
                        "which has no emit_async(); ignored"
                    )

    def emit(self, report: TestRunReport, sinks: list[ReportSink]) -> None:
        """Hand ``report`` to every sink concurrently; failures are recorded, not raised."""
        import anyio

        if sinks:
            anyio.run(self._emit_all, report, sinks)

    async def _emit_all(self, report: TestRunReport, sinks: list[ReportSink]) -> None:
        import anyio

        # The file sinks write from worker threads, and a run that recorded no result has
        # not loaded the codec yet: two threads importing it at once can each see it half
        # initialised (an ImportError). Load it here, in one thread, first.
        from rampart.codec._internal import section_to_json  # noqa: F401

        async with anyio.create_task_group() as tg:
            for sink in sinks:
                tg.start_soon(self._emit_one, report, sink)

    async def _emit_one(self, report: TestRunReport, sink: ReportSink) -> None:
        try:
            await sink.emit_async(report=report)
        except Exception as exc:  # reported loudly, exit status forced
            self._ledger.sink_failed(f"{sink!r}: {type(exc).__name__}: {exc}")
            return
        path = getattr(sink, "last_path", None)
        if path is not None:
            self._ledger.report_written(str(path))

    def _legacy_sinks_directly(self) -> list[object] | None:
        """``rampart_sinks`` from the loaded conftest files, resolved without pytest's
        fixture machinery (module docstring); None when no conftest defines it."""
        found: list[object] | None = None
        for plugin in self._config.pluginmanager.get_plugins():
            value = getattr(plugin, "rampart_sinks", None)
            if value is None or not inspect.ismodule(plugin):
                continue
            where = one_line(str(getattr(plugin, "__file__", None) or plugin.__name__))
            sinks = self._legacy_value(value, where)
            if sinks is None:
                continue
            _warn_deprecated(self._ledger)
            found = [*(found or []), *sinks]
        return found

    def _legacy_value(self, value: object, where: str) -> list[object] | None:
        if isinstance(value, list | tuple):
            return list(value)
        function = getattr(value, "__wrapped__", None)
        if function is None or not callable(function):
            self._ledger.warn(
                f"rampart_sinks in {where} is neither a list of sinks nor a fixture; ignored"
            )
            return None
        needed = [
            name
            for name, parameter in inspect.signature(function).parameters.items()
            if parameter.default is inspect.Parameter.empty
            and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ]
        if needed:
            self._ledger.warn(
                f"the rampart_sinks fixture in {where} depends on other fixtures "
                f"({', '.join(needed)}), which cannot be resolved here (the xdist "
                "controller); its sinks were skipped - use a parameterless fixture, a "
                "module-level list, or the pytest_rampart_sinks hook"
            )
            return None
        try:
            produced = function()
            if inspect.isgenerator(produced):
                produced = next(produced)  # a yield fixture: its value, no teardown
        except Exception as exc:  # reported loudly, exit status forced
            self._ledger.sink_failed(
                f"the rampart_sinks fixture in {where} raised {type(exc).__name__}: {exc}"
            )
            return None
        return list(produced) if isinstance(produced, list | tuple) else [produced]

    def remove_stale_temporaries(self, sinks: list[ReportSink], *, older_than: float) -> None:
        """Remove temporary files rampart left in the file sinks' directories earlier."""
        from rampart.reporting._internal import remove_stale_temporaries

        for sink in sinks:
            directory = getattr(sink, "output_dir", None)
            if isinstance(directory, Path):
                remove_stale_temporaries(directory, older_than=older_than - STALE_GRACE_SECONDS)


def _warn_deprecated(ledger: RunLedger) -> None:
    try:
        warnings.warn(LEGACY_FIXTURE_WARNING, DeprecationWarning, stacklevel=2)
    except DeprecationWarning:  # an "error" warnings filter: say it, do not crash the end
        ledger.warn(LEGACY_FIXTURE_WARNING)


def report_dir_sinks(directory: Path | None) -> list[ReportSink]:
    """The three built-in sinks writing to ``directory``; none when it is ``None``.

    Made when pytest configures the run, so a path that cannot be a directory (an
    existing file, say) is a usage error before any test runs, naming the option.
    """
    if directory is None:
        return []
    from rampart.reporting import HtmlReportSink, JsonFileReportSink, JsonlTraceSink

    try:
        return [
            JsonFileReportSink(output_dir=directory),
            JsonlTraceSink(output_dir=directory),
            HtmlReportSink(output_dir=directory),
        ]
    except (TypeError, ValueError, OSError) as exc:
        raise pytest.UsageError(
            f"rampart: --rampart-report-dir / rampart_report_dir: {exc}"
        ) from None


# -- what the report says -------------------------------------------------------------


BACKEND_ATTRIBUTE = "rampart_anyio_backend"


def run_info(
    *,
    ledger: RunLedger,
    metadata: dict[str, Any],
    duration_seconds: float,
    exit_status: int | None,
) -> RunInfo:
    """The run section, from the ledger and the report's run ``metadata``.

    ``metadata["interrupted"]`` (set when a run is stopped by Ctrl-C) and
    ``metadata["incomplete"]`` are read from there, so the section and the metadata
    never disagree. An incomplete run ends non-zero, so a 0 is reported as 1.
    """
    from rampart._version import __version__
    from rampart.reporting import RunInfo

    started = datetime.now(UTC) - timedelta(seconds=duration_seconds)
    incomplete = bool(metadata.get("incomplete")) or bool(ledger.incomplete_reasons)
    if incomplete and exit_status == 0:
        exit_status = int(pytest.ExitCode.TESTS_FAILED)
    workers = metadata.get("worker_count", 0)
    dist_mode = metadata.get("dist_mode")
    return RunInfo(
        started_at=started.isoformat(timespec="milliseconds"),
        duration_seconds=duration_seconds,
        exit_status=exit_status,
        interrupted=bool(metadata.get("interrupted")),
        incomplete=incomplete,
        incomplete_reasons=[str(reason) for reason in ledger.incomplete_reasons],
        rampart_version=__version__,
        python_version=platform.python_version(),
        pytest_version=pytest.__version__,
        platform=f"{sys.platform}-{platform.machine()}",
        anyio_backends=sorted(ledger.backends),
        xdist_workers=workers if isinstance(workers, int) and not isinstance(workers, bool) else 0,
        dist_mode=dist_mode if isinstance(dist_mode, str) and dist_mode else None,
    )


def _backend_name(value: object) -> str | None:
    """``"trio"`` from an ``anyio_backend`` value: a name, or a ``(name, options)`` pair."""
    if isinstance(value, tuple | list) and value:
        value = value[0]
    return value if isinstance(value, str) and value else None


def note_backend(item: pytest.Item, report: pytest.TestReport) -> str | None:
    """Put the anyio backend the test ran on (if any) on its call ``report``; that name."""
    funcargs = getattr(item, "funcargs", None) or {}
    backend = _backend_name(funcargs.get("anyio_backend"))
    if backend is not None:
        setattr(report, BACKEND_ATTRIBUTE, backend)
    return backend


def backend_of(report: object) -> str | None:
    """The anyio backend ``note_backend`` put on a (worker's) report, if any."""
    backend = getattr(report, BACKEND_ATTRIBUTE, None)
    return backend if isinstance(backend, str) and backend else None


def entry(recorded: RecordedResult) -> SummaryEntry:
    """``recorded`` as the summary lists it."""
    from rampart.reporting._internal import SummaryEntry

    attribution = recorded.attribution
    return SummaryEntry(
        result=recorded.result,
        nodeid=attribution.group_nodeid,
        name=attribution.group_name,
        shown=attribution.test_name,
        clone=attribution.clone,
    )


def summary_lines(
    results: Sequence[RecordedResult], groups: Sequence[TrialGroupSummary], *, mode: str = "all"
) -> list[str]:
    """The body under the ``RAMPART Safety Summary`` separator (``_terminal.summary_lines``)."""
    from rampart.reporting._internal import summary_lines as render_summary

    return render_summary(
        [entry(recorded) for recorded in results],
        groups,
        mode=mode,
    )


# -- when: session start and end --------------------------------------------------------

#: The incomplete reason of an interrupted run (the report says both).
INTERRUPTED_REASON = (
    "the run was interrupted (Ctrl-C): tests still running did not finish and later tests "
    "did not run"
)


def _group_order(group: TrialGroupSummary) -> tuple[str, str]:
    return (group.nodeid, group.worker or "")


class RunReporter:
    """The report's hooks on the controller or the single process: stale temporaries at
    session start; the report, its sinks, the exit status and the summary at the end.

    A run pytest ends with a usage error (exit status 4) writes no report: nothing
    ran, and an empty report would read as a clean run. An interrupted run writes its
    reports with ``metadata["interrupted"] = True`` (which ``run.interrupted`` reads);
    ``run.exit_status`` says how any run ended.
    """

    def __init__(
        self,
        *,
        config: pytest.Config,
        ledger: RunLedger,
        limits: LimitTracker,
        llm: LLMRunStatistics | None = None,
        directory: Path | None = None,
        journal: RunJournal | None = None,
        plan: ResumePlan | None = None,
        interrupts: InterruptWatch | None = None,
        retention: Retention | None = None,
    ) -> None:
        self._config = config
        self._ledger = ledger
        self.sinks = ReportSinks(config=config, ledger=ledger)
        config.stash[SINKS_KEY] = self.sinks  # the deprecated fixture's bootstrap reads it
        self._limits = limits
        self._llm = llm
        self._summary = choice(config, "rampart_summary", SUMMARY_MODES)
        self._directory = directory
        self._report_dir_sinks = report_dir_sinks(directory) + sarif_sinks(config)
        self._risk_map = risk_map(config)
        self._journal = journal
        self._plan = plan
        self._interrupts = interrupts
        self._retention = retention
        self._not_written: str | None = None
        self._failed: set[str] = set()
        self._usage_errors: list[str] = []
        self._infrastructure = False

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note each failed test, and each usage error an xdist worker found (a worker's
        report arrives here on the controller)."""
        from rampart.pytest_plugin._exit_status import USAGE_ERROR_PROPERTY

        if report.failed:
            self._failed.add(report.nodeid)
            for name, value in report.user_properties:
                if name == USAGE_ERROR_PROPERTY:
                    self._usage_errors.append(str(value))

    def build_report(self, exit_status: int | None = None) -> TestRunReport:
        from rampart.reporting import TestRunReport

        ledger = self._ledger
        metadata: dict[str, Any] = {}
        if self._config.pluginmanager.has_plugin("dsession") or ledger.workers:
            metadata["xdist_active"] = True
            metadata["worker_count"] = ledger.worker_slots
            if ledger.workers_replaced:
                metadata["workers_replaced"] = ledger.workers_replaced
            metadata["dist_mode"] = str(self._config.getoption("dist", "no"))
        limits = merge_limit_statistics(self._limits.statistics() + list(ledger.limit_statistics))
        if limits:
            metadata["limits"] = limits
        llm = {} if self._llm is None else self._llm.metadata()
        if llm:
            metadata["llm"] = llm
        if ledger.incomplete_reasons:
            metadata["incomplete"] = True
            metadata["incomplete_reasons"] = list(ledger.incomplete_reasons)
        metadata.update(self._run_metadata())
        duration = time.monotonic() - ledger.started
        groups = sorted(ledger.groups, key=_group_order)
        return TestRunReport.from_results(
            ledger.report_results(),
            duration_seconds=duration,
            metadata=metadata,
            trial_groups=groups,
            run=run_info(
                ledger=ledger, metadata=metadata, duration_seconds=duration, exit_status=exit_status
            ),
            risk_map=self._risk_map,
        )

    def _run_metadata(self) -> dict[str, Any]:
        """The run id, its journal, what it resumed, and whether Ctrl-C stopped it."""
        ledger = self._ledger
        metadata: dict[str, Any] = {"run_id": ledger.run_id}
        journal = self._journal
        written = None if journal is None else journal.written()
        if written is not None:
            metadata["journal"] = str(written)
        if self._plan is not None:
            from rampart.pytest_plugin._resume import count_by_run

            resumed = count_by_run(list(ledger.results))
            metadata["resumed"] = {"journal": str(self._plan.journal), "runs": resumed}
        if ledger.interrupted:
            metadata["interrupted"] = True
        if journal is not None and journal.recovered:
            metadata["recovered_from_journal"] = journal.recovered
        return metadata

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Remove stale temporary files rampart left in the report and journal directories
        (``rampart.reporting._files.remove_stale_temporaries``)."""
        del session
        older_than = self._ledger.started_wall - STALE_GRACE_SECONDS
        places = {report_directory(self._config, self._directory)}
        settings = None if self._journal is None else self._journal.settings
        if settings is not None and settings.journal is not None:
            places.add(settings.journal.parent)
        places = {place for place in places if place.is_dir()}
        if not places:
            return  # nothing to clean, and the reporting layer stays unloaded
        from rampart.reporting._internal import remove_stale_temporaries

        for place in places:
            remove_stale_temporaries(place, older_than=older_than)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        status = int(session.exitstatus)
        if status == pytest.ExitCode.USAGE_ERROR:
            self._not_written = "the run ended with a usage error (exit status 4)"
            return
        if session.config.option.collectonly:
            return  # --collect-only ran nothing: there is no run to report
        if self._interrupts is not None and self._interrupts.cut_short:
            # The test loop never returned: a Ctrl-C cut it short even if pytest, hit by a
            # second one while handling the first, left the exit status at 0 (see
            # ``_interrupts``). Never a clean report.
            self._ledger.mark_interrupted()
        if self._ledger.interrupted:
            self._ledger.mark_incomplete(INTERRUPTED_REASON)
            if status in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                status = int(pytest.ExitCode.INTERRUPTED)
                session.exitstatus = pytest.ExitCode.INTERRUPTED
        stopped = self._ledger.interrupted or self._ledger.incomplete_reasons
        if self._usage_errors and status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            # Bad markers an xdist worker found: a usage error, as in a single process
            # (where collection stops). The tests that did run are still reported.
            status = int(pytest.ExitCode.USAGE_ERROR)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        elif not stopped and not self._ledger.failed:
            from rampart.pytest_plugin._exit_status import exit_status

            decided = exit_status(status, self._failed, self._ledger.results)
            if decided != status:
                self._infrastructure = True
                status = decided
                session.exitstatus = decided
        if stopped and self._journal is not None and self._ledger.workers:
            self._journal.recover_from_journal()
        if self._ledger.interrupted:
            self._ledger.record_cut_short_groups()
        try:
            sinks = self.sinks.resolve() + self._report_dir_sinks
            if sinks:  # no sink, no report: a run that writes none never loads reporting
                self.sinks.remove_stale_temporaries(sinks, older_than=self._ledger.started_wall)
                self.sinks.emit(self.build_report(status), sinks)
        except KeyboardInterrupt:
            # Ctrl-C while the reports are written (or a sink raised it): the run is
            # interrupted; what was written is listed, the journal has the rest.
            self._ledger.mark_interrupted()
            self._ledger.sink_failed("interrupted while the reports were being written")
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            return
        if self._ledger.failed and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if self._retention is not None:
            settings = None if self._journal is None else self._journal.settings
            self._retention.apply(
                report_dir=self._directory,
                journal=None if settings is None else settings.journal,
                warn=self._ledger.warn,
            )

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        tr, ledger = terminalreporter, self._ledger
        if ledger.interrupted:
            tr.write_sep("=", "RAMPART: INTERRUPTED", red=True, bold=True)
            tr.write_line(
                f"The run was interrupted: {len(ledger.results)} results that finished are "
                "kept and reported (metadata interrupted = true); tests still running did "
                "not finish.",
                red=True,
            )
            written = None if self._journal is None else self._journal.written()
            if written is not None:
                where = redact(one_line(str(written)))
                tr.write_line(f"Resume it: pytest ... --rampart-resume={where}")
        if self._not_written is not None:
            tr.write_line(f"RAMPART: no report written: {redact(self._not_written)}", yellow=True)
        # The interrupt is said above; the section is for the other reasons.
        reasons = [reason for reason in ledger.incomplete_reasons if reason != INTERRUPTED_REASON]
        if reasons:
            tr.write_sep("=", "RAMPART: INCOMPLETE RUN", red=True, bold=True)
            tr.write_line("Results may be partial; the report does not reflect every test.")
            for reason in reasons:
                tr.write_line(f"  - {redact(one_line(reason))}")
        if ledger.sink_failures:
            tr.write_sep("=", "RAMPART: REPORT SINK FAILED", red=True, bold=True)
            tr.write_line("A report was not written; the exit status is non-zero.")
            for failure in ledger.sink_failures:
                tr.write_line(f"  - {redact(one_line(failure))}")
        if self._usage_errors:
            tr.write_sep("=", "RAMPART: USAGE ERRORS", red=True, bold=True)
            tr.write_line(
                f"{len(self._usage_errors)} test(s) have a bad rampart marker; exit status 4:",
                red=True,
            )
            for message in sorted(set(self._usage_errors)):
                tr.write_line(f"  - {redact(one_line(message))}")
        reachability = sys.modules.get("rampart.adapters._reachability")  # loaded if used
        for origin, count in [] if reachability is None else reachability.unreachable():
            tr.write_line(
                f"RAMPART: {redact(one_line(origin))} is unreachable: {count} connections "
                "were refused and it never answered; later requests to it failed at once "
                "(ERROR, not retried).",
                red=True,
            )
        if self._infrastructure:
            from rampart.pytest_plugin._exit_status import INFRASTRUCTURE_FAILURE

            tr.write_sep("=", "RAMPART: INFRASTRUCTURE FAILURE", red=True, bold=True)
            tr.write_line(
                f"Exit status {INFRASTRUCTURE_FAILURE}: every failed test failed with ERROR "
                "results (endpoint, judge or network failures) and no result is UNSAFE: "
                "this run found nothing; fix the infrastructure and run it again.",
                red=True,
            )
        for warning in ledger.warnings:
            tr.write_line(f"RAMPART WARNING: {redact(one_line(warning))}", yellow=True)
        results = ledger.results
        if not results and not ledger.groups:
            return
        tr.write_sep("=", "RAMPART Safety Summary")
        for line in summary_lines(results, ledger.groups, mode=self._summary):
            tr.write_line(line)
        if self._plan is not None:
            from rampart.pytest_plugin._resume import count_by_run

            resumed = count_by_run(list(results))
            if resumed:
                runs = ", ".join(f"{count} from run {run[:12]}" for run, count in resumed.items())
                where = redact(one_line(str(self._plan.journal)))
                tr.write_line(f"Resumed from {where}: {runs} (not run again)")
        for path in ledger.written:
            tr.write_line(f"RAMPART report written to {redact(one_line(path))}")
