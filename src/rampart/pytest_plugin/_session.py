"""The plugin's session: its parts wired at configure time, closed at unconfigure.

Each feature module declares its own options (the entry point calls every
``add_options``), holds its plugin object and implements its hooks, as pytest's own
junitxml does; ``start`` checks the options and opens the run, and ``_Wiring.engage``
makes one run ledger (``config.stash[LEDGER_KEY]``) and registers the parts around it
-- at once when the run names a rampart option, is an xdist worker or controller, or
has rampart loaded already; otherwise ``Waiting`` does it when the run first uses
rampart, so a suite that never does loads none of the parts' modules:

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
of opening -- docs/architecture.md ("The pytest plugin's hooks") lists which object
implements which hook, and why. A run whose parts were wired exits without collecting
the cycles of the heap it leaves (``_quick_exit``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import attrs
import pytest

# The fixtures module is registered as a plugin. Imported by its full name, not as
# ``from rampart.pytest_plugin import _fixtures``: pytester's in-process runs drop
# plugin modules from sys.modules afterwards, and the from-form would then hand back
# the first run's copy (with that run's stash keys) from the package attribute.
import rampart.pytest_plugin._fixtures
from rampart import _runs
from rampart.pytest_plugin._interrupts import InterruptWatch
from rampart.pytest_plugin._journal import (
    RUN_INPUT_KEY,
    JournalSettings,
    JournalWriter,
    RunJournal,
    default_gitignore,
)
from rampart.pytest_plugin._layers import LimitTracker, LLMRunStatistics, cache_directory
from rampart.pytest_plugin._markers import MarkerOptions
from rampart.pytest_plugin._progress import ProgressSession, worker_progress
from rampart.pytest_plugin._quick_exit import register as register_quick_exit
from rampart.pytest_plugin._report import RunReporter, report_dir
from rampart.pytest_plugin._retention import Retention
from rampart.pytest_plugin._worker_stop import announce
from rampart.pytest_plugin._xdist import XdistController, XdistWorker, max_bytes

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence

    from rampart.pytest_plugin._items import ItemHooks, ItemOutlet, ItemState  # noqa: TC004
    from rampart.pytest_plugin._ledger import FinishedUnit, RunLedger
    from rampart.reporting._internal import TrialGroupSummary

__all__ = ["LedgerOutlet", "start", "stop"]

_REGISTERED = pytest.StashKey[list[str]]()
_CLOSE = pytest.StashKey[list["Callable[[], None]"]]()


def start(config: pytest.Config) -> None:
    """Check the options, open the run, and wire the plugin's parts now or, for a run
    that may never use rampart, when it first does (``Waiting``; see the module
    docstring)."""
    markers = MarkerOptions.from_config(config)
    # Closed by ``stop`` in reverse order: the ledger, then the run, last. Stashed now,
    # so a usage error later in ``start`` still closes what was opened (pytest
    # unconfigures after it). The session is a run: its limiters are one per name
    # (``rampart.limits``), and an in-process pytester run gets its own.
    config.stash[_CLOSE] = [_runs.open_run()]
    config.stash[_REGISTERED] = []
    if _engages_at_once(config):
        _Wiring(config, markers).engage()
        return
    waiting = Waiting(config, markers)
    _register(config, {"rampart-waiting": waiting})
    _register(config, {"rampart-interrupts": waiting.interrupts})
    _register(config, {"rampart-fixtures": rampart.pytest_plugin._fixtures})


def _register(config: pytest.Config, parts: dict[str, object]) -> None:
    for name, part in parts.items():
        config.pluginmanager.register(part, name)
        config.stash[_REGISTERED].append(name)


def _engages_at_once(config: pytest.Config) -> bool:
    """A run that names any rampart option (a report, a journal, resume, trials ...),
    an xdist worker or controller, or a suite that tests plugins with pytester wires
    every part at configure; so does one whose conftest already imported rampart."""
    if hasattr(config, "workerinput") or str(getattr(config.option, "dist", "no")) != "no":
        return True
    if config.pluginmanager.has_plugin("pytester"):
        # pytester's in-process runs drop the modules imported during them: rampart's
        # model must be loaded by this session, not by the first inner run, or the
        # package's cached names would outlive the modules they came from.
        return True
    if any(
        name.startswith("rampart_") and value is not None
        for name, value in vars(config.option).items()
    ):
        return True
    # pytest lists the declared ini options nowhere public; each is read as any is.
    declared = getattr(getattr(config, "_parser", None), "_inidict", {})
    if any(
        name.startswith("rampart_") and config.getini(name) not in ("", None) for name in declared
    ):
        return True
    return uses_rampart()


#: What the plugin loads before a run uses rampart, besides its own modules
#: (``rampart.pytest_plugin.*``): light helpers that record nothing.
_LIGHT = frozenset(
    {
        "rampart",
        "rampart._checks",
        "rampart._lazy",
        "rampart._pacing",
        "rampart._pacing._aimd",
        "rampart._pacing._concurrency",
        "rampart._pacing._slowdown",
        "rampart._redact",
        "rampart._runs",
        "rampart._text",
        "rampart._version",
        "rampart.core",
        "rampart.core.errors",
    }
)


def uses_rampart() -> bool:
    """Whether anything of rampart beyond the plugin and its light helpers is loaded: a
    test, a conftest or another plugin imported it, so results may be recorded."""
    return any(
        name.startswith("rampart.")
        and not name.startswith("rampart.pytest_plugin")
        and name not in _LIGHT
        for name in list(sys.modules)
    )


class Waiting:
    """The plugin in a run that has not used rampart yet: it wires the parts
    (``_Wiring.engage``) as soon as the run does, and never otherwise.

    It looks when collection ends (a ``trial`` or ``harm`` marker, a rampart fixture, a
    sinks hook, or rampart imported by a test module or conftest) and after each test
    (rampart imported inside a test: what that test recorded before the parts were
    there is lost, and a warning says so). Until then it stands in for the ledger of
    the interrupt watch, so a Ctrl-C wires the parts and is reported as before.
    """

    def __init__(self, config: pytest.Config, markers: MarkerOptions) -> None:
        self._wiring = _Wiring(config, markers)
        self._config = config
        self._session: pytest.Session | None = None
        self._collected = False
        self._modules = len(sys.modules)
        self.interrupts = InterruptWatch(ledger=self, writer=None)

    @property
    def engaged(self) -> bool:
        return self._wiring.ledger is not None

    def engage(self) -> RunLedger:
        """Wire every part now, catching up on the hooks they missed."""
        ledger = self._wiring.ledger
        if ledger is not None:
            return ledger
        parts = self._wiring.engage(interrupts=self.interrupts)
        session = self._session
        if session is not None:
            parts.session_started(session)
            if self._collected:
                parts.items.pytest_collection_modifyitems(list(session.items))
        assert self._wiring.ledger is not None
        return self._wiring.ledger

    # -- the interrupt watch's ledger, until the parts are wired ------------------------

    def mark_interrupted(self) -> None:
        self.engage().mark_interrupted()

    def mark_incomplete(self, reason: str) -> None:
        self.engage().mark_incomplete(reason)

    # -- the hooks that look ----------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self._session = session

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self._collected = True
        if self.engaged:
            return
        if (
            any(_asks_for_rampart(item) for item in items)
            or self._config.hook.pytest_rampart_sinks.get_hookimpls()
            or _defines_fixture(self._session, "rampart_sinks")
            or uses_rampart()
        ):
            self.engage()
        self._modules = len(sys.modules)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        engaged = self.engaged
        try:
            return (yield)
        finally:
            if not engaged and len(sys.modules) != self._modules:
                self._modules = len(sys.modules)
                if uses_rampart():
                    ledger = self.engage()
                    ledger.warn(
                        f"rampart was first imported during {item.nodeid}, not when its "
                        "module was collected: the plugin started after that test, so "
                        "anything it recorded is not in the report (import rampart at the "
                        "top of the test module or in conftest.py)"
                    )


_RAMPART_MARKERS = ("trial", "harm")
_RAMPART_FIXTURES = ("rampart_trial", "trial_config", "rampart_sinks")


def _asks_for_rampart(item: pytest.Item) -> bool:
    """A rampart marker or fixture, or a test body that imports rampart itself."""
    if any(item.get_closest_marker(name) is not None for name in _RAMPART_MARKERS):
        return True
    names = getattr(item, "fixturenames", ())
    if any(name in names for name in _RAMPART_FIXTURES):
        return True
    code = getattr(getattr(item, "obj", None), "__code__", None)
    imported = getattr(code, "co_names", ())
    return any(name == "rampart" or name.startswith("rampart.") for name in imported)


def _defines_fixture(session: pytest.Session | None, name: str) -> bool:
    """Whether any conftest or plugin defines the fixture ``name``."""
    manager = getattr(session, "_fixturemanager", None)
    return name in getattr(manager, "_arg2fixturedefs", {})


@attrs.define(kw_only=True)
class _Parts:
    """What ``_Wiring.engage`` registered, for the hooks a late wiring replays."""

    items: ItemHooks
    reporter: RunReporter | None = None
    progress: ProgressSession | None = None

    def session_started(self, session: pytest.Session) -> None:
        if self.reporter is not None:
            self.reporter.pytest_sessionstart(session)
        if self.progress is not None:
            self.progress.pytest_sessionstart(session)


class _Wiring:
    """Makes the run's ledger and registers the parts (see the module docstring)."""

    def __init__(self, config: pytest.Config, markers: MarkerOptions) -> None:
        self._config = config
        self._markers = markers
        self.ledger: RunLedger | None = None

    def engage(self, interrupts: InterruptWatch | None = None) -> _Parts:
        from rampart.pytest_plugin._items import ItemHooks
        from rampart.pytest_plugin._ledger import LEDGER_KEY, RunLedger

        config, markers = self._config, self._markers
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
        self.ledger = ledger
        closing = config.stash[_CLOSE]
        closing.append(ledger.close)
        register_quick_exit()  # the process's exit leaves the heap's cycles to the OS
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
        parts: dict[str, object] = {}
        if interrupts is None:
            interrupts = InterruptWatch(ledger=ledger, writer=writer)
            parts["rampart-interrupts"] = interrupts
        else:
            interrupts.writer = writer
        closing += [llm.close, journal.close]
        # A second Ctrl-C must still exit at once while pytest's own unconfigure runs
        # (its unraisable-exception plugin collects garbage there, after rampart's
        # unconfigure): SIGINT gets its handler back in the config's cleanup, which runs
        # after every plugin's unconfigure.
        config.add_cleanup(interrupts.close)
        reporter, progress_session = None, None
        outlet: ItemOutlet
        if is_worker:
            outlet = XdistWorker(
                config=config, max_bytes=largest, limits=limits, llm=llm, journal=writer
            )
            parts["rampart-xdist-worker"] = outlet
            progress = worker_progress(config)
            told = announce(config.workerinput)  # type: ignore[attr-defined]
            if told is not None:
                interrupts.on_interrupt.append(told)
        else:
            ledger.subscribe(journal.journal_unit)
            outlet = LedgerOutlet(ledger)
            reporter = RunReporter(
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
            parts["rampart-report"] = reporter
            progress_session = ProgressSession(config)
            parts["rampart-progress"] = progress_session
            closing.append(progress_session.close)
            progress = progress_session.tracking
            # Not "dsession": xdist registers it in its own pytest_configure, which may
            # run after this one; xdist's hook specs are there as soon as xdist is loaded.
            if config.pluginmanager.has_plugin("xdist"):
                controller = XdistController(
                    ledger,
                    run_input=settings.to_workerinput(),
                    llm=llm,
                    progress=progress_session,
                )
                parts["rampart-xdist"] = controller
                closing.append(controller.close)
                interrupts.on_interrupt.append(controller.stop_workers)
        properties: Callable[[ItemState], list[tuple[str, str]]] | None = None
        if config.getoption("xmlpath", None):  # --junitxml: the properties are loaded for it
            from rampart.pytest_plugin._junit import properties as junit_properties

            properties = junit_properties

        items = ItemHooks(
            options=markers,
            outlet=outlet,
            limits=limits,
            is_worker=is_worker,
            resume=plan,
            hashing=writer is not None,
            properties=properties,
            progress=progress,
        )
        parts["rampart-items"] = items
        if not config.pluginmanager.has_plugin("rampart-fixtures"):
            parts["rampart-fixtures"] = rampart.pytest_plugin._fixtures
        _register(config, parts)
        llm.configure()
        return _Parts(items=items, reporter=reporter, progress=progress_session)


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
