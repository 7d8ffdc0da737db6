"""The run-level sections of a report: trial-group verdicts and facts about the run.

``TrialGroupSummary`` is one ``@pytest.mark.trial`` group as the report states it:
counts by status, pass rate, Wilson interval, verdict and, for a failed group, the
reason on one line. ``RunInfo`` says how the run went: when it started, how long it
took, how it exited, whether it was interrupted or is incomplete, and what it ran on.

A group entry is stated from the model's ``TrialGroupOutcome`` in one place,
``rampart.reporting._group_text.group_entry``: the pytest plugin states each group it
judged (the terminal line, the xdist transport and the report all read that entry),
and ``rampart report`` / ``diff`` state each group they rebuilt from saved records.
``RunInfo`` the plugin fills from its run ledger. The JSON report writes both as its
``trial_groups`` and ``run`` keys (``to_json``), and ``from_json`` reads them back
(unknown keys are ignored, so a newer report stays readable), through the codec's one
converter (``rampart.codec._sections``). The verdict is a string so that verdicts
added later (``"inconclusive"``, with ``confidence``) extend the format instead of
breaking it.
"""

from __future__ import annotations

from typing import Any, TypeVar

import attrs

from rampart._checks import (
    check_bool,
    check_choice,
    check_int,
    check_optional_int,
    check_optional_number,
    check_optional_text,
    check_probability,
    check_seconds,
    check_text,
    invalid,
)
from rampart.core._internal import GroupInterval, StatusCounts

__all__ = [
    "GROUP_VERDICTS",
    "INCOMPLETE",
    "GroupInterval",
    "RunInfo",
    "StatusCounts",
    "TrialGroupSummary",
]

#: The verdicts a trial group can have. ``"inconclusive"`` is only given by a group
#: judged with ``confidence=`` (a confidence-aware verdict); the count rule gives
#: ``"passed"`` and ``"failed"``. ``"incomplete"`` is ``rampart report``'s and
#: ``rampart diff``'s for a saved group whose records do not hold what its verdict
#: rests on (clones missing, a group cut short, an older producer): never a pass.
GROUP_VERDICTS = ("passed", "failed", "inconclusive", "incomplete")
#: The verdict of a group whose saved facts do not decide it (never a pass).
INCOMPLETE = GROUP_VERDICTS[-1]

_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class TrialGroupSummary:
    """One trial group's outcome, as the report states it (``_group_text.group_entry``
    states a ``TrialGroupOutcome``; ``from_json`` reads a saved entry back as stated).

    ``executed`` clones finished and count in the verdict; ``not_run`` clones were
    cancelled by early stop or the sequential test (``early_stopped`` is then true)
    and do not; ``not_counted`` clones finished after the clone that decided (clones
    count in index order) and do not count either; ``not_counted_unsafe`` of those
    recorded an UNSAFE result (shown, never counted). ``pass_rate`` is SAFE / executed.
    ``verdict`` is ``"passed"``, ``"failed"`` or, only for a group judged with
    ``confidence``, ``"inconclusive"``; ``reason`` says why a group did not pass
    (``"4 UNSAFE"``, ``"pass rate 60% below threshold 90% (2 ERROR)"``, ``"95%
    interval 68.3-98.8% contains threshold 90%"``) and is ``None`` for a passed group.
    ``population_status`` is the group's status under the trial rule (``"safe"``
    exactly when it passed). ``confidence``, ``max_unsafe`` and ``sequential``
    describe how the verdict was reached: ``None``, ``0`` and ``False`` mean the
    spec's count rule. ``interval`` is the one the verdict reads with ``confidence``
    (``method`` ``"clopper-pearson"``, at that level), else the 95% Wilson interval.
    ``concurrency`` is what an adaptive group (``concurrency="auto"``) did: its
    ``final`` and ``peak`` limit, ``peak_in_flight``, ``cuts``, ``throttle_cuts`` and
    ``throttles`` (``None`` for a fixed concurrency); it describes speed, never the
    verdict. ``interrupted`` marks a group a Ctrl-C stopped before it finished: its
    verdict is ``"incomplete"`` and ``reason`` says how many clones ran, were cut short
    and did not run.
    """

    nodeid: str
    test_name: str
    harm_category: str | None = None
    n: int
    threshold: float
    counts: StatusCounts
    executed: int
    not_run: int = 0
    pass_rate: float
    interval: GroupInterval
    verdict: str
    population_status: str
    reason: str | None = None
    early_stopped: bool = False
    confidence: float | None = None
    max_unsafe: int = 0
    sequential: bool = False
    not_counted: int = 0
    not_counted_unsafe: int = 0
    worker: str | None = None
    concurrency: dict[str, int] | None = None
    interrupted: bool = False

    def __attrs_post_init__(self) -> None:
        owner = "TrialGroupSummary"
        check_text(owner, "nodeid", self.nodeid)
        check_text(owner, "test_name", self.test_name)
        check_optional_text(owner, "harm_category", self.harm_category)
        check_int(owner, "n", self.n, minimum=1)
        check_probability(owner, "threshold", self.threshold)
        check_int(owner, "executed", self.executed, minimum=0)
        check_int(owner, "not_run", self.not_run, minimum=0)
        check_probability(owner, "pass_rate", self.pass_rate)
        check_choice(owner, "verdict", self.verdict, GROUP_VERDICTS)
        check_choice(
            owner,
            "population_status",
            self.population_status,
            ("safe", "unsafe", "undetermined", "error"),
        )
        check_optional_text(owner, "reason", self.reason)
        check_bool(owner, "early_stopped", self.early_stopped)
        check_optional_number(owner, "confidence", self.confidence, above=0, below=1)
        check_int(owner, "max_unsafe", self.max_unsafe, minimum=0)
        check_bool(owner, "sequential", self.sequential)
        check_int(owner, "not_counted", self.not_counted, minimum=0)
        check_int(owner, "not_counted_unsafe", self.not_counted_unsafe, minimum=0)
        check_optional_text(owner, "worker", self.worker)
        check_bool(owner, "interrupted", self.interrupted)
        if self.concurrency is not None:
            for key, value in self.concurrency.items():
                check_text(owner, "concurrency key", key)
                check_int(owner, f"concurrency[{key!r}]", value, minimum=0)
        if self.verdict == "inconclusive" and self.confidence is None:
            raise invalid(
                owner,
                "verdict",
                "'passed' or 'failed' without a confidence (only a confidence-aware verdict "
                "is inconclusive)",
                self.verdict,
                error=ValueError,
            )
        if self.counts.total != self.executed:
            raise ValueError(
                f"{owner}: counts must add up to executed ({self.executed}), "
                f"got {self.counts.total}"
            )

    @property
    def passed(self) -> bool:
        return self.verdict == "passed"

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this group, keys in field order."""
        return _to_json(self)

    @classmethod
    def from_json(cls, data: object) -> TrialGroupSummary:
        """Read a group back from a report's ``trial_groups`` entry (unknown keys ignored)."""
        return _from_json(cls, data)


