"""Rate-limit signals: reading providers' headers, and the channel adapters report on."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime

import pytest

from rampart.limits import (
    Quota,
    RateLimitedError,
    RateLimitSignal,
    parse_rate_limit_headers,
    parse_retry_after,
)

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


class TestRetryAfter:
    @pytest.mark.parametrize(
        ("headers", "expected"),
        [
            ({"Retry-After": "3"}, 3.0),
            ({"retry-after": "0.5"}, 0.5),
            ({"Retry-After": "Wed, 01 Jan 2025 12:00:30 GMT"}, 30.0),
            ({"Retry-After": "Wed, 01 Jan 2025 11:00:00 GMT"}, 0.0),
            ({"Retry-After": "3", "retry-after-ms": "250"}, 0.25),
            ({"Retry-After": "3", "retry-after-ms": "soon"}, 3.0),
            ({"Retry-After": "-1"}, None),
            ({"Retry-After": "later"}, None),
            ({}, None),
        ],
    )
    def test_seconds_dates_and_milliseconds(
        self, headers: dict[str, str], expected: float | None
    ) -> None:
        assert parse_retry_after(headers, now=NOW) == expected


class TestDurations:
    """OpenAI states when a quota is full again as a Go duration (or seconds)."""

    @staticmethod
    def reset(text: str) -> float | None:
        signal = parse_rate_limit_headers(
            {"x-ratelimit-limit-requests": "60", "x-ratelimit-reset-requests": text}
        )
        assert signal is not None
        (quota,) = signal.quotas
        return quota.reset

    @pytest.mark.parametrize(
        ("text", "seconds"),
        [
            ("12ms", 0.012),
            ("1.5s", 1.5),
            ("6m0s", 360.0),
            ("1h2m3s", 3723.0),
            ("250us", 0.00025),
            ("2", 2.0),
            ("0s", 0.0),
        ],
    )
    def test_go_durations_and_seconds(self, text: str, seconds: float) -> None:
        assert self.reset(text) == pytest.approx(seconds)

    @pytest.mark.parametrize("text", ["", "soon", "5x", "1s soon", "ms"])
    def test_nonsense(self, text: str) -> None:
        assert self.reset(text) is None


class TestProviderHeaders:
    def test_openai(self) -> None:
        """RPM 5000 with one used and 12 ms to full: 5000 / 60 per second."""
        signal = parse_rate_limit_headers(
            {
                "x-ratelimit-limit-requests": "5000",
                "x-ratelimit-remaining-requests": "4999",
                "x-ratelimit-reset-requests": "12ms",
                "x-ratelimit-limit-tokens": "160000",
                "x-ratelimit-remaining-tokens": "159976",
                "x-ratelimit-reset-tokens": "9ms",
            }
        )
        assert signal is not None
        requests, tokens = signal.quotas
        assert (requests.unit, requests.limit, requests.remaining) == ("requests", 5000, 4999)
        assert requests.rate == pytest.approx(1 / 0.012)
        assert tokens.unit == "tokens"
        assert signal.request_rate == pytest.approx(1 / 0.012)
        assert signal.headroom == pytest.approx(4999 / 5000)

    def test_azure_unknown_values_are_ignored(self) -> None:
        """Azure answers -1 for quotas it does not report."""
        signal = parse_rate_limit_headers(
            {"x-ratelimit-limit-tokens": "-1", "x-ratelimit-remaining-tokens": "-1"}
        )
        assert signal is None

    def test_a_full_quota_states_no_rate(self) -> None:
        quota = Quota(unit="requests", source="openai", limit=10, remaining=10, reset=0.0)
        assert quota.rate is None

    def test_ietf_structured_fields(self) -> None:
        """RateLimit-Policy q per w seconds, joined with RateLimit by policy name."""
        signal = parse_rate_limit_headers(
            [
                ("RateLimit-Policy", '"burst";q=100;w=60, "daily";q=1000;w=86400'),
                ("RateLimit", '"burst";r=50;t=30'),
                ("RateLimit", '"daily";r=999;t=3600'),
            ]
        )
        assert signal is not None
        burst, daily = signal.quotas
        assert (burst.limit, burst.window, burst.remaining, burst.reset) == (100, 60, 50, 30)
        assert daily.remaining == 999
        assert signal.request_rate == pytest.approx(1000 / 86400)
        assert signal.headroom == pytest.approx(0.5)

    def test_ietf_other_units_do_not_state_a_request_rate(self) -> None:
        signal = parse_rate_limit_headers(
            {"RateLimit-Policy": '"bytes";q=65535;qu="content-bytes";w=10'}
        )
        assert signal is not None
        assert signal.quotas[0].unit == "content-bytes"
        assert signal.request_rate is None

    def test_earlier_ietf_drafts(self) -> None:
        signal = parse_rate_limit_headers(
            {
                "RateLimit-Limit": "10",
                "RateLimit-Remaining": "4",
                "RateLimit-Reset": "1",
                "RateLimit-Policy": "10;w=1",
            }
        )
        assert signal is not None
        (quota,) = signal.quotas
        assert (quota.limit, quota.remaining, quota.reset, quota.window) == (10, 4, 1, 1)
        assert signal.request_rate == 10.0

    def test_nothing_to_say(self) -> None:
        assert parse_rate_limit_headers({"content-type": "application/json"}) is None

    def test_retry_after_is_part_of_the_signal(self) -> None:
        signal = parse_rate_limit_headers({"Retry-After": "2"})
        assert signal == RateLimitSignal(retry_after=2.0)


class TestRateLimitedErrorSignal:
    def test_carries_and_pickles_its_signal(self) -> None:
        signal = RateLimitSignal(
            retry_after=1.0, quotas=(Quota(unit="requests", source="ietf", limit=5, window=1),)
        )
        error = RateLimitedError("429", retry_after=1.0, signal=signal)
        copy = pickle.loads(pickle.dumps(error))
        assert copy.signal == signal
        assert copy.retry_after == 1.0

    def test_signal_must_be_a_signal(self) -> None:
        with pytest.raises(TypeError, match=r"^RateLimitedError: signal must be a RateLimitSignal"):
            RateLimitedError("429", signal={"retry_after": 1})  # type: ignore[arg-type]


class TestRequestCapacity:
    def test_the_smallest_request_bucket(self) -> None:
        signal = RateLimitSignal(
            quotas=(
                Quota(unit="requests", source="openai", limit=50, remaining=3, reset=1.0),
                Quota(unit="requests", source="openai", limit=10, remaining=3, reset=1.0),
                Quota(unit="tokens", source="openai", limit=5, remaining=3, reset=1.0),
            )
        )
        assert signal.request_capacity == 10

    @pytest.mark.parametrize(
        "quota",
        [
            Quota(unit="tokens", source="openai", limit=10, remaining=3),
            Quota(unit="requests", source="ietf", limit=100, remaining=3, window=10),
            Quota(unit="requests", source="openai", remaining=3),
            Quota(unit="requests", source="openai", limit=0, remaining=0),
        ],
        ids=["tokens", "a window quota", "no limit", "zero"],
    )
    def test_none_stated(self, quota: Quota) -> None:
        assert RateLimitSignal(quotas=(quota,)).request_capacity is None

    def test_read_from_openai_headers(self) -> None:
        signal = parse_rate_limit_headers(
            {
                "x-ratelimit-limit-requests": "10",
                "x-ratelimit-remaining-requests": "9",
                "x-ratelimit-reset-requests": "5ms",
            }
        )
        assert signal.request_capacity == 10


class TestHostileHeaders:
    @pytest.mark.parametrize(
        "value",
        [",", '"', ";", "a;", '",', '"p";q=1, '],
    )
    def test_huge_policy_headers_are_read_in_linear_time(self, value: str) -> None:
        """A ``RateLimit-Policy`` of 600,000 separators (60,000 took 8.4 s in the old
        quadratic regex, freezing the event loop; this many would take about 14
        minutes) is refused at once; one just under the size limit is read in one
        pass. A thread with a generous deadline, so a loaded machine cannot fail it
        while a quadratic parser still would."""
        import threading

        headers = [
            {"RateLimit-Policy": value * 600_000, "RateLimit": value * 600_000},
            {"RateLimit-Policy": (value * 8192)[:8192], "RateLimit": (value * 8192)[:8192]},
        ]
        done: list[object] = []
        worker = threading.Thread(
            target=lambda: done.extend(parse_rate_limit_headers(h) for h in headers)
        )
        worker.start()
        worker.join(timeout=60)
        assert len(done) == 2

    def test_quoted_separators_still_split_correctly(self) -> None:
        signal = parse_rate_limit_headers(
            {"RateLimit-Policy": '"a,b;c";q=100;w=10', "RateLimit": '"a,b;c";r=5;t=2'}
        )
        assert signal is not None
        (quota,) = signal.quotas
        assert (quota.limit, quota.window, quota.remaining, quota.reset) == (100.0, 10.0, 5.0, 2.0)
