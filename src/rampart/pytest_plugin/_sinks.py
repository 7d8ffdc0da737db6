"""The run's report sinks: from the ``pytest_rampart_sinks`` hook, else the deprecated fixture.

Resolved once, at session end, on the xdist controller or the single process. Each
hook implementation is called through pluggy on its own (a subset hook caller holding
just that implementation), so one that raises is named and the others still
contribute. Anything a sink or an implementation gets wrong is recorded on the run
ledger: a warning for a return value that is not sinks, a sink failure (which fails
the run) for an exception. A report never goes missing silently.

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
"""

from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rampart._text import one_line

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.pytest_plugin._ledger import RunLedger
    from rampart.reporting import ReportSink, TestRunReport

__all__ = ["LEGACY_FIXTURE_WARNING", "ReportSinks", "SINKS_KEY", "report_dir_sinks"]


SINKS_KEY = pytest.StashKey["ReportSinks"]()


_HOOK = "pytest_rampart_sinks"


LEGACY_FIXTURE_WARNING = (
    "The rampart_sinks fixture is deprecated and will be removed in 0.3.0. "
    "Use the pytest_rampart_sinks hook instead."
)


#: A temporary report file must be this much older than the session to be stale.
_STALE_GRACE_SECONDS = 60.0


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
        from rampart.reporting._files import remove_stale_temporaries

        for sink in sinks:
            directory = getattr(sink, "output_dir", None)
            if isinstance(directory, Path):
                remove_stale_temporaries(directory, older_than=older_than - _STALE_GRACE_SECONDS)


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
