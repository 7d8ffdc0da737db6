"""The plugin's session object: runs items, gathers results, prints and reports them.

One ``RampartPlugin`` is registered per pytest run (stored in ``config.stash``). It
wraps each test function for collection and trials, tags finished results with the
test they came from, and at session end builds one ``TestRunReport``, emits it to the
sinks and prints the safety summary. Under xdist, workers stream results on their
test reports and the controller does the reporting (``_xdist``).
"""

from __future__ import annotations

import inspect
import re
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from rampart._text import one_line
from rampart.pytest_plugin._markers import (
    DEFAULT_CONCURRENCY,
    TrialSpec,
    harm_category_of,
    trial_spec_of,
)

if TYPE_CHECKING:
    from collections.abc import Generator

    from rampart.core.result import Result
    from rampart.pytest_plugin._collect import ResultCollector
    from rampart.pytest_plugin._runner import ItemRun
    from rampart.pytest_plugin._summary import GroupLine
    from rampart.reporting import ReportSink, TestRunReport

__all__ = ["RampartPlugin"]

_SPEC = pytest.StashKey[TrialSpec | None]()
_HARM = pytest.StashKey[str | None]()
_RUN = pytest.StashKey["ItemRun"]()
_MISUSE = pytest.StashKey[str]()
_FIXTURES = pytest.StashKey["ResultCollector"]()


