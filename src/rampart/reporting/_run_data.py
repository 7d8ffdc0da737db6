"""The run-level sections of a report: trial-group verdicts and facts about the run.

``TrialGroupSummary`` is one ``@pytest.mark.trial`` group as the report states it:
counts by status, pass rate, Wilson interval, verdict and, for a failed group, the
reason on one line. ``RunInfo`` says how the run went: when it started, how long it
took, how it exited, whether it was interrupted or is incomplete, and what it ran on.

Both are plain values that the pytest plugin fills from its run ledger; the JSON
report writes them as its ``trial_groups`` and ``run`` keys (``to_json``), and
``from_json`` reads them back (unknown keys are ignored, so a newer report stays
readable). The verdict is a string so that verdicts added later (``"inconclusive"``,
with ``confidence``) extend the format instead of breaking it.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, TypeVar

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

if TYPE_CHECKING:
    import cattrs

__all__ = ["GROUP_VERDICTS", "GroupInterval", "RunInfo", "StatusCounts", "TrialGroupSummary"]

#: The verdicts a trial group can have. ``"inconclusive"`` is only given by a group
#: judged with ``confidence=`` (a confidence-aware verdict); the count rule gives
#: ``"passed"`` and ``"failed"``. ``"incomplete"`` is ``rampart report``'s and
#: ``rampart diff``'s for a saved group whose records do not hold what its verdict
#: rests on (clones missing, a group cut short, an older producer): never a pass.
GROUP_VERDICTS = ("passed", "failed", "inconclusive", "incomplete")

_T = TypeVar("_T")


@attrs.frozen(kw_only=True)
class StatusCounts:
    """How many clones of a group ended in each status.

    A clone's status is its worst result (UNSAFE, ERROR, UNDETERMINED, SAFE in that
    order); a clone whose own assertions failed although every result was SAFE counts
    as UNDETERMINED; ``no_result`` counts clones that recorded no result at all.
    """

    safe: int = 0
    unsafe: int = 0
    undetermined: int = 0
    error: int = 0
    no_result: int = 0

    def __attrs_post_init__(self) -> None:
        for field in attrs.fields(StatusCounts):
            check_int("StatusCounts", field.name, getattr(self, field.name), minimum=0)

    @property
    def total(self) -> int:
        return self.safe + self.unsafe + self.undetermined + self.error + self.no_result


@attrs.frozen(kw_only=True)
class GroupInterval:
    """A confidence interval for a group's pass rate (``method`` ``"wilson"`` today)."""

    method: str
    level: float
    low: float
    high: float

    def __attrs_post_init__(self) -> None:
        owner = "GroupInterval"
        check_text(owner, "method", self.method)
        check_probability(owner, "level", self.level)
        check_probability(owner, "low", self.low)
        check_probability(owner, "high", self.high)
        if self.low > self.high:
            raise invalid(owner, "low", f"<= high ({self.high!r})", self.low, error=ValueError)


@attrs.frozen(kw_only=True)
class TrialGroupSummary:
    """One trial group's outcome, as the report states it.

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
    verdict.
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


@functools.cache
def _cattrs() -> tuple[cattrs.Converter, type[Exception], Any]:
    """The converter, with the error type and formatter of the same cattrs import.

    Kept together so that a test harness that re-imports cattrs (pytester drops modules
    between runs) never pairs this converter with another copy's exception class.
    """
    import cattrs  # deferred: importing rampart.reporting stays light

    return cattrs.Converter(), cattrs.BaseValidationError, cattrs.transform_error


def _to_json(value: object) -> dict[str, Any]:
    data: dict[str, Any] = _cattrs()[0].unstructure(value)
    return data


def _describe(exc: BaseException, _type: object) -> str:
    """A field check's own message (it names the class and field), else the error type."""
    return str(exc) if isinstance(exc, TypeError | ValueError) else type(exc).__name__


def _from_json(cls: type[_T], data: object) -> _T:
    """Structure ``data`` as ``cls``; a wrong shape is a ``ValueError`` naming the class."""
    converter, validation_error, transform_error = _cattrs()
    if not isinstance(data, dict):
        raise invalid(f"{cls.__name__}.from_json", "data", "a dict", data)
    try:
        return converter.structure(data, cls)
    except validation_error as exc:
        details = "; ".join(transform_error(exc, format_exception=_describe))
        raise ValueError(f"{cls.__name__}.from_json: {details}") from None
    except (TypeError, ValueError) as exc:  # a field check in the class itself
        raise ValueError(f"{cls.__name__}.from_json: {exc}") from None
