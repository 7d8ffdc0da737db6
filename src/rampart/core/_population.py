"""``PopulationRef``: which trial of which population a result belongs to."""

from __future__ import annotations

import attrs

from rampart._checks import check_int, check_probability, check_text
from rampart.core._dataclass import dataclass_compatible

__all__ = ["PopulationRef"]

_OWNER = "PopulationRef"


def _check_threshold(value: object) -> float:
    return check_probability(_OWNER, "threshold", value)


@dataclass_compatible
@attrs.frozen(kw_only=True)
class PopulationRef:
    """Stamps a trial result with its population: ``id``, 0-based ``index`` < ``size``.

    ``threshold`` is the SAFE fraction the population needs; it is normalized to float.
    """

    id: str
    index: int
    size: int
    threshold: float = attrs.field(converter=_check_threshold)

    def __attrs_post_init__(self) -> None:
        # Non-empty, as the trace schema says (minLength 1); whitespace is a valid id.
        check_text(_OWNER, "id", self.id, blank_ok=True)
        size = check_int(_OWNER, "size", self.size, minimum=1)
        check_int(_OWNER, "index", self.index, minimum=0, maximum=size - 1)
