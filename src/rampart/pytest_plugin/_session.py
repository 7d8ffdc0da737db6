"""The plugin's session: its parts wired at configure time, the report at session end.

``start`` makes one run ledger (``config.stash[LEDGER_KEY]``) and registers the parts:

- ``ItemHooks`` -- markers, trial groups and result collection, per item, with the
  anyio backend note, live progress around the call and, with ``--junitxml``, the
  JUnit properties (the per-item hooks are implemented here alone);
- the fixtures module (``rampart_trial``, the default ``anyio_backend``, the
  deprecated ``rampart_sinks`` bootstrap), which also hands plain ``async def`` tests
  to anyio;
- the LLM layer's run statistics and response-cache option (``_llm_cache``);
- ``RunJournal`` and ``InterruptWatch`` (``_journal``, ``_interrupts``): the run
  journal every finished unit is appended to, ``--rampart-resume``, and a clean end
  on Ctrl-C;
- on an xdist worker, ``XdistWorker``: results ride on test reports to the controller;
- otherwise ``RunReporter`` (the report, the sinks, the exit status and the terminal
  summary) with items delivering straight to the ledger, and ``XdistController``
  whenever xdist may distribute.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

# The fixtures module is registered as a plugin. Imported by its full name, not as
# ``from rampart.pytest_plugin import _fixtures``: pytester's in-process runs drop
# plugin modules from sys.modules afterwards, and the from-form would then hand back
# the first run's copy (with that run's stash keys) from the package attribute.
import rampart.pytest_plugin._fixtures
from rampart._redact import redact
from rampart._text import one_line
from rampart.pytest_plugin._interrupts import InterruptWatch
from rampart.pytest_plugin._items import ItemHooks, ItemOutlet
from rampart.pytest_plugin._journal import (
    RUN_INPUT_KEY,
    JournalSettings,
    JournalWriter,
    RunJournal,
    default_gitignore,
)
from rampart.pytest_plugin._ledger import LEDGER_KEY, FinishedUnit, GroupRecord, RunLedger
from rampart.pytest_plugin._limits import LimitTracker, merge_limit_statistics
from rampart.pytest_plugin._llm_cache import configure as configure_llm
from rampart.pytest_plugin._llm_cache import llm_metadata
from rampart.pytest_plugin._llm_cache import unconfigure as unconfigure_llm
from rampart.pytest_plugin._options import Options
from rampart.pytest_plugin._progress import ProgressNodes, ProgressSession, worker_progress
from rampart.pytest_plugin._report_data import group_summary, run_info, summary_lines
from rampart.pytest_plugin._sinks import SINKS_KEY, ReportSinks, report_dir_sinks

if TYPE_CHECKING:
    from collections.abc import Callable

    from rampart.pytest_plugin._items import ItemState
    from rampart.pytest_plugin._resume import ResumePlan
    from rampart.reporting import TestRunReport

__all__ = ["LedgerOutlet", "RunReporter", "start", "stop"]

_REGISTERED = pytest.StashKey[list[str]]()

#: The incomplete reason of an interrupted run (the report says both).
INTERRUPTED_REASON = (
    "the run was interrupted (Ctrl-C): tests still running did not finish and later tests "
    "did not run"
)


def start(config: pytest.Config) -> None:
    """Make the run's ledger and register the plugin's parts (see the module docstring)."""
    options = Options.from_config(config)
    is_worker = hasattr(config, "workerinput")
    ledger = RunLedger()
    if is_worker:
        settings = JournalSettings.from_workerinput(
            config.workerinput.get(RUN_INPUT_KEY),  # type: ignore[attr-defined]
            run_id=ledger.run_id,
        )
        ledger.run_id = settings.run_id
    else:
        settings = JournalSettings.resolve(
            config, run_id=ledger.run_id, report_dir=options.report_dir
        )
    config.stash[LEDGER_KEY] = ledger
    writer = None
    if settings.journal is not None:
        writer = JournalWriter(
            settings.journal,
            run_id=settings.run_id,
            worker=_worker_id(config) if is_worker else None,
            on_error=ledger.warn,
            gitignore=default_gitignore(config, settings.journal),
        )
    plan = None
    if settings.resume is not None:
        from rampart.pytest_plugin._resume import ResumePlan

        plan = ResumePlan(settings.resume, current_run=settings.run_id)
        if not is_worker:  # every process reads it; one says what it could not use
            for message in plan.problems:
                ledger.warn(message)
    journal = RunJournal(
        config=config,
        ledger=ledger,
        settings=settings,
        writer=writer,
        is_worker=is_worker,
        report_dir=options.report_dir,
    )
    limits = LimitTracker()
    interrupts = InterruptWatch(ledger=ledger, writer=writer)
    parts: dict[str, object] = {
        "rampart-journal": journal,
        "rampart-interrupts": interrupts,
    }
    outlet: ItemOutlet
    if is_worker:
        from rampart.pytest_plugin._xdist import XdistWorker

        outlet = XdistWorker(
            config=config, max_bytes=options.max_bytes, limits=limits, journal=writer
        )
        parts["rampart-xdist-worker"] = outlet
        progress = worker_progress(config)
    else:
        ledger.subscribe(journal.journal_unit)
        sinks = ReportSinks(config=config, ledger=ledger)
        config.stash[SINKS_KEY] = sinks
        outlet = LedgerOutlet(ledger)
        parts["rampart-report"] = RunReporter(
            config=config,
            ledger=ledger,
            sinks=sinks,
            limits=limits,
            options=options,
            journal=journal,
            plan=plan,
            interrupts=interrupts,
        )
        # Not "dsession": xdist registers it in its own pytest_configure, which may run
        # after this one; xdist's hook specs are there as soon as xdist is loaded.
        if config.pluginmanager.has_plugin("xdist"):
            from rampart.pytest_plugin._xdist import XdistController

            parts["rampart-xdist"] = XdistController(ledger, run_input=settings.to_workerinput())
        progress_session = ProgressSession(
            config, option=options.progress, interval=options.progress_interval
        )
        parts["rampart-progress-session"] = progress_session
        progress = progress_session.tracking
        if config.pluginmanager.has_plugin("xdist"):
            parts["rampart-progress-nodes"] = ProgressNodes(progress_session)
    properties: Callable[[ItemState], list[tuple[str, str]]] | None = None
    if config.getoption("xmlpath", None):  # --junitxml: the properties are loaded for it
        from rampart.pytest_plugin._junit import properties as junit_properties

        properties = junit_properties

    parts["rampart-items"] = ItemHooks(
        options=options,
        outlet=outlet,
        limits=limits,
        is_worker=is_worker,
        resume=plan,
        hashing=writer is not None,
        properties=properties,
        progress=progress,
    )
    parts["rampart-fixtures"] = rampart.pytest_plugin._fixtures
    for name, part in parts.items():
        config.pluginmanager.register(part, name)
    config.stash[_REGISTERED] = list(parts)
    configure_llm(config)


def stop(config: pytest.Config) -> None:
    """Unregister what ``start`` registered."""
    unconfigure_llm(config)
    ledger = config.stash.get(LEDGER_KEY, None)
    if ledger is not None:
        ledger.close()
    for name in config.stash.get(_REGISTERED, []):
        if config.pluginmanager.has_plugin(name):
            config.pluginmanager.unregister(name=name)


def _worker_id(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", {})
    return str(workerinput.get("workerid", "?"))


class LedgerOutlet:
    """In the reporting process, an item's results go straight onto the ledger.

    Each is checked against the canonical codec first, as the xdist transport does, so
    a run reports the same thing with and without xdist.
    """

    def __init__(self, ledger: RunLedger) -> None:
        self._ledger = ledger

    def record(self, item: pytest.Item, unit: FinishedUnit) -> None:
        del item
        self._ledger.record_unit(unit)

    def deliver(
        self, item: pytest.Item, report: pytest.TestReport | None, group: GroupRecord | None
    ) -> None:
        del item, report
        if group is not None:
            self._ledger.record_group(group)

    def warn(self, message: str) -> None:
        self._ledger.warn(message)

    def backend_seen(self, backend: str) -> None:
        self._ledger.backend_seen(backend)


def _group_order(group: GroupRecord) -> tuple[str, str]:
    return (group.nodeid, group.worker or "")


class RunReporter:
    """Session end on the controller or the single process: report, sinks, summary.

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
        sinks: ReportSinks,
        limits: LimitTracker,
        options: Options,
        journal: RunJournal | None = None,
        plan: ResumePlan | None = None,
        interrupts: InterruptWatch | None = None,
    ) -> None:
        self._config = config
        self._ledger = ledger
        self._sinks = sinks
        self._limits = limits
        self._options = options
        self._report_dir_sinks = report_dir_sinks(options.report_dir)
        self._journal = journal
        self._plan = plan
        self._interrupts = interrupts
        self._not_written: str | None = None

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
        llm = llm_metadata(self._config)
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
            trial_groups=[group_summary(group) for group in groups],
            run=run_info(
                ledger=ledger, metadata=metadata, duration_seconds=duration, exit_status=exit_status
            ),
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

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        status = int(session.exitstatus)
        if status == pytest.ExitCode.USAGE_ERROR:
            self._not_written = "the run ended with a usage error (exit status 4)"
            return
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
        if stopped and self._journal is not None and self._ledger.workers:
            self._journal.recover_from_journal()
        try:
            sinks = self._sinks.resolve() + self._report_dir_sinks
            if sinks:  # no sink, no report: a run that writes none never loads reporting
                self._sinks.remove_stale_temporaries(sinks, older_than=self._ledger.started_wall)
                self._sinks.emit(self.build_report(status), sinks)
        except KeyboardInterrupt:
            # Ctrl-C while the reports are written (or a sink raised it): the run is
            # interrupted; what was written is listed, the journal has the rest.
            self._ledger.mark_interrupted()
            self._ledger.sink_failed("interrupted while the reports were being written")
            session.exitstatus = pytest.ExitCode.INTERRUPTED
            return
        if self._ledger.failed and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

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
        for warning in ledger.warnings:
            tr.write_line(f"RAMPART WARNING: {redact(one_line(warning))}", yellow=True)
        results = ledger.results
        if not results and not ledger.groups:
            return
        tr.write_sep("=", "RAMPART Safety Summary")
        for line in summary_lines(results, ledger.groups, mode=self._options.summary):
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
