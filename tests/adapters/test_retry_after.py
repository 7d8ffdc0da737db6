from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rampart.adapters import parse_retry_after

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


class TestParseRetryAfter:
    @pytest.mark.parametrize(
        ("headers", "expected"),
        [
            ({"Retry-After": "7"}, 7.0),
            ({"retry-after": " 0 "}, 0.0),
            ({"Retry-After": "2.5"}, 2.5),
            ({"Retry-After": "Thu, 02 Jan 2025 03:04:35 GMT"}, 30.0),
            ({"Retry-After": "Thu, 02 Jan 2025 03:00:00 GMT"}, 0.0),
            ({"retry-after-ms": "250", "Retry-After": "1"}, 0.25),
            ({"Retry-After-Ms": "bogus", "Retry-After": "3"}, 3.0),
            ({"Retry-After": "-1"}, None),
            ({"Retry-After": "nan"}, None),
            ({"Retry-After": "inf"}, None),
            ({"Retry-After": "soon"}, None),
            ({"Retry-After": ""}, None),
            ({}, None),
            # ASCII digits only (RFC 9110 delay-seconds): what float() also accepts is not
            ({"Retry-After": "1_000"}, None),
            ({"Retry-After": "\u0661\u0660"}, None),  # Arabic-Indic 10
            ({"Retry-After": "\uff13"}, None),  # fullwidth 3
            ({"Retry-After": "1e3"}, None),
            ({"Retry-After": "+5"}, None),
            ({"Retry-After": ".5"}, None),
            ({"Retry-After": "5."}, None),
            ({"retry-after-ms": "2_500", "Retry-After": "4"}, 4.0),
            ({"retry-after-ms": "\u0662\u0665\u0660", "Retry-After": "4"}, 4.0),
            ({"retry-after-ms": "250.5"}, 0.2505),
            ({"Retry-After": "9" * 400}, None),
        ],
    )
    def test_values(self, headers: dict[str, str], expected: float | None) -> None:
        """Seconds and HTTP dates are read, ms wins, invalid or absent values give None."""
        assert parse_retry_after(headers, now=NOW) == expected

    def test_date_without_now_uses_the_clock(self) -> None:
        """An HTTP date far in the future yields a long, positive wait."""
        wait = parse_retry_after({"Retry-After": "Fri, 01 Jan 2100 00:00:00 GMT"})
        assert wait is not None
        assert wait > 365 * 24 * 3600
