"""``limit(adapter, ...)``: an adapter whose sessions send through the name's limiter.

``LimitedAdapter`` is a thin wrapper: the wrapped adapter is its own, and everything
that paces, bounds and retries is the run's ``Limiter`` of its name
(``rampart.limits._shell``, found through ``rampart.limits._registry``). So wrapping the
agent once per trial clone (a function-scoped fixture) or once per run is the same: one
bucket, one learned rate, one window, one set of statistics per name. The wrapper finds
its limiter in the run that is current when it is used (a wrapper kept across pytest
sessions, an LLM client's, uses each session's own).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Self, final

import anyio

from rampart._checks import check_callable, invalid
from rampart.core._internal import (
    check_entered,
    create_session,
    enter_session,
    exit_session,
    send_checked,
)
from rampart.core.adapter import AgentAdapter, Session
from rampart.core.errors import AdapterContractError
from rampart.limits._policy._limiter_core import DEFAULT_MAX_RETRY_AFTER, DEFAULT_RETRY_BUDGET
from rampart.limits._registry import Bound
from rampart.limits._settings import check_settings

if TYPE_CHECKING:
    import random
    from collections.abc import Callable
    from types import TracebackType

    from rampart import _runs
    from rampart.core.manifest import AppManifest
    from rampart.core.types import ObservabilityLevel, Request, Response
    from rampart.limits._backends import LimitBackend
    from rampart.limits._shell import Limiter
    from rampart.limits._stats import LimiterStatistics

__all__ = ["LimitedAdapter", "LimitedSession", "limit"]

_OWNER = "limit()"
_ADAPTER = "an AgentAdapter (create_session_async, manifest, observability_profile)"
_CLOCK = "a callable returning seconds"


@final
class LimitedAdapter:
    """An ``AgentAdapter`` whose sessions send through a limiter; build it with ``limit()``.

    ``manifest`` and ``observability_profile`` are the wrapped adapter's. The limiter
    (``limiter``: slots, window, bucket, counters) is the run's one for ``name``,
    shared with every other ``limit()`` and transport of that name.
    """

    _adapter: AgentAdapter
    _bound: Bound

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("LimitedAdapter is built by rampart.limits.limit(adapter, ...)")

    @classmethod
    def _create(cls, *, adapter: AgentAdapter, bound: Bound) -> LimitedAdapter:
        self = object.__new__(cls)
        self._adapter = adapter
        self._bound = bound
        return self

    def __repr__(self) -> str:
        settings = self._bound.settings
        return (
            f"LimitedAdapter({self._adapter!r}, name={settings.name!r}, rate={settings.rate!r}, "
            f"burst={settings.burst!r}, max_concurrency={settings.max_concurrency!r}, "
            f"adaptive={settings.adaptive!r})"
        )

    # -- AgentAdapter ----------------------------------------------------------------

    @property
    def manifest(self) -> AppManifest:
        return self._adapter.manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return self._adapter.observability_profile

    async def create_session_async(self) -> LimitedSession:
        # The engine checks only this wrapper; the wrapped adapter gets the same checks here.
        inner = await create_session(self._adapter)
        return LimitedSession._create(limiter=self, inner=inner)

    # -- configuration ---------------------------------------------------------------

    @property
    def adapter(self) -> AgentAdapter:
        """The wrapped adapter."""
        return self._adapter

    @property
    def limiter(self) -> Limiter:
        """The run's limiter of this name (shared with every ``limit()`` and transport
        of the name)."""
        return self._bound.limiter

    @property
    def name(self) -> str:
        """The limiter's name: the bucket key, shared across processes that use the
        same backend, and one limiter per run."""
        return self._bound.settings.name

    @property
    def rate(self) -> float | None:
        """The ``rate=`` given: the fixed rate, or with ``adaptive=True`` the learned
        rate's starting point and ceiling (``None``: not given)."""
        return self._bound.settings.rate

    @property
    def burst(self) -> int | None:
        """The bucket's capacity (``None``: no bucket, or with ``adaptive=True`` and no
        ``burst=`` given, learned: see ``statistics().learned.burst``)."""
        return self._bound.settings.burst

    @property
    def max_concurrency(self) -> int | None:
        return self._bound.settings.max_concurrency

    @property
    def adaptive(self) -> bool:
        return self._bound.settings.adaptive

    @property
    def max_retries(self) -> int | None:
        return self._bound.settings.max_retries

    @property
    def retry_budget(self) -> float:
        """Seconds a request may spend failing while it is retried (see ``limit()``)."""
        return self._bound.settings.retry_budget

    @property
    def max_retry_after(self) -> float:
        """The longest ``Retry-After`` honoured; a longer one fails the request at once."""
        return self._bound.settings.max_retry_after

    @property
    def backend(self) -> LimitBackend | None:
        """Where the token bucket lives (``None`` without one: no ``rate`` and not
        ``adaptive``)."""
        return self._bound.limiter.backend

    def statistics(self) -> LimiterStatistics:
        """The limiter's statistics (``Limiter.statistics``): every user of the name in
        this process counted together."""
        return self._bound.limiter.statistics()


