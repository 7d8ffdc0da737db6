from __future__ import annotations

import math

import pytest

from rampart import PopulationRef


class TestPopulationRef:
    def test_valid_and_threshold_normalized(self) -> None:
        """An int threshold becomes a float; bounds are inclusive of 0 and 1."""
        ref = PopulationRef(id="pop", index=2, size=3, threshold=1)
        assert ref.threshold == 1.0
        assert isinstance(ref.threshold, float)
        assert PopulationRef(id="p", index=0, size=1, threshold=0.0).threshold == 0.0

    @pytest.mark.parametrize(
        ("kwargs", "error", "match"),
        [
            ({"id": ""}, ValueError, r"^PopulationRef: id must be a non-empty string, got ''$"),
            ({"id": 3}, TypeError, r"^PopulationRef: id must be a non-empty string, got 3$"),
            ({"size": 0}, ValueError, r"^PopulationRef: size must be >= 1, got 0$"),
            ({"size": True}, TypeError, r"^PopulationRef: size must be an integer >= 1, got True$"),
            ({"size": 2.0}, TypeError, r"size must be an integer >= 1, got 2\.0$"),
            ({"index": -1}, ValueError, r"^PopulationRef: index must be in \[0, 2\], got -1$"),
            ({"index": 3}, ValueError, r"index must be in \[0, 2\], got 3$"),
            ({"index": False}, TypeError, r"index must be an integer in \[0, 2\], got False$"),
            (
                {"threshold": 1.5},
                ValueError,
                r"^PopulationRef: threshold must be a number in \[0, 1\]",
            ),
            ({"threshold": -0.1}, ValueError, "threshold"),
            ({"threshold": math.nan}, ValueError, "threshold"),
            ({"threshold": math.inf}, ValueError, "threshold"),
            ({"threshold": True}, TypeError, r"threshold must be a number in \[0, 1\], got True"),
            (
                {"threshold": "0.5"},
                TypeError,
                r"threshold must be a number in \[0, 1\], got '0\.5'",
            ),
        ],
    )
    def test_invariants(
        self, kwargs: dict[str, object], error: type[Exception], match: str
    ) -> None:
        """Each bound is enforced by the live constructor with a message naming the field."""
        values: dict[str, object] = {"id": "pop", "index": 0, "size": 3, "threshold": 0.5}
        values.update(kwargs)
        with pytest.raises(error, match=match):
            PopulationRef(**values)  # type: ignore[arg-type]
