"""``LimitSettings``: what one limiter was asked to be, checked once for every entry point.

``limit(adapter, ...)`` and the httpx transports take the same options; this module
checks them (naming the option and what was expected) and says whether two requests
for one name ask for the same limiter (``differences``): a name is one limiter per run,
so two different settings for it cannot both hold.
"""

from __future__ import annotations

import attrs

from rampart._checks import (
    check_bool,
    check_optional_int,
    check_optional_number,
    check_seconds,
    check_text,
    invalid,
)
from rampart.limits._backends import FileBackend, LimitBackend, StateBackend
from rampart.limits._policy._limiter_core import DEFAULT_MAX_RETRY_AFTER, DEFAULT_RETRY_BUDGET
from rampart.limits._redis import RedisBackend

__all__ = ["LimitSettings", "check_settings", "differences", "same_backend"]

_BACKEND = "a LimitBackend (MemoryBackend, FileBackend, RedisBackend, ...)"
_STATE_BACKEND = (
    "a backend with transact() (MemoryBackend, FileBackend, RedisBackend) for a learned "
    "rate (adaptive=True)"
)


@attrs.frozen(kw_only=True)
class LimitSettings:
    """One limiter's options, checked (see ``limit()`` for each).

    ``burst`` is ``1`` for a fixed bucket given none; ``backend`` is the one passed
    (``None``: the run's ``default_backend()`` when there is a bucket, none otherwise).
    """

    name: str
    rate: float | None
    burst: int | None
    max_concurrency: int | None
    adaptive: bool
    max_retries: int | None
    retry_budget: float
    max_retry_after: float
    backend: LimitBackend | None = attrs.field(eq=False)

    @property
    def bucket(self) -> bool:
        """Whether requests take a token (a rate given, or learned)."""
        return self.rate is not None or self.adaptive


_COMPARED = (
    "rate",
    "burst",
    "max_concurrency",
    "adaptive",
    "max_retries",
    "retry_budget",
    "max_retry_after",
)


def check_settings(
    owner: str,
    *,
    name: object,
    rate: object = None,
    burst: object = None,
    max_concurrency: object = None,
    adaptive: object = False,
    max_retries: object = None,
    retry_budget: object = DEFAULT_RETRY_BUDGET,
    max_retry_after: object = DEFAULT_MAX_RETRY_AFTER,
    backend: object = None,
) -> LimitSettings:
    """The settings, or an error naming the first bad option (``owner`` says whose)."""
    checked_concurrency = check_optional_int(owner, "max_concurrency", max_concurrency, minimum=1)
    checked_rate = check_optional_number(owner, "rate", rate, above=0)
    checked_burst = check_optional_int(owner, "burst", burst, minimum=1)
    checked_adaptive = check_bool(owner, "adaptive", adaptive)
    checked_retries = check_optional_int(owner, "max_retries", max_retries, minimum=0)
    budget = check_seconds(owner, "retry_budget", retry_budget)
    longest = check_seconds(owner, "max_retry_after", max_retry_after, positive=True)
    checked_name = check_text(owner, "name", name)
    if backend is not None and not isinstance(backend, LimitBackend):
        raise invalid(owner, "backend", f"{_BACKEND} or None", backend)
    if checked_rate is None and not checked_adaptive:
        if checked_burst is not None:
            raise ValueError(
                f"{owner}: burst={burst!r} needs rate (or adaptive=True); pass rate= as well"
            )
        if backend is not None:
            raise ValueError(
                f"{owner}: backend holds the token bucket and needs rate (or adaptive=True); "
                "pass rate= as well"
            )
    elif checked_burst is None and not checked_adaptive:
        checked_burst = 1
    if checked_adaptive and backend is not None and not isinstance(backend, StateBackend):
        raise invalid(owner, "backend", _STATE_BACKEND, backend)
    return LimitSettings(
        name=checked_name,
        rate=checked_rate,
        burst=checked_burst,
        max_concurrency=checked_concurrency,
        adaptive=checked_adaptive,
        max_retries=checked_retries,
        retry_budget=budget,
        max_retry_after=longest,
        backend=backend,
    )


def same_backend(first: LimitBackend | None, second: LimitBackend | None) -> bool:
    """Whether two backends hold the same buckets: the same object, or a
    ``FileBackend`` of the same directory, or a ``RedisBackend`` of the same server
    and prefix (a process makes a new one per use of the environment's setting)."""
    if first is second:
        return True
    if isinstance(first, FileBackend) and isinstance(second, FileBackend):
        return first.directory.resolve() == second.directory.resolve()
    if isinstance(first, RedisBackend) and isinstance(second, RedisBackend):
        return first.description == second.description and first.prefix == second.prefix
    return False


def differences(
    have: LimitSettings, have_backend: LimitBackend | None, want: LimitSettings
) -> list[str]:
    """What ``want`` asks for that the limiter ``have`` (on ``have_backend``) is not,
    as ``"rate=10 (it has rate=None)"`` items; empty when they agree. ``want``'s
    backend ``None`` means the run's default, which the caller compares beforehand."""
    found = [
        f"{field}={getattr(want, field)!r} (it has {field}={getattr(have, field)!r})"
        for field in _COMPARED
        if getattr(want, field) != getattr(have, field)
    ]
    if want.backend is not None and not same_backend(want.backend, have_backend):
        shown = "none" if have_backend is None else have_backend.description
        found.append(
            f"backend={want.backend!r} (it has another backend: {shown}; pass the same "
            "instance, or a FileBackend or RedisBackend of the same place)"
        )
    return found
