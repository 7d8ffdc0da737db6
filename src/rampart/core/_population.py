"""``PopulationRef``: which trial of which population a result belongs to, and the
facts its group's verdict rests on (so a saved run can be judged again)."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any

import attrs

from rampart._checks import (
    check_bool,
    check_int,
    check_optional_int,
    check_optional_number,
    check_probability,
    check_text,
)
from rampart.core._dataclass import dataclass_compatible

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["CloneOutcome", "PopulationRef"]

_OWNER = "PopulationRef"


class CloneOutcome(enum.Enum):
    """How a trial clone's own body ended (its results aside).

    ``FAILED``: its own assertions (or ``pytest.fail``) failed it, so a clone whose
    results were all SAFE still does not count as SAFE. ``SKIPPED``: it called
    ``pytest.skip``/``xfail``. ``PARTIAL``: it never finished (an interrupt, an early
    stop cancellation); its results are reported, never counted.
    """

    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    PARTIAL = "partial"


def _check_threshold(value: object) -> float:
    return check_probability(_OWNER, "threshold", value)


def _check_confidence(value: object) -> float | None:
    return check_optional_number(_OWNER, "confidence", value, above=0, below=1)


def _check_outcome(value: object) -> CloneOutcome | None:
    if value is None or isinstance(value, CloneOutcome):
        return value
    try:
        return CloneOutcome(value)
    except ValueError:
        names = ", ".join(repr(member.value) for member in CloneOutcome)
        raise ValueError(f"{_OWNER}.outcome: expected None or one of {names}") from None


def _optional_count(name: str) -> Callable[[Any, Any, int | None], None]:
    def check(_instance: Any, _attribute: Any, value: int | None) -> None:
        check_optional_int(_OWNER, name, value, minimum=0)

    return check


def _check_sequential(_instance: object, _attribute: object, value: object) -> None:
    check_bool(_OWNER, "sequential", value)


@dataclass_compatible
@attrs.frozen(kw_only=True)
class PopulationRef:
    """Stamps a trial result with its population: ``id``, 0-based ``index`` < ``size``.

    ``threshold`` is the SAFE fraction the population needs; it is normalized to float.

    The other fields are the facts a saved run's verdict is rebuilt from
    (``rampart.core._trial_rule.rebuild_verdict``); ``None`` means "not recorded"
    (an older producer, or a group that never finished):

    - the group's rule: ``confidence``, ``sequential`` and ``max_unsafe`` (recorded
      when ``max_unsafe`` is not ``None``);
    - ``outcome``: how this clone's own body ended (``CloneOutcome``);
    - ``executed`` and ``no_result``, set once the group finished: how many clones its
      verdict counted (clones ``0 .. executed - 1``) and how many of those recorded no
      result at all (they have no record, so the count is what says they existed).
    """

    id: str
    index: int
    size: int
    threshold: float = attrs.field(converter=_check_threshold)
    confidence: float | None = attrs.field(default=None, converter=_check_confidence)
    sequential: bool = attrs.field(default=False, validator=_check_sequential)
    max_unsafe: int | None = attrs.field(default=None, validator=_optional_count("max_unsafe"))
    outcome: CloneOutcome | None = attrs.field(default=None, converter=_check_outcome)
    executed: int | None = attrs.field(default=None, validator=_optional_count("executed"))
    no_result: int | None = attrs.field(default=None, validator=_optional_count("no_result"))

    def __attrs_post_init__(self) -> None:
        # Non-empty, as the trace schema says (minLength 1); whitespace is a valid id.
        check_text(_OWNER, "id", self.id, blank_ok=True)
        size = check_int(_OWNER, "size", self.size, minimum=1)
        check_int(_OWNER, "index", self.index, minimum=0, maximum=size - 1)

    @property
    def rule_recorded(self) -> bool:
        """True when the group's rule is recorded (``max_unsafe`` is set)."""
        return self.max_unsafe is not None
