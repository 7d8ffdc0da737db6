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
            ({"id": ""}, ValueError, "id must be a non-empty"),
            ({"id": 3}, TypeError, "id must be a str"),
            ({"size": 0}, ValueError, "size must be >= 1"),
            ({"size": True}, TypeError, "size must be an int"),
            ({"size": 2.0}, TypeError, "size must be an int"),
            ({"index": -1}, ValueError, "0 <= index < size"),
            ({"index": 3}, ValueError, "0 <= index < size"),
            ({"index": False}, TypeError, "index must be an int"),
            ({"threshold": 1.5}, ValueError, "threshold must be a finite number in"),
            ({"threshold": -0.1}, ValueError, "threshold"),
            ({"threshold": math.nan}, ValueError, "threshold"),
            ({"threshold": math.inf}, ValueError, "threshold"),
            ({"threshold": True}, TypeError, "threshold must be a number"),
            ({"threshold": "0.5"}, TypeError, "threshold must be a number"),
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
