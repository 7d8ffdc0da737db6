"""A run's limiters: one per name (``limiter_for``), listed by ``live_limiters()``.

A function-scoped fixture that calls ``limit(http, adaptive=True, name="agent")`` runs
once per trial clone; thirty clones made thirty limiters, each learning its own rate
from the slow start, thirty windows, thirty entries in the report. Here the name is the
limiter: the first ``limit()`` (or transport) of a name in a run makes it, every later
one gets the same ``Limiter``, and one whose settings differ is refused, naming what
differs (a name cannot be paced at two rates).

A run is a pytest session, or the process (``rampart._runs``); the registry lives in
the run's state, so an in-process pytester run starts with no limiter and leaves the
outer run's as they were. It holds its limiters for the whole run (their statistics
belong in the run's report even after the test that built them ended). This is the
only run-wide state in ``rampart.limits``, beside the run's default backends.
"""

from __future__ import annotations

import random
import threading
from typing import TYPE_CHECKING

from rampart import _runs
from rampart.limits._default import default_backend
from rampart.limits._settings import differences, same_backend
from rampart.limits._shell import Limiter

if TYPE_CHECKING:
    from collections.abc import Callable

    from rampart.limits._backends import LimitBackend
    from rampart.limits._settings import LimitSettings

__all__ = ["Bound", "limiter_for", "live_limiters"]


class _Limiters:
    """One run's limiters, by name, in creation order."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_name: dict[str, Limiter] = {}


def _of(run: _runs.Run) -> _Limiters:
    return run.state(__name__, _Limiters)


def live_limiters() -> tuple[Limiter, ...]:
    """Every limiter of the current run (a pytest session, or the process), oldest
    first: one per name, whatever number of ``limit()`` calls and transports use it."""
    limiters = _of(_runs.current())
    with limiters.lock:
        return tuple(limiters.by_name.values())


def limiter_for(
    settings: LimitSettings,
    *,
    owner: str,
    clock: Callable[[], float] | None = None,
    rng: random.Random | None = None,
    run: _runs.Run | None = None,
) -> Limiter:
    """The limiter of ``settings.name`` in ``run`` (default: the current one), made on
    first use; a ``ValueError`` naming every setting that differs from the limiter of
    that name.

    ``clock`` and ``rng`` (tests inject them) are the first caller's.
    """
    backend: LimitBackend | None = settings.backend
    if backend is None and settings.bucket:
        backend = default_backend()
    limiters = _of(_runs.current() if run is None else run)
    with limiters.lock:
        found = limiters.by_name.get(settings.name)
        if found is None:
            found = limiters.by_name[settings.name] = Limiter._create(
                settings=settings, backend=backend, clock=clock, rng=rng or random.Random()
            )
            return found
    problems = differences(found._settings, found.backend, settings)
    if settings.backend is None and not same_backend(backend, found.backend):
        shown = "none" if found.backend is None else found.backend.description
        problems.append(f"the run's default backend (it has another backend: {shown})")
    if problems:
        raise ValueError(
            f"{owner}: name={settings.name!r} is already a limiter in this run with other "
            f"settings; this call gave {', '.join(problems)}. Every limit() and transport "
            "of one name in a run is one limiter: give them the same settings, or "
            "another name"
        )
    return found


class Bound:
    """The limiter of ``settings.name`` in the run current at each use (see the module
    docstring): what a wrapper or a transport holds instead of a limiter."""

    __slots__ = ("_clock", "_limiter", "_owner", "_pinned", "_rng", "_run", "settings")

    def __init__(
        self,
        settings: LimitSettings,
        *,
        owner: str,
        clock: Callable[[], float] | None = None,
        rng: random.Random | None = None,
        run: _runs.Run | None = None,
    ) -> None:
        self.settings = settings
        self._owner = owner
        self._clock = clock
        self._rng = rng
        self._pinned = run is not None  # tests simulate a fleet's hosts as runs
        # Found now, so settings that disagree with the name's limiter fail at once.
        self._run = _runs.current() if run is None else run
        self._limiter = limiter_for(settings, owner=owner, clock=clock, rng=rng, run=self._run)

    @property
    def limiter(self) -> Limiter:
        """The name's limiter in the current run."""
        run = _runs.current()
        if run is not self._run and not self._pinned:
            self._limiter = limiter_for(
                self.settings, owner=self._owner, clock=self._clock, rng=self._rng
            )
            self._run = run
        return self._limiter
