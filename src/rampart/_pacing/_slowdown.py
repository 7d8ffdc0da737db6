"""rampart's one "slow down" channel: how the agent's rate-limit news reaches whoever
paces the requests.

Three parties listen, nested in this order: an adaptive trial group (``concurrency=
"auto"``, one listener per running job), then the limiters a request passes through
(``rampart.limits``), innermost last. Whoever learns something reports a ``SlowDown``:

* an adapter reports what an answer's headers said (``signal``: a
  ``rampart.limits.RateLimitSignal``), through ``rampart.limits.report_rate_limit``;
* a limiter (or a custom adapter, through ``rampart.engine.report_throttle``) reports
  that the agent refused a request for its rate (``refused``): a limiter only for a
  refusal it passes on (not retried) or cannot learn from (a fixed limiter); one an
  adaptive limiter retries is its own business (``LimiterCore.passes_on``);
* a limiter reports that it backs off before retrying a failed request
  (``retrying``: a down agent's refused connection, for instance);
* the engine's error boundary reports it when a refusal ends a run (rampart's
  ``RateLimitedError``, or any client's 429 however wrapped, as
  ``rampart.core._failures.classify_failure`` reads it): an unlimited adapter's 429,
  or the agent's own model client's, slows the group down too (``ended_run``).

A refusal a limiter hands back (``handed_back``) that then ends the run is heard twice,
once from each; a listener that counts refusals counts it once (see ``ended_run``).

A report goes to the innermost listener and then outwards to every enclosing one; each
takes what concerns it (a limiter the signals, a trial group the refusals). Outside
any listener a report is a no-op, so anyone may always report. The listener lives in a
context variable, which child tasks inherit.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["SlowDown", "listen", "listening", "report"]


@attrs.frozen(kw_only=True)
class SlowDown:
    """One piece of news: the agent ``refused`` a request for its rate, said something
    about its limit (``signal``, a ``rampart.limits.RateLimitSignal``), or a limiter is
    ``retrying`` a failed request (one short, redacted line saying why: the progress
    line shows it). ``handed_back`` and ``ended_run`` say who reported a refusal."""

    refused: bool = False
    signal: object | None = None
    retrying: str | None = None
    handed_back: bool = False
    """A limiter passes the refusal on to its caller (not retried): it may end the run."""
    ended_run: bool = False
    """The error boundary's report: the refusal ended a run. When a limiter in the same
    job handed a refusal back earlier that no ``ended_run`` report has matched yet, it
    is most likely this one (rampart's transport hands the SDK the refused answer,
    which the SDK raises as its own error, so no exception identity links the two):
    it was counted already."""


_LISTENER: contextvars.ContextVar[Callable[[SlowDown], None] | None] = contextvars.ContextVar(
    "rampart_slowdown_listener", default=None
)


def report(event: SlowDown) -> None:
    """Pass ``event`` to the listeners of this context (innermost first), if any."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(event)


def listening() -> bool:
    """True when a report made here reaches someone (skip costly work otherwise)."""
    return _LISTENER.get() is not None


@contextmanager
def listen(listener: Callable[[SlowDown], None]) -> Iterator[None]:
    """Within the block, reports go to ``listener`` and then to the enclosing ones."""
    outer = _LISTENER.get()
    if outer is None:
        chained = listener
    else:

        def chained(event: SlowDown) -> None:
            listener(event)
            outer(event)

    token = _LISTENER.set(chained)
    try:
        yield
    finally:
        _LISTENER.reset(token)
