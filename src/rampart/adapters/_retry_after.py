"""Reading how long a server asks us to wait: ``retry-after-ms`` and ``Retry-After``."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["parse_retry_after"]


# RFC 9110 delay-seconds is 1*DIGIT, and DIGIT is ASCII 0-9. A fraction is tolerated
# (some servers send one); float() alone would also take "1_000", "1e3", "+5", "nan" and
# any Unicode decimal digits (Arabic-Indic, fullwidth), none of which a server means.
_DELAY = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _seconds(text: str) -> float | None:
    if _DELAY.fullmatch(text) is None:
        return None
    value = float(text)
    return value if math.isfinite(value) else None  # 400 digits overflow to inf


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait before retrying, or ``None`` when the headers do not say (validly).

    ``retry-after-ms`` (milliseconds, sent by OpenAI-style APIs) wins when it is a valid
    number; otherwise ``Retry-After`` is read as delta-seconds or as an HTTP date
    (RFC 9110 §10.2.3), a date in the past meaning ``0.0``. A number is ASCII digits
    with an optional fraction (``"2"``, ``"2.5"``); anything else (``"1_000"``,
    ``"1e3"``, ``"-1"``, non-ASCII digits) is not valid. Header names are matched
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