class RampartPlugin:
    """Session state and hooks; see the module docstring."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.monotonic()
        self.is_worker = hasattr(config, "workerinput")
        self.results: list[Result] = []
        self.groups: list[GroupLine] = []
        self.incomplete_reasons: list[str] = []
        self.sink_failures: list[str] = []
        self.warnings: list[str] = []
        self.written: list[str] = []
        self.streamed = 0
        self.received: Counter[str] = Counter()
        self.workers_seen: set[str] = set()
        self.legacy_sinks: list[object] | None = None
        self.report: TestRunReport | None = None
        self.trials_override: int | None = _option_int(config, "rampart_trials", minimum=1)
        self.default_concurrency: int = (
            _option_int(config, "rampart_concurrency", minimum=1) or DEFAULT_CONCURRENCY
        )
        self.max_bytes: int = _max_bytes(config)
        from rampart.pytest_plugin._limits import LimitTracker, export_shared_directory

        self.limits = LimitTracker()
        self.worker_limit_statistics: list[dict[str, Any]] = []
        if self.is_worker:
            export_shared_directory(config.workerinput)  # type: ignore[attr-defined]

    # -- async tests without configuration -------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(
        self, collector: pytest.Module | pytest.Class, name: str, obj: object
    ) -> None:
        # Hand plain ``async def`` tests to anyio's plugin, unless pytest-asyncio owns them.
        if not (collector.istestfunction(obj, name) and inspect.iscoroutinefunction(obj)):
            return
        if hasattr(obj, "hypothesis") or self._asyncio_owns(collector, obj):
            return
        own = getattr(obj, "pytestmark", ())
        if not any(mark.name == "anyio" for mark in own) and not collector.get_closest_marker(
            "anyio"
        ):
            pytest.mark.anyio(obj)
        pytest.mark.usefixtures("anyio_backend")(obj)

    def _asyncio_owns(self, collector: pytest.Module | pytest.Class, obj: object) -> bool:
        if not self.config.pluginmanager.has_plugin("asyncio"):
            return False
        if self.config.getini("asyncio_mode") == "auto":
            return True
        own = getattr(obj, "pytestmark", ())
        return any(mark.name == "asyncio" for mark in own) or bool(
            collector.get_closest_marker("asyncio")
        )

    def pytest_sessionstart(self) -> None:
        # Import what session end needs now, while nothing unusual has happened: a late
        # first import (assertion-rewritten, as a plugin) can fail after some test
        # left the interpreter in a bad state, which would cost the whole report.
        import rampart.codec._record
        import rampart.pytest_plugin._groups
        import rampart.pytest_plugin._summary
        import rampart.pytest_plugin._xdist
        import rampart.reporting  # noqa: F401

    # -- collection ------------------------------------------------------------------------

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            try:
                spec = trial_spec_of(
                    item,
                    trials_override=self.trials_override,
                    default_concurrency=self.default_concurrency,
                )
                if spec is not None and (
                    not isinstance(item, pytest.Function) or hasattr(item.obj, "hypothesis")
                ):
                    raise pytest.UsageError(
                        f"@pytest.mark.trial is not supported on {item.nodeid}: only plain "
                        "test functions (not hypothesis tests) can run as trial groups"
                    )
                harm = harm_category_of(item)
            except pytest.UsageError as error:
                if not self.is_worker:
                    raise
                # On an xdist worker a usage error would surface as an INTERNALERROR
                # without its message; fail the item with the message instead.
                item.stash[_MISUSE] = str(error)
                continue
            item.stash[_SPEC] = spec
            item.stash[_HARM] = harm

    # Executions run by fixtures (a baseline probe in setup, a check in teardown) are
    # collected too, under the test they served.
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, object, object]:
        misuse = item.stash.get(_MISUSE, None)
        if misuse is not None:
            pytest.fail(f"usage error: {misuse}", pytrace=False)
        return (yield from self._fixture_phase(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, object, object]:
        return (yield from self._fixture_phase(item))

    def _fixture_phase(self, item: pytest.Item) -> Generator[None, object, object]:
        from rampart.pytest_plugin._collect import ResultCollector, collecting

        collector = item.stash.setdefault(_FIXTURES, ResultCollector())
        with collecting(collector):
            return (yield)

    # -- running ---------------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, object, object]:
        from rampart.pytest_plugin._runner import wrap_test_function

        if not isinstance(item, pytest.Function) or hasattr(item.obj, "hypothesis"):
            return (yield from self._run_unwrapped(item))
        spec = item.stash.get(_SPEC, None)
        original = item.obj

        def publish(run: ItemRun) -> None:
            item.stash[_RUN] = run

        item.obj = wrap_test_function(original, spec=spec, name=item.name, publish=publish)
        try:
            return (yield)
        finally:
            item.obj = original

    def _run_unwrapped(self, item: pytest.Item) -> Generator[None, object, object]:
        from rampart.pytest_plugin._collect import collecting
        from rampart.pytest_plugin._runner import CloneRun, ItemRun

        clone = CloneRun(index=0)
        item.stash[_RUN] = ItemRun(spec=None, clones=[clone])
        with collecting(clone.collector):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        # Finish after teardown, the last phase that can record results.
        if call.when == "teardown":
            self.limits.snapshot()
            run = item.stash.get(_RUN, None)
            fixtures = item.stash.get(_FIXTURES, None)
            if run is not None or (fixtures is not None and fixtures.results):
                results, group = self._finish(item, run, fixtures)
                if self.is_worker:
                    from rampart.pytest_plugin._xdist import REPORT_ATTRIBUTE, encode_envelope

                    worker = str(self.config.workerinput.get("workerid", "?"))  # type: ignore[attr-defined]
                    payload = encode_envelope(
                        results, group, max_bytes=self.max_bytes, worker=worker
                    )
                    setattr(report, REPORT_ATTRIBUTE, payload)
                    self.streamed += len(results)
                else:
                    self.absorb(self._recordable(results), group)
        return report

    def _finish(
        self, item: pytest.Item, run: ItemRun | None, fixtures: ResultCollector | None
    ) -> tuple[list[Result], GroupLine | None]:
        """Tag the item's results with where they came from; build its group line."""
        from rampart.core._population import PopulationRef
        from rampart.pytest_plugin._groups import GroupVerdict
        from rampart.pytest_plugin._runner import CloneRun
        from rampart.pytest_plugin._summary import GroupLine

        harm = item.stash.get(_HARM, None)
        spec = None if run is None else run.spec
        population_id = uuid.uuid4().hex
        tagged: list[Result] = []
        clones = [] if run is None else [*run.clones, *run.partial]
        if fixtures is not None and fixtures.results:
            # Fixture results belong to the test itself (no clone suffix, no population);
            # in a plain test they follow the body's results.
            clones.append(CloneRun(index=-1, collector=fixtures))
        next_index: dict[str, int] = {}
        for clone in clones:
            self.limits.observe(list(clone.collector.adapters.values()))
            is_clone = spec is not None and clone.index >= 0
            suffix = f"[trial-{clone.index}]" if is_clone else ""
            nodeid = item.nodeid + suffix
            for result in clone.collector.results:
                index = next_index.get(nodeid, 0)
                next_index[nodeid] = index + 1
                changes: dict[str, Any] = {
                    "metadata": {
                        **result.metadata,
                        "_pytest_test_name": item.name + suffix,
                        "_pytest_nodeid": nodeid,
                        "_rampart_result_index": index,
                    }
                }
                if result.harm_category is None and harm is not None:
                    changes["harm_category"] = harm
                if is_clone and spec is not None and result.population is None:
                    changes["population"] = PopulationRef(
                        id=population_id,
                        index=clone.index,
                        size=spec.n,
                        threshold=spec.threshold,
                    )
                tagged.append(attrs.evolve(result, **changes))
        group = None
        if spec is not None and run is not None and run.finished:
            verdict = GroupVerdict.of(run)
            group = GroupLine(
                nodeid=item.nodeid,
                name=item.name,
                description=verdict.describe(),
                passed=verdict.passed,
            )
        return tagged, group

    def _recordable(self, results: list[Result]) -> list[Result]:
        from rampart.pytest_plugin._xdist import recordable

        kept = []
        for result in results:
            prepared, lost = recordable(result)
            if lost is not None:
                nodeid = result.metadata.get("_pytest_nodeid", "?")
                self.incomplete_reasons.append(f"a result of {nodeid} was lost: {lost}")
            kept.append(prepared)
        return kept

    def absorb(self, results: list[Result], group: GroupLine | None) -> None:
        self.results.extend(results)
        if group is not None:
            self.groups.append(group)

    # -- the end of the session ------------------------------------------------------------

    def has_sink_hooks(self) -> bool:
        return bool(_hook_implementations(self.config))

    def build_report(self) -> TestRunReport:
        from rampart.reporting import TestRunReport

        ordered = sorted(self.results, key=_report_order)
        metadata: dict[str, Any] = {}
        if self.config.pluginmanager.has_plugin("dsession") or self.workers_seen:
            metadata["xdist_active"] = True
            metadata["worker_count"] = len(self.workers_seen)
            metadata["dist_mode"] = str(self.config.getoption("dist", "no"))
        from rampart.pytest_plugin._limits import merge_limit_statistics

        limits = merge_limit_statistics(self.limits.statistics() + self.worker_limit_statistics)
        if limits:
            metadata["limits"] = limits
        from rampart.pytest_plugin._llm_cache import llm_metadata

        llm = llm_metadata(self.config)
        if llm:
            metadata["llm"] = llm
        if self.incomplete_reasons:
            metadata["incomplete"] = True
            metadata["incomplete_reasons"] = list(self.incomplete_reasons)
        return TestRunReport.from_results(
            ordered, duration_seconds=time.monotonic() - self.started, metadata=metadata
        )

    def resolve_sinks(self) -> list[ReportSink]:
        from rampart.reporting import ReportSink

        if _hook_implementations(self.config):
            sinks: list[ReportSink] = []
            for impl in _hook_implementations(self.config):
                # Call each implementation on its own (not through the hook relay) so a
                # bad one is named and the others still emit. Like pluggy, pass only the
                # arguments it declares.
                kwargs = {"config": self.config} if "config" in impl.argnames else {}
                try:
                    returned = impl.function(**kwargs)
                except Exception as exc:  # reported loudly, exit status forced
                    self.sink_failures.append(
                        f"pytest_rampart_sinks in {impl.plugin_name} raised "
                        f"{type(exc).__name__}: {exc}"
                    )
                    continue
                if not isinstance(returned, list | tuple):
                    self.warnings.append(
                        f"pytest_rampart_sinks in {impl.plugin_name} returned "
                        f"{type(returned).__name__}, expected a list of report sinks; ignored"
                    )
                    continue
                for sink in returned:
                    if isinstance(sink, ReportSink):
                        sinks.append(sink)
                    else:
                        self.warnings.append(
                            f"pytest_rampart_sinks in {impl.plugin_name} returned "
                            f"{type(sink).__name__}, which has no emit_async(); ignored"
                        )
            return sinks
        if self.legacy_sinks is None:
            if self.workers_seen and _defines_legacy_fixture(self.config):
                self.sink_failures.append(
                    "the deprecated rampart_sinks fixture cannot be resolved on the xdist "
                    "controller, so its sinks received nothing; implement the "
                    "pytest_rampart_sinks hook instead"
                )
            return []
        kept = [sink for sink in self.legacy_sinks if isinstance(sink, ReportSink)]
        if len(kept) != len(self.legacy_sinks):
            self.warnings.append("rampart_sinks fixture returned items that are not report sinks")
        return kept

    async def emit(self, report: TestRunReport, sinks: list[ReportSink]) -> None:
        import anyio

        async def emit_one(sink: ReportSink) -> None:
            try:
                await sink.emit_async(report=report)
            except Exception as exc:  # reported loudly, exit status forced
                self.sink_failures.append(f"{sink!r}: {type(exc).__name__}: {exc}")
                return
            path = getattr(sink, "last_path", None)
            if path is not None:
                self.written.append(str(path))

        async with anyio.create_task_group() as tg:
            for sink in sinks:
                tg.start_soon(emit_one, sink)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            from rampart.pytest_plugin._limits import WORKEROUTPUT_KEY
            from rampart.pytest_plugin._xdist import STREAMED_KEY

            output = session.config.workeroutput  # type: ignore[attr-defined]
            output[STREAMED_KEY] = self.streamed
            output[WORKEROUTPUT_KEY] = self.limits.statistics()
            return
        import anyio

        self.report = report = self.build_report()
        sinks = self.resolve_sinks()
        if sinks:
            anyio.run(self.emit, report, sinks)
        if (self.incomplete_reasons or self.sink_failures) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from rampart.pytest_plugin._summary import summary_lines

        if self.is_worker:
            return
        tr = terminalreporter
        if self.incomplete_reasons:
            tr.write_sep("=", "RAMPART: INCOMPLETE RUN", red=True, bold=True)
            tr.write_line("Results may be partial; the report does not reflect every test.")
            for reason in self.incomplete_reasons:
                tr.write_line(f"  - {one_line(reason)}")
        if self.sink_failures:
            tr.write_sep("=", "RAMPART: REPORT SINK FAILED", red=True, bold=True)
            tr.write_line("A report was not written; the exit status is non-zero.")
            for failure in self.sink_failures:
                tr.write_line(f"  - {one_line(failure)}")
        for warning in self.warnings:
            tr.write_line(f"RAMPART WARNING: {one_line(warning)}", yellow=True)
        report = self.report or self.build_report()
        if not report.results and not self.groups:
            return
        tr.write_sep("=", "RAMPART Safety Summary")
        for line in summary_lines(report, self.groups):
            tr.write_line(line)
        for path in self.written:
            tr.write_line(f"RAMPART report written to {path}")


