"""``PopulationRef``: which trial of which population a result belongs to."""

from __future__ import annotations

import math

import attrs

__all__ = ["PopulationRef"]


def _check_int(name: str, value: object) -> int:
    # bool is an int subclass; a flag is never a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"PopulationRef.{name} must be an int, got {type(value).__name__}")
    return value


def _check_threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"PopulationRef.threshold must be a number, got {type(value).__name__}")
    threshold = float(value)
    if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"PopulationRef.threshold must be a finite number in [0, 1], got {value}")
    return threshold


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
        if not isinstance(self.id, str):
            raise TypeError(f"PopulationRef.id must be a str, got {type(self.id).__name__}")
        if not self.id:
            raise ValueError("PopulationRef.id must be a non-empty string")
        size = _check_int("size", self.size)
        index = _check_int("index", self.index)
        if size < 1:
            raise ValueError(f"PopulationRef.size must be >= 1, got {size}")
        if not 0 <= index < size:
            raise ValueError(
                f"PopulationRef.index must satisfy 0 <= index < size ({size}), got {index}"
            )