@final
class LimitedSession:
    """A wrapped session whose ``send_async`` goes through its adapter's limiter."""

    __slots__ = ("_active", "_inner", "_limiter")

    _limiter: LimitedAdapter
    _inner: Session
    _active: Session | None

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise TypeError("LimitedSession is created by LimitedAdapter.create_session_async()")

    @classmethod
    def _create(cls, *, limiter: LimitedAdapter, inner: Session) -> LimitedSession:
        self = object.__new__(cls)
        self._limiter = limiter
        self._inner = inner
        self._active = None
        return self

    def __repr__(self) -> str:
        return f"LimitedSession({self._inner!r}, limiter={self._limiter.name!r})"

    @property
    def inner(self) -> Session:
        """The wrapped adapter's session."""
        return self._inner

    async def __aenter__(self) -> Self:
        inner = self._inner
        entered = await enter_session(inner)
        try:
            self._active = check_entered(inner, entered)
        except AdapterContractError:
            with anyio.CancelScope(shield=True):
                await exit_session(inner, None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await exit_session(self._inner, exc_type, exc, tb)

    async def send_async(self, request: Request) -> Response:
        target = self._active if self._active is not None else self._inner
        return await self._limiter.limiter.call(functools.partial(send_checked, target, request))


def limit(
    adapter: AgentAdapter,
    *,
    max_concurrency: int | None = None,
    rate: float | None = None,
    burst: int | None = None,
    adaptive: bool = False,
    max_retries: int | None = None,
    retry_budget: float = DEFAULT_RETRY_BUDGET,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    name: str | None = None,
    backend: LimitBackend | None = None,
) -> LimitedAdapter:
    """Wrap ``adapter`` so its sessions' sends go through the limiter of ``name``.

    A name is one limiter per run (a pytest session; outside pytest, the process): every
    ``limit()`` and transport of the name shares its bucket, learned rate, window and
    statistics, so calling ``limit()`` per test or per trial clone is harmless. A call
    whose settings differ from the name's limiter raises ``ValueError`` naming them.

    * ``max_concurrency``: at most this many attempts in flight in this process
      (``None``: unbounded; with ``adaptive``, the window's cap is derived from the
      learned rate times the attempts' latency, Little's law).
    * ``rate`` / ``burst``: a token bucket of ``rate`` requests per second holding up
      to ``burst`` tokens (default ``1``: evenly spaced, no bursts; with ``adaptive``,
      learned from the bucket size the agent states, else ``1``). ``burst`` and
      ``backend`` need ``rate`` or ``adaptive``.
    * ``adaptive``: learn the rate (a bucket whose rate follows a CUBIC-style
      controller on the agent's rate-limit answers and headers; ``rate``, if given, is
      where it starts and its ceiling) and a window in ``[1, max_concurrency]``
      (default: ``2 x rate x latency + 8``, 16 to 10,000) that grows on clean windows.
    * ``retry_budget``: seconds a request may spend failing (its failed attempts and
      the backoffs after them; not its waits for a slot or token) while rate-limited
      and transient failures are retried; ``0`` disables retrying.
    * ``max_retries``: at most this many retries per request as well (``None``: as
      many as the budget allows).
    * ``max_retry_after``: the longest ``Retry-After`` (seconds) the limiter waits for;
      a rate-limit answer asking for longer fails the request at once, unretried.
    * ``name``: the limiter, and the bucket key shared by every process using the same
      backend (default: the adapter's class name).
    * ``backend``: where the bucket lives (default: the run's ``default_backend()``,
      from the environment).

    See ``docs/limits.md``.
    """
    return _build(
        adapter,
        max_concurrency=max_concurrency,
        rate=rate,
        burst=burst,
        adaptive=adaptive,
        max_retries=max_retries,
        retry_budget=retry_budget,
        max_retry_after=max_retry_after,
        name=name,
        backend=backend,
    )


def _build(
    adapter: AgentAdapter,
    *,
    max_concurrency: int | None = None,
    rate: float | None = None,
    burst: int | None = None,
    adaptive: bool = False,
    max_retries: int | None = None,
    retry_budget: float = DEFAULT_RETRY_BUDGET,
    max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
    name: str | None = None,
    backend: LimitBackend | None = None,
    clock: Callable[[], float] | None = None,
    rng: random.Random | None = None,
    run: _runs.Run | None = None,
) -> LimitedAdapter:
    """``limit()`` with an injectable clock and jitter source (for tests; the first
    ``limit()`` of a name in a run sets them), and a run to keep the limiter in for
    good (tests simulate the hosts of a fleet in one process as runs of their own)."""
    if isinstance(adapter, type) or not isinstance(adapter, AgentAdapter):
        raise invalid(_OWNER, "adapter", _ADAPTER, adapter)
    settings = check_settings(
        _OWNER,
        name=type(adapter).__qualname__ if name is None else name,
        rate=rate,
        burst=burst,
        max_concurrency=max_concurrency,
        adaptive=adaptive,
        max_retries=max_retries,
        retry_budget=retry_budget,
        max_retry_after=max_retry_after,
        backend=backend,
    )
    check_callable(_OWNER, "clock", clock, expected=_CLOCK, optional=True)
    bound = Bound(settings, owner=_OWNER, clock=clock, rng=rng, run=run)
    return LimitedAdapter._create(adapter=adapter, bound=bound)