def _defines_legacy_fixture(config: pytest.Config) -> bool:
    return any(hasattr(plugin, "rampart_sinks") for plugin in config.pluginmanager.get_plugins())


def _hook_implementations(config: pytest.Config) -> list[Any]:
    return list(config.pluginmanager.hook.pytest_rampart_sinks.get_hookimpls())


_TRIAL_SUFFIX = re.compile(r"\[trial-(\d+)\]$")


def _report_order(result: Result) -> tuple[str, int, int, str]:
    """Test, then trial clone (numerically: trial-2 before trial-10), then result index."""
    nodeid = result.metadata.get("_pytest_nodeid")
    index = result.metadata.get("_rampart_result_index")
    worker = result.metadata.get("_rampart_source_worker")
    base = nodeid if isinstance(nodeid, str) else ""
    clone = -1
    match = _TRIAL_SUFFIX.search(base)
    if match is not None:
        base, clone = base[: match.start()], int(match.group(1))
    return (
        base,
        clone,
        index if isinstance(index, int) else 0,
        worker if isinstance(worker, str) else "",
    )


def _option_int(config: pytest.Config, name: str, *, minimum: int) -> int | None:
    """An integer option from the command line, else the ini file; None when unset."""
    value = config.getoption(name, None)
    source = f"--{name.replace('_', '-')}"
    if value is None:
        raw = config.getini(name) if name in _INI_OPTIONS else ""
        if raw in ("", None):
            return None
        value, source = raw, f"ini option {name}"
    try:
        number = int(str(value))
    except ValueError:
        message = f"{source} must be an integer >= {minimum}, got {value!r}"
        raise pytest.UsageError(message) from None
    if number < minimum:
        raise pytest.UsageError(f"{source} must be an integer >= {minimum}, got {value!r}")
    return number


_INI_OPTIONS = frozenset({"rampart_concurrency", "rampart_xdist_max_bytes"})


def _max_bytes(config: pytest.Config) -> int:
    from rampart.pytest_plugin._xdist import DEFAULT_MAX_BYTES, MIN_MAX_BYTES

    value = _option_int(config, "rampart_xdist_max_bytes", minimum=MIN_MAX_BYTES)
    return DEFAULT_MAX_BYTES if value is None else value
