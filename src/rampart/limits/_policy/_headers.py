"""What an agent says about its rate limit: its headers read into a ``RateLimitSignal``.

An agent's HTTP answers often say more than "429": how long to wait (``Retry-After``,
``retry-after-ms``) and, on *every* answer, how much of its quota is left. This module
reads those headers (pure, and in linear time: a header value is scanned once, and
values above ``MAX_HEADER_CHARS`` are not read). The channel that carries signals from
an adapter to its limiter is ``rampart.limits._signals``.

Headers read (names case-insensitive; unparseable or negative values are ignored):

* ``retry-after-ms`` (milliseconds), else ``Retry-After`` (delta-seconds or an HTTP
  date, RFC 9110 §10.2.3; a date in the past means ``0``);
* OpenAI / Azure OpenAI: ``x-ratelimit-limit-requests``, ``x-ratelimit-remaining-requests``,
  ``x-ratelimit-reset-requests`` and the same three for ``-tokens``. The reset value is
  a duration such as ``"12ms"``, ``"1.5s"``, ``"6m0s"`` or plain seconds, and means "time
  until the quota is full again", so a quota drained by ``limit - remaining`` refills
  at ``(limit - remaining) / reset`` units per second;
* IETF ``draft-ietf-httpapi-ratelimit-headers``: ``RateLimit-Policy: "p";q=100;w=10``
  (a quota of ``q`` units per ``w`` seconds: ``q / w`` per second) with
  ``RateLimit: "p";r=50;t=30`` (``r`` remaining), the unit from ``qu`` (default
  requests); and the earlier drafts' ``RateLimit-Limit`` / ``RateLimit-Remaining`` /
  ``RateLimit-Reset`` with ``RateLimit-Policy: 10;w=1``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import attrs

__all__ = [
    "HEADROOM_MIN_LIMIT",
    "Quota",
    "RateLimitSignal",
    "parse_duration",
    "parse_rate_limit_headers",
    "parse_retry_after",
]

HEADROOM_MIN_LIMIT = 20.0
"""Quotas smaller than this say nothing useful through ``remaining / limit`` (a bucket
of one request is always "empty" right after a request), so ``headroom`` ignores them."""

Headers = Mapping[str, str] | Iterable[tuple[str, str]]


@attrs.frozen(kw_only=True)
class Quota:
    """One rate-limit policy as the agent described it.

    ``unit``: ``"requests"``, ``"tokens"`` or another unit the agent named;
    ``limit``: the quota (units per ``window`` seconds, or a bucket's capacity);
    ``remaining``: units left now; ``reset``: seconds until the quota is full again
    (OpenAI) or until more quota is available (IETF); ``window``: the seconds
    ``limit`` applies to, when the agent said; ``source``: ``"openai"`` or ``"ietf"``.
    Every number is ``None`` when the agent did not give it.
    """

    unit: str
    source: str
    limit: float | None = None
    remaining: float | None = None
    reset: float | None = None
    window: float | None = None

    @property
    def rate(self) -> float | None:
        """Units per second this quota sustains, when the headers imply it.

        ``limit / window`` when the window is known; for OpenAI-style headers a drained
        quota refills at ``(limit - remaining) / reset``; else ``None``.
        """
        if self.limit is not None and self.window is not None and self.window > 0:
            return self.limit / self.window if self.limit > 0 else None
        if (
            self.source == "openai"
            and self.limit is not None
            and self.remaining is not None
            and self.reset is not None
            and self.reset > 0
            and self.limit > self.remaining
        ):
            return (self.limit - self.remaining) / self.reset
        return None

    @property
    def headroom(self) -> float | None:
        """``remaining / limit`` for quotas of at least ``HEADROOM_MIN_LIMIT`` units."""
        if self.limit is None or self.remaining is None or self.limit < HEADROOM_MIN_LIMIT:
            return None
        return max(0.0, min(1.0, self.remaining / self.limit))


@attrs.frozen(kw_only=True)
class RateLimitSignal:
    """Everything one answer said about the agent's rate limit.

    ``retry_after``: seconds the agent asked the client to wait (``None``: not said);
    ``quotas``: the policies it described.
    """

    retry_after: float | None = None
    quotas: tuple[Quota, ...] = ()

    @property
    def request_rate(self) -> float | None:
        """The lowest request rate (per second) any request quota implies, if any."""
        rates = [q.rate for q in self.quotas if q.unit == "requests" and q.rate is not None]
        return min(rates) if rates else None

    @property
    def request_capacity(self) -> float | None:
        """The smallest request bucket's size (its ``limit``): the most requests the agent
        accepts at once from a full bucket, if any request quota gave one.

        Only quotas without a ``window`` (OpenAI's ``limit`` / ``remaining`` / ``reset``
        describe a bucket): a quota per window (IETF's ``q`` per ``w``) says how much
        the window holds, not how much of it may come at once.
        """
        limits = [
            q.limit
            for q in self.quotas
            if q.unit == "requests" and q.window is None and q.limit is not None and q.limit > 0
        ]
        return min(limits) if limits else None

    @property
    def headroom(self) -> float | None:
        """The smallest ``remaining / limit`` over quotas large enough to tell."""
        values = [q.headroom for q in self.quotas if q.headroom is not None]
        return min(values) if values else None

    def __bool__(self) -> bool:
        return self.retry_after is not None or bool(self.quotas)


# ----------------------------------------------------------------------- parsing


# RFC 9110 delay-seconds is 1*DIGIT, and DIGIT is ASCII 0-9. A fraction is tolerated
# (some servers send one); float() alone would also take "1_000", "1e3", "+5", "nan" and
# any Unicode decimal digits (Arabic-Indic, fullwidth), none of which a server means.
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _number(text: str | None) -> float | None:
    if text is None:
        return None
    text = text.strip()
    if _NUMBER.fullmatch(text) is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None  # 400 digits overflow to inf


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(h|ms|us|µs|μs|ns|m|s)")
_UNITS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "μs": 1e-6}
_UNITS["ns"] = 1e-9


def parse_duration(text: str) -> float | None:
    """Seconds in ``"12ms"``, ``"1.5s"``, ``"6m0s"``, ``"1h2m3s"`` (Go-style durations)
    or a plain number of seconds; ``None`` when it is neither."""
    text = text.strip()
    plain = _number(text)
    if plain is not None:
        return plain
    position = 0
    total = 0.0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            return None
        total += float(match.group(1)) * _UNITS[match.group(2)]
        position = match.end()
    if position == 0 or position != len(text):
        return None
    return total


def parse_retry_after(headers: Headers, *, now: datetime | None = None) -> float | None:
    """Seconds to wait before retrying, or ``None`` when the headers do not say (validly).

    ``retry-after-ms`` wins when it is a valid number; otherwise ``Retry-After`` is
    read as delta-seconds or as an HTTP date (a date in the past means ``0.0``).
    ``now`` (UTC) is for tests.
    """
    return _retry_after(_lowered(headers), now=now)


def _lowered(headers: Headers) -> dict[str, str]:
    items = headers.items() if isinstance(headers, Mapping) else headers
    lowered: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        # Repeated fields combine into one comma-separated list (RFC 9110 §5.3).
        lowered[key] = f"{lowered[key]}, {value}" if key in lowered else value
    return lowered


def _retry_after(lowered: Mapping[str, str], *, now: datetime | None) -> float | None:
    milliseconds = _number(lowered.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000.0
    text = lowered.get("retry-after")
    if text is None:
        return None
    seconds = _number(text)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(text.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now if now is not None else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())


def _openai(lowered: Mapping[str, str]) -> list[Quota]:
    quotas = []
    for unit in ("requests", "tokens"):
        limit = _number(lowered.get(f"x-ratelimit-limit-{unit}"))
        remaining = _number(lowered.get(f"x-ratelimit-remaining-{unit}"))
        reset_text = lowered.get(f"x-ratelimit-reset-{unit}")
        reset = parse_duration(reset_text) if reset_text is not None else None
        if limit is None and remaining is None:
            continue
        quotas.append(
            Quota(unit=unit, source="openai", limit=limit, remaining=remaining, reset=reset)
        )
    return quotas


# A tolerant reader for the structured-field lists the IETF draft uses
# (RFC 8941): members separated by commas, each an item followed by ;key=value
# parameters. Strings may hold commas and semicolons, so split outside quotes, in one
# pass (linear time: a header of 60,000 commas is read in milliseconds).
MAX_HEADER_CHARS = 8192
"""Longer header values are not read (no real policy header comes near it)."""

MAX_MEMBERS = 64
"""At most this many list members (and parameters per member) are read."""


def _split_outside_quotes(text: str, separator: str, limit: int) -> list[str]:
    """``text`` split at ``separator`` where it stands outside double quotes (a
    backslash escapes the next character inside them); at most ``limit`` parts."""
    parts: list[str] = []
    start = 0
    quoted = False
    escaped = False
    for index, char in enumerate(text):
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == separator and not quoted:
            parts.append(text[start:index])
            start = index + 1
            if len(parts) >= limit:
                return parts
    parts.append(text[start:])
    return parts[:limit]


def _sf_value(text: str) -> str | float | None:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    if text.startswith((":", "?")):
        return text  # byte sequences and booleans: kept as text, never used as numbers
    number = _number(text)
    return number if number is not None else (text or None)


def _sf_list(text: str) -> list[tuple[str | float | None, dict[str, str | float | None]]]:
    members: list[tuple[str | float | None, dict[str, str | float | None]]] = []
    if len(text) > MAX_HEADER_CHARS:
        return members
    for member in _split_outside_quotes(text, ",", MAX_MEMBERS):
        if not member.strip():
            continue
        head, *params = _split_outside_quotes(member, ";", MAX_MEMBERS)
        parameters: dict[str, str | float | None] = {}
        for param in params:
            key, _, raw = param.partition("=")
            parameters[key.strip().lower()] = _sf_value(raw) if raw else None
        members.append((_sf_value(head), parameters))
    return members


def _float(value: object) -> float | None:
    return value if isinstance(value, float) else None


def _ietf(lowered: Mapping[str, str]) -> list[Quota]:
    policies = _sf_list(lowered.get("ratelimit-policy", ""))
    current = _sf_list(lowered.get("ratelimit", ""))
    quotas = []
    # Draft 07 and later: named policies, joined with RateLimit items by name.
    remaining: dict[str, tuple[float | None, float | None]] = {}
    for name, params in current:
        if isinstance(name, str):
            remaining[name] = (_float(params.get("r")), _float(params.get("t")))
    named = False
    for name, params in policies:
        if not isinstance(name, str) or "q" not in params:
            continue
        named = True
        unit = params.get("qu")
        r, t = remaining.pop(name, (None, None))
        quotas.append(
            Quota(
                unit=unit if isinstance(unit, str) else "requests",
                source="ietf",
                limit=_float(params.get("q")),
                remaining=r,
                reset=t,
                window=_float(params.get("w")),
            )
        )
    for r, t in remaining.values():  # RateLimit items without a policy
        quotas.append(Quota(unit="requests", source="ietf", remaining=r, reset=t))
    if named:
        return quotas
    # Earlier drafts: RateLimit-Limit / -Remaining / -Reset, policy "10;w=1".
    window = None
    policy_limit = None
    for head, params in policies:
        if isinstance(head, float):
            policy_limit = head if policy_limit is None else min(policy_limit, head)
            window = _float(params.get("w"))
            break
    limit = _number(lowered.get("ratelimit-limit", "").split(",")[0] or None)
    left = _number(lowered.get("ratelimit-remaining", "").split(",")[0] or None)
    reset = _number(lowered.get("ratelimit-reset", "").split(",")[0] or None)
    if limit is None:
        limit = policy_limit
    if limit is not None or left is not None:
        quotas.append(
            Quota(
                unit="requests",
                source="ietf",
                limit=limit,
                remaining=left,
                reset=reset,
                window=window,
            )
        )
    return quotas


def parse_rate_limit_headers(
    headers: Headers, *, now: datetime | None = None
) -> RateLimitSignal | None:
    """The rate-limit information in ``headers`` (a mapping or ``(name, value)`` pairs),
    or ``None`` when there is none. ``now`` (UTC) is for tests of HTTP-date
    ``Retry-After`` values."""
    lowered = _lowered(headers)
    signal = RateLimitSignal(
        retry_after=_retry_after(lowered, now=now),
        quotas=(*_openai(lowered), *_ietf(lowered)),
    )
    return signal if signal else None
