"""The run's report sinks: from the ``pytest_rampart_sinks`` hook, else the deprecated fixture.

Resolved once, at session end, on the xdist controller or the single process. Each
hook implementation is called through pluggy on its own (a subset hook caller holding
just that implementation), so one that raises is named and the others still
contribute. Anything a sink or an implementation gets wrong is recorded on the run
ledger: a warning for a return value that is not sinks, a sink failure (which fails
the run) for an exception. A report never goes missing silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
import pytest

from rampart.reporting import ReportSink, TestRunReport

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.pytest_plugin._ledger import RunLedger

__all__ = ["ReportSinks", "SINKS_KEY"]

SINKS_KEY = pytest.StashKey["ReportSinks"]()

_HOOK = "pytest_rampart_sinks"


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
            if self._ledger.workers and _defines_legacy_fixture(self._config):
                self._ledger.sink_failed(
                    "the deprecated rampart_sinks fixture cannot be resolved on the xdist "
                    "controller, so its sinks received nothing; implement the "
                    "pytest_rampart_sinks hook instead"
                )
            return []
        kept = [sink for sink in self._fixture_sinks if isinstance(sink, ReportSink)]
        if len(kept) != len(self._fixture_sinks):
            self._ledger.warn("rampart_sinks fixture returned items that are not report sinks")
        return kept

    def _hook_sinks(self) -> Iterator[ReportSink]:
        """Every implementation's sinks, each implementation called on its own."""
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
        if sinks:
            anyio.run(self._emit_all, report, sinks)

    async def _emit_all(self, report: TestRunReport, sinks: list[ReportSink]) -> None:
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


def _defines_legacy_fixture(config: pytest.Config) -> bool:
    return any(hasattr(plugin, "rampart_sinks") for plugin in config.pluginmanager.get_plugins())
