"""Reading how long a server asks us to wait: ``retry-after-ms`` and ``Retry-After``."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["parse_retry_after"]


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0:
        return None
    return value


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait before retrying, or ``None`` when the headers do not say (validly).

    ``retry-after-ms`` (milliseconds, sent by OpenAI-style APIs) wins when it is a valid
    number; otherwise ``Retry-After`` is read as delta-seconds or as an HTTP date
    (RFC 9110 §10.2.3), a date in the past meaning ``0.0``. Header names are matched
    case-insensitively; ``now`` (UTC) is for tests.
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        value = _seconds(milliseconds.strip())
        if value is not None:
            return value / 1000.0
    text = lowered.get("retry-after")
    if text is None:
        return None
    text = text.strip()
    value = _seconds(text)
    if value is not None:
        return value
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = now if now is not None else datetime.now(UTC)
    return max(0.0, (when - current).total_seconds())
