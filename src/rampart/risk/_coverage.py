"""The coverage matrix: each framework item, and what the run's results did to it.

An item is *covered* when at least one result reached it through the risk map (one of
its subjects maps to the item); its row counts the tests (distinct pytest node ids,
trial clones counted with their group) and the runs (results) that reached it, by
status, and the attack success rate, UNSAFE / (runs - ERROR) as the report's population
summary counts it (0.0 without a non-ERROR run). An item no result reached is listed
as not covered: every item of a framework whose ``matrix`` is ``"all"`` (the OWASP
lists), and for MITRE ATLAS (``"mapped"``) every technique the map can reach.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from rampart.core._internal import owning_test
from rampart.core.result import SafetyStatus
from rampart.risk._subjects import risk_subjects
from rampart.risk._tables import RiskMap

if TYPE_CHECKING:
    from collections.abc import Iterable

    from rampart.core.result import Result

__all__ = ["FrameworkCoverage", "ItemCoverage", "RiskCoverage", "risk_coverage"]


@attrs.frozen(kw_only=True)
class ItemCoverage:
    """One row of the matrix: an item and the results that reached it."""

    id: str
    name: str
    tests: int = 0
    runs: int = 0
    safe: int = 0
    unsafe: int = 0
    undetermined: int = 0
    errors: int = 0
    via: tuple[str, ...] = ()

    @property
    def covered(self) -> bool:
        return self.runs > 0

    @property
    def attack_success_rate(self) -> float:
        judged = self.runs - self.errors
        return self.unsafe / judged if judged else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "covered": self.covered,
            "tests": self.tests,
            "runs": self.runs,
            "safe": self.safe,
            "unsafe": self.unsafe,
            "undetermined": self.undetermined,
            "errors": self.errors,
            "attack_success_rate": self.attack_success_rate,
            "via": list(self.via),
        }


@attrs.frozen(kw_only=True)
class FrameworkCoverage:
    """The matrix rows of one framework version."""

    id: str
    name: str
    version: str
    source: str
    items: tuple[ItemCoverage, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "version": self.version,
            "source": self.source,
            "covered": sum(1 for item in self.items if item.covered),
            "items": [item.to_json() for item in self.items],
        }


@attrs.frozen(kw_only=True)
class RiskCoverage:
    """The coverage matrix of a run, per framework, and the tables it was read from."""

    frameworks: tuple[FrameworkCoverage, ...]
    origins: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        """The report's ``coverage`` section."""
        return {
            "origins": list(self.origins),
            "frameworks": [framework.to_json() for framework in self.frameworks],
        }


@attrs.define
class _Tally:
    tests: set[str] = attrs.field(factory=set)
    counts: dict[SafetyStatus, int] = attrs.field(factory=dict)
    via: dict[str, None] = attrs.field(factory=dict)


def risk_coverage(results: Iterable[Result], risk_map: RiskMap | None = None) -> RiskCoverage:
    """The coverage matrix of ``results`` under ``risk_map`` (default: the built-in one)."""
    risk_map = RiskMap.builtin() if risk_map is None else risk_map
    tallies: dict[str, _Tally] = {}
    for result in results:
        test = owning_test(result)
        reached: dict[str, set[str]] = {}
        for entry in risk_map.entries_for(risk_subjects(result)):
            reached.setdefault(entry.item, set()).add(entry.subject)
        for item_id, subjects in reached.items():
            tally = tallies.setdefault(item_id, _Tally())
            if test is not None:
                tally.tests.add(test)
            tally.counts[result.status] = tally.counts.get(result.status, 0) + 1
            for subject in sorted(subjects):
                tally.via[subject] = None
    reachable = {entry.item for entry in risk_map.entries} | set(tallies)
    frameworks = []
    for framework in risk_map.frameworks:
        rows = []
        for item in framework.items:
            if framework.matrix == "mapped" and item.id not in reachable:
                continue
            tally = tallies.get(item.id, _Tally())
            counts = tally.counts
            rows.append(
                ItemCoverage(
                    id=item.id,
                    name=item.name,
                    tests=len(tally.tests),
                    runs=sum(counts.values()),
                    safe=counts.get(SafetyStatus.SAFE, 0),
                    unsafe=counts.get(SafetyStatus.UNSAFE, 0),
                    undetermined=counts.get(SafetyStatus.UNDETERMINED, 0),
                    errors=counts.get(SafetyStatus.ERROR, 0),
                    via=tuple(tally.via),
                )
            )
        frameworks.append(
            FrameworkCoverage(
                id=framework.id,
                name=framework.name,
                version=framework.version,
                source=framework.source,
                items=tuple(rows),
            )
        )
    return RiskCoverage(frameworks=tuple(frameworks), origins=risk_map.origins)
