"""Endpoints that never answered: stop calling them after a few refused connections.

A run against an endpoint that is down (a server never started, a wrong port, a judge
unreachable) would otherwise try every request of every trial clone, each retried with
backoff by its limiter, to record the same ERROR for each: tens of seconds of identical
failures. This module remembers, per origin (``scheme://host:port``) in this process,
connections that were refused (nothing was ever reached: a ``ConnectError``) while the
origin has **never answered**. After ``UNREACHABLE_AFTER`` such refusals in a row, the
next request fails at once with a non-transient ``InfrastructureError`` (no retry, no
connection) that says why.

It cannot change a verdict that could have been reached: it only acts on an origin that
has not answered a single request in this process, so every result that depended on it
was an ERROR already. An origin that answered once (any HTTP status) is never cut off:
a flapping endpoint keeps being retried as before. A cut-off origin is still tried once
every ``RETRY_SECONDS`` (a server started late, a port taken by a new server in a
long-lived process): the first answer ends the cut-off for good. A server that is still
starting when the run starts should be waited for before the run (its first requests
would be refused).
"""

from __future__ import annotations

import time

import attrs

from rampart.core.errors import InfrastructureError

__all__ = ["RETRY_SECONDS", "UNREACHABLE_AFTER", "answered", "check", "refused", "unreachable"]

#: Refused connections in a row, from an origin that never answered, before it is cut off.
UNREACHABLE_AFTER = 5

#: How often a cut-off origin is still tried (one request through), in seconds.
RETRY_SECONDS = 10.0


@attrs.define
class _Origin:
    refused: int = 0
    answered: bool = False
    tried_at: float = 0.0  # when the last request was let through (time.monotonic())


_ORIGINS: dict[str, _Origin] = {}


def _origin(url: str) -> str:
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return f"{scheme}://{host}"


def check(url: str, where: str) -> None:
    """Raise the "unreachable" error for ``url``'s origin once it was cut off."""
    state = _ORIGINS.get(_origin(url))
    if state is None or state.answered or state.refused < UNREACHABLE_AFTER:
        return
    now = time.monotonic()
    if now - state.tried_at >= RETRY_SECONDS:
        state.tried_at = now  # one request through, in case it is up now
        return
    raise InfrastructureError(
        f"{where}: unreachable: {UNREACHABLE_AFTER} or more connections to it were refused "
        "and it has not answered once in this run, so rampart stopped calling it (is the "
        "server running, and is the URL right?)"
    )


def refused(url: str) -> None:
    """A connection to ``url`` was refused (nothing reached)."""
    state = _ORIGINS.setdefault(_origin(url), _Origin())
    state.refused += 1
    if state.refused == UNREACHABLE_AFTER:
        state.tried_at = time.monotonic()


def answered(url: str) -> None:
    """``url``'s origin answered (any HTTP status): never cut it off."""
    state = _ORIGINS.get(_origin(url))
    if state is None:
        _ORIGINS[_origin(url)] = _Origin(answered=True)
    elif not state.answered:
        state.answered = True
        state.refused = 0


def unreachable() -> list[tuple[str, int]]:
    """The origins cut off in this process, each with its refused connections."""
    return [
        (origin, state.refused)
        for origin, state in _ORIGINS.items()
        if not state.answered and state.refused >= UNREACHABLE_AFTER
    ]
