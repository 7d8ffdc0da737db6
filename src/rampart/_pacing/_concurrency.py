"""The ``concurrency`` setting: an integer >= 1, or ``"auto"`` for the adaptive limit.

Read in one place for every front end: the trial marker, the plugin's
``--rampart-concurrency`` option and ini value, ``execute_trials_async``,
``rampart scan`` and ``rampart sweep``. A setting is an int >= 1 or text: an integer,
or ``auto`` in any case (``parse_concurrency``); a value a front end refuses is the one
message ``check_concurrency`` words (the CLI words its own error around
:data:`CONCURRENCY_EXPECTED`). The engine turns a setting into what bounds a fan-out
in one place too (``rampart.engine._fanout.bound``).

**Defaults**, decided here once. :data:`DEFAULT_CONCURRENCY` (32) is a run's: the
plugin's when ``--rampart-concurrency`` is not given, and the scans'. A concurrency
left out of ``execute_trials_async`` is ``default_concurrency()``: the setting of the
run it is called in, when a run has declared one (``run_concurrency``: the pytest
plugin does around every test body, with ``--rampart-concurrency`` or a
``trial_config`` test's marker), else unbounded (``None``), as a library call outside
any run always was.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal, TypeAlias

from rampart._checks import invalid

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = [
    "AUTO",
    "CONCURRENCY_EXPECTED",
    "DEFAULT_CONCURRENCY",
    "Setting",
    "check_concurrency",
    "default_concurrency",
    "parse_concurrency",
    "run_concurrency",
]

AUTO: Literal["auto"] = "auto"
"""The ``concurrency`` value that selects the adaptive controller."""

Setting: TypeAlias = int | Literal["auto"]

CONCURRENCY_EXPECTED = f"an integer >= 1 or {AUTO!r}"
"""What a ``concurrency`` setting may be, for error messages."""

DEFAULT_CONCURRENCY: Setting = 32
"""A run's concurrency when none is set (the plugin's, the scans').

32 holds a rate-limited agent's rate where 10 held half of it: 400 single-turn trials
against a 20/s, burst-5 agent answering in 1 s need 20 in flight, and 10 reached 46 %
of the ideal time where 32 reached 80-82 %, with or without ``x-ratelimit-*``
headers, and fewer 429s than Inspect AI's default (
``benchmarks/bench_peers.py``). The learned rate (``limit(..., adaptive=True)``), not
the concurrency, keeps such a run within the agent's limit. ``AUTO`` is the other
candidate (it follows the agent instead of a number): it is one line away, here."""

_RUN_SETTING: ContextVar[Setting | None] = ContextVar("rampart_run_concurrency", default=None)


def parse_concurrency(value: object) -> Setting | None:
    """A setting given as text or an int; ``None`` when ``value`` is not one.

    Text is an integer (surrounding space allowed) or ``auto`` in any case.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if value.strip().lower() == AUTO:
            return AUTO
        try:
            value = int(value)
        except ValueError:
            return None
    return value if isinstance(value, int) and value >= 1 else None


def check_concurrency(
    owner: str, name: str, value: object, *, error: type[Exception] | None = None
) -> Setting:
    """The setting ``value`` names, else the one error every front end raises for it:
    ``"{owner}: {name} must be an integer >= 1 or 'auto', got {value!r}"``, a
    ``ValueError`` for an int or text that is not a setting, a ``TypeError`` for
    anything else (``error`` overrides both)."""
    setting = parse_concurrency(value)
    if setting is None:
        if error is None:
            wrong_type = isinstance(value, bool) or not isinstance(value, int | str)
            error = TypeError if wrong_type else ValueError
        raise invalid(owner, name, CONCURRENCY_EXPECTED, value, error=error)
    return setting


def default_concurrency() -> Setting | None:
    """The concurrency of a fan-out that was given none: the setting of the run it is
    in (``run_concurrency``), else ``None`` (unbounded)."""
    return _RUN_SETTING.get()


@contextmanager
def run_concurrency(setting: Setting) -> Iterator[None]:
    """Within this block (and the tasks it starts), ``default_concurrency()`` is
    ``setting``: how a run declares its setting to the populations run inside it."""
    token = _RUN_SETTING.set(setting)
    try:
        yield
    finally:
        _RUN_SETTING.reset(token)