@attrs.frozen(kw_only=True)
class RunInfo:
    """How the run went and what it ran on.

    ``exit_status`` is pytest's exit code as known when the report was built (a sink
    failing afterwards still makes the process exit non-zero). ``interrupted`` is true
    when the run was stopped (Ctrl-C); ``incomplete`` when the report may not hold
    every result (a crashed xdist worker, a lost result), with the reasons.
    ``started_at`` is ISO 8601 UTC. ``anyio_backends`` lists the async backends the
    tests ran on; ``xdist_workers`` is 0 for a single-process run. Fields left at
    their defaults are unknown (a report built outside pytest).
    """

    started_at: str | None = None
    duration_seconds: float = 0.0
    exit_status: int | None = None
    interrupted: bool = False
    incomplete: bool = False
    incomplete_reasons: list[str] = attrs.field(factory=list)
    rampart_version: str | None = None
    python_version: str | None = None
    pytest_version: str | None = None
    platform: str | None = None
    anyio_backends: list[str] = attrs.field(factory=list)
    xdist_workers: int = 0
    dist_mode: str | None = None

    def __attrs_post_init__(self) -> None:
        owner = "RunInfo"
        check_optional_text(owner, "started_at", self.started_at)
        check_seconds(owner, "duration_seconds", self.duration_seconds)
        check_optional_int(owner, "exit_status", self.exit_status)
        check_bool(owner, "interrupted", self.interrupted)
        check_bool(owner, "incomplete", self.incomplete)
        for index, reason in enumerate(self.incomplete_reasons):
            check_text(owner, f"incomplete_reasons[{index}]", reason, blank_ok=True)
        for name in ("rampart_version", "python_version", "pytest_version", "platform"):
            check_optional_text(owner, name, getattr(self, name))
        for index, backend in enumerate(self.anyio_backends):
            check_text(owner, f"anyio_backends[{index}]", backend)
        check_int(owner, "xdist_workers", self.xdist_workers, minimum=0)
        check_optional_text(owner, "dist_mode", self.dist_mode)

    def to_json(self) -> dict[str, Any]:
        """The JSON object of this section, keys in field order."""
        return _to_json(self)

    @classmethod
    def from_json(cls, data: object) -> RunInfo:
        """Read the section back from a report's ``run`` object (unknown keys ignored)."""
        return _from_json(cls, data)


def _to_json(value: object) -> dict[str, Any]:
    from rampart.codec._internal import section_to_json  # the codec loads on use

    return section_to_json(value)


def _from_json(cls: type[_T], data: object) -> _T:
    from rampart.codec._internal import section_from_json

    return section_from_json(cls, data)
