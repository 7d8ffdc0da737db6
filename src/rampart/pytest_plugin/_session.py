"""The plugin's session: its parts wired at configure time, closed at unconfigure.

Each feature module declares its own options (the entry point calls every
``add_options``), holds its plugin object and implements its hooks, as pytest's own
junitxml does; ``start`` makes one run ledger (``config.stash[LEDGER_KEY]``) and
registers the parts around it:

- ``ItemHooks`` (``_items``) -- markers (``_markers``), trial groups and result
  collection, per item, with the anyio backend note, live progress around the call and,
  with ``--junitxml``, the JUnit properties (the per-item hooks are implemented here
  alone);
- the fixtures module (``rampart_trial``, the default ``anyio_backend``, the
  deprecated ``rampart_sinks`` bootstrap), which also hands plain ``async def`` tests
  to anyio;
- ``InterruptWatch`` (``_interrupts``): a clean end on Ctrl-C;
- on an xdist worker, ``XdistWorker``: results ride on test reports to the controller;
- otherwise ``RunReporter`` (``_report``: the report, the sinks, the exit status and
  the terminal summary) with items delivering straight to the ledger,
  ``ProgressSession`` (``_progress``) and, whenever xdist may distribute,
  ``XdistController``.

The run journal (``_journal``), resume (``_resume``) and the library layers' statistics
(``_layers``) implement no hook: they are used by the parts above. ``stop`` (the entry
point's ``pytest_unconfigure``, the plugin's one) closes every part in reverse order
of ``start`` -- docs/architecture.md ("The pytest plugin's hooks") lists which object
implements which hook, and why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

# The fixtures module is registered as a plugin. Imported by its full name, not as
# ``from rampart.pytest_plugin import _fixtures``: pytester's in-process runs drop
# plugin modules from sys.modules afterwards, and the from-form would then hand back
# the first run's copy (with that run's stash keys) from the package attribute.
import rampart.pytest_plugin._fixtures
from rampart import _runs
from rampart.pytest_plugin._interrupts import InterruptWatch
from rampart.pytest_plugin._items import ItemHooks, ItemOutlet
from rampart.pytest_plugin._journal import (
    RUN_INPUT_KEY,
    JournalSettings,
    JournalWriter,
    RunJournal,
    default_gitignore,
)
from rampart.pytest_plugin._layers import LimitTracker, LLMRunStatistics, cache_directory
from rampart.pytest_plugin._ledger import LEDGER_KEY, FinishedUnit, RunLedger
from rampart.pytest_plugin._markers import MarkerOptions
from rampart.pytest_plugin._progress import ProgressSession, worker_progress
from rampart.pytest_plugin._report import RunReporter, report_dir
from rampart.pytest_plugin._retention import Retention
from rampart.pytest_plugin._xdist import XdistController, XdistWorker, max_bytes

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from rampart.pytest_plugin._items import ItemState
    from rampart.reporting._run_data import TrialGroupSummary

__all__ = ["LedgerOutlet", "start", "stop"]

_REGISTERED = pytest.StashKey[list[str]]()
_CLOSE = pytest.StashKey[list["Callable[[], None]"]]()


def start(config: pytest.Config) -> None:
    """Make the run's ledger and register the plugin's parts (see the module docstring)."""
    markers = MarkerOptions.from_config(config)
    largest = max_bytes(config)
    directory = report_dir(config)
    is_worker = hasattr(config, "workerinput")
    ledger = RunLedger()
    if is_worker:
        settings = JournalSettings.from_workerinput(
            config.workerinput.get(RUN_INPUT_KEY),  # type: ignore[attr-defined]
            run_id=ledger.run_id,
        )
        ledger.run_id = settings.run_id
    else:
        settings = JournalSettings.resolve(config, run_id=ledger.run_id, report_dir=directory)
    config.stash[LEDGER_KEY] = ledger
    # Closed by ``stop`` in reverse order: the ledger, then the run, last. Stashed now,
    # so a usage error later in ``start`` still closes what was opened (pytest
    # unconfigures after it). The session is a run: its limiters are one per name
    # (``rampart.limits``), and an in-process pytester run gets its own.
    closing: list[Callable[[], None]] = [_runs.open_run(), ledger.close]
    config.stash[_CLOSE] = closing
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
    journal = RunJournal(ledger=ledger, settings=settings, writer=writer, is_worker=is_worker)
    limits = LimitTracker()
    llm = LLMRunStatistics(cache=cache_directory(config))
    interrupts = InterruptWatch(ledger=ledger, writer=writer)
    closing += [llm.close, journal.close, interrupts.close]
    parts: dict[str, object] = {"rampart-interrupts": interrupts}
    outlet: ItemOutlet
    if is_worker:
        outlet = XdistWorker(
            config=config, max_bytes=largest, limits=limits, llm=llm, journal=writer
        )
        parts["rampart-xdist-worker"] = outlet
        progress = worker_progress(config)
    else:
        ledger.subscribe(journal.journal_unit)
        outlet = LedgerOutlet(ledger)
        parts["rampart-report"] = RunReporter(
            config=config,
            ledger=ledger,
            limits=limits,
            llm=llm,
            directory=directory,
            journal=journal,
            plan=plan,
            interrupts=interrupts,
            retention=Retention.from_config(config),
        )
        session = ProgressSession(config)
        parts["rampart-progress"] = session
        closing.append(session.close)
        progress = session.tracking
        # Not "dsession": xdist registers it in its own pytest_configure, which may run
        # after this one; xdist's hook specs are there as soon as xdist is loaded.
        if config.pluginmanager.has_plugin("xdist"):
            controller = XdistController(
                ledger, run_input=settings.to_workerinput(), llm=llm, progress=session
            )
            parts["rampart-xdist"] = controller
            closing.append(controller.close)
    properties: Callable[[ItemState], list[tuple[str, str]]] | None = None
    if config.getoption("xmlpath", None):  # --junitxml: the properties are loaded for it
        from rampart.pytest_plugin._junit import properties as junit_properties

        properties = junit_properties

    parts["rampart-items"] = ItemHooks(
        options=markers,
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
    llm.configure()


def stop(config: pytest.Config) -> None:
    """Close what ``start`` opened, in reverse order, and unregister its parts."""
    closing: list[Callable[[], None]] = config.stash.get(_CLOSE, [])
    for close in reversed(closing):
        close()
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
        self,
        item: pytest.Item,
        report: pytest.TestReport | None,
        groups: Sequence[TrialGroupSummary],
    ) -> None:
        del item, report
        for group in groups:
            self._ledger.record_group(group)

    def warn(self, message: str) -> None:
        self._ledger.warn(message)

    def backend_seen(self, backend: str) -> None:
        self._ledger.backend_seen(backend)
