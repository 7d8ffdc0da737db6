"""Token-bucket arithmetic shared by every backend (pure functions, no clock of its own).

The bucket works by *reservation*: every request takes a token at once, even when the
bucket is empty, and the balance may go negative. The caller then waits
``-balance / rate`` seconds before using its token. One atomic read-modify-write per
request therefore decides both "may I go" and "when", which is what lets a file lock
or one Redis script make the decision for many processes, and queued callers are
served in arrival order instead of polling and racing for each refilled token.

Guarantee: the grant times (``now + wait``) of any set of reservations against one
bucket satisfy ``count(grants in [t0, t1]) <= burst + rate * (t1 - t0)``.

A clock that steps backwards (state written under another clock, e.g. a limiter
reused across trio runs, whose clocks have random offsets) refills nothing and
restamps the bucket, so the bucket never stalls waiting for the old clock to come back.
"""

from __future__ import annotations

import attrs

__all__ = ["BucketState", "reserve"]


@attrs.frozen(kw_only=True)
class BucketState:
    """A bucket's balance (``tokens``, may be negative: reserved ahead) at time ``stamp``."""

    tokens: float
    stamp: float


def reserve(
    state: BucketState | None, *, now: float, rate: float, burst: int
) -> tuple[BucketState, float]:
    """Take one token at ``now``; return the new state and the seconds to wait for it.

    ``state`` ``None`` is a fresh (full) bucket.
    """
    if state is None:
        tokens = float(burst)
    else:
        tokens = state.tokens
        elapsed = now - state.stamp
        if elapsed > 0.0:
            tokens = min(float(burst), tokens + elapsed * rate)
        else:
            # Never let a full bucket grow past ``burst`` even when no time passed.
            tokens = min(float(burst), tokens)
    tokens -= 1.0
    wait = -tokens / rate if tokens < 0.0 else 0.0
    return BucketState(tokens=tokens, stamp=now), wait
