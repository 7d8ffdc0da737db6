"""``rampart.core._stats.percent``: the share every summary and report prints."""

from __future__ import annotations

import pytest

from rampart.core._stats import percent


class TestPercent:
    @pytest.mark.parametrize(
        ("value", "digits", "text"),
        [
            (0.9, 0, "90%"),
            (0.8, 1, "80.0%"),
            (1.0, 0, "100%"),
            (0.0, 1, "0.0%"),
            (1996 / 2000, 0, "99.8%"),
            (1999 / 2000, 0, "99.95%"),
            (1999 / 2000, 1, "99.95%"),
            (2 / 3, 0, "67%"),
            (1 / 2000, 0, "0.1%"),
            (1 / 20000, 0, "0.01%"),
            (0.001, 1, "0.1%"),
        ],
    )
    def test_never_claims_all_or_nothing(self, value: float, digits: int, text: str) -> None:
        """Only exactly 1 is 100 % and only exactly 0 is 0 %; otherwise ``digits`` decimals."""
        assert percent(value, digits=digits) == text
