"""AgentDojo's two numbers from rampart results: attack success rate and utility.

AgentDojo reports, per suite and attack, the share of pairs whose injection succeeded
(``security`` true: the attack success rate) and the share whose user task was still
done (utility under attack). ``summarise`` reads both from ``Result.metadata["agentdojo"]``;
``AgentDojoSummarySink`` prints them at the end of a pytest run (register it with the
``pytest_rampart_sinks`` hook; ``rampart scan agentdojo`` does).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from rampart.core._internal import wilson_interval

if TYPE_CHECKING:
    from collections.abc import Iterable

    import pytest

    from rampart.core.result import Result
    from rampart.reporting import TestRunReport

__all__ = ["AgentDojoSummary", "AgentDojoSummarySink", "summarise"]


@attrs.frozen(kw_only=True)
class AgentDojoSummary:
    """One (suite, version, attack): how many runs, injected, useful, and not judged."""

    suite: str
    version: str
    attack: str
    runs: int
    injected: int
    useful: int
    unjudged: int

    @property
    def attack_success_rate(self) -> float:
        return self.injected / self.runs if self.runs else 0.0

    @property
    def utility(self) -> float:
        return self.useful / self.runs if self.runs else 0.0

    def line(self) -> str:
        low, high = wilson_interval(self.injected, self.runs) if self.runs else (0.0, 0.0)
        text = (
            f"AgentDojo {self.suite} {self.version} {self.attack}: attack success rate "
            f"{self.injected}/{self.runs} ({self.attack_success_rate:.1%}, 95% CI "
            f"{low:.1%}-{high:.1%}), utility under attack {self.useful}/{self.runs} "
            f"({self.utility:.1%})"
        )
        if self.unjudged:
            text += f"; {self.unjudged} run(s) without AgentDojo's checks (ERROR) not counted"
        return text


def summarise(results: Iterable[Result]) -> list[AgentDojoSummary]:
    """Group AgentDojo results by (suite, version, attack), in first-seen order.

    A result without both checks (an ERROR before the pipeline finished, known by its
    ``agentdojo:<suite>:<version>:<attack>`` injection record) counts in ``unjudged``,
    never as a defended pair.
    """
    groups: dict[tuple[str, str, str], dict[str, int]] = {}
    for result in results:
        facts: Any = result.metadata.get("agentdojo")
        if isinstance(facts, dict):
            key = (str(facts.get("suite")), str(facts.get("version")), str(facts.get("attack")))
        else:  # a run that failed before the checks: its surface names the suite
            surfaces = [
                record.surface_name.split(":")
                for record in result.injections
                if record.surface_name.startswith("agentdojo:")
            ]
            if not surfaces or len(surfaces[0]) != 4:
                continue
            key, facts = (surfaces[0][1], surfaces[0][2], surfaces[0][3]), {}
        counts = groups.setdefault(key, {"runs": 0, "injected": 0, "useful": 0, "unjudged": 0})
        security, utility = facts.get("security"), facts.get("utility")
        if not isinstance(security, bool) or not isinstance(utility, bool):
            counts["unjudged"] += 1
            continue
        counts["runs"] += 1
        counts["injected"] += security
        counts["useful"] += utility
    return [
        AgentDojoSummary(suite=suite, version=version, attack=attack, **counts)
        for (suite, version, attack), counts in groups.items()
    ]


class AgentDojoSummarySink:
    """A report sink that prints AgentDojo's numbers in pytest's terminal summary."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self.summaries: list[AgentDojoSummary] = []

    async def emit_async(self, *, report: TestRunReport) -> None:
        self.summaries = summarise(report.results)
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None or not self.summaries:
            return
        reporter.write_sep("-", "AgentDojo")
        for summary in self.summaries:
            reporter.write_line(summary.line())
