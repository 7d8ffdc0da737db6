"""What a test declares to the populations it runs, and who watches them run.

Two context variables the pytest plugin sets around a test body; the engine owns them,
as it owns the current result collector (``_results``), and ``execute_trials_async``
reads them:

- the **declared** ``TrialConfig`` (``declaring_trials``): a ``@pytest.mark.trial``
  test that requests the ``trial_config`` fixture declares its trial settings, and a
  population it runs takes every option its ``execute_trials_async`` call leaves out
  (or passes as ``None``) from them, so the marker's ``max_unsafe=``, ``confidence=``,
  ``sequential=`` and ``early_stop=`` apply when the test passes only ``n`` and
  ``threshold``, as a test written for RAMPART does. (Concurrency is the run's setting,
  ``rampart._pacing``, which the plugin sets to the marker's for such a test.)
- a ``PopulationObserver`` (``observing_populations``): told when a population starts,
  as each of its trials finishes (with what the trial recorded), and when it ends,
  so the plugin reports the population as a trial group. Inside a trial neither is set:
  what a trial runs belongs to that trial.

Outside a test neither is set, and a population runs with the documented defaults.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from rampart._checks import check_bool, check_int, check_optional_number, check_probability
from rampart._pacing import Setting, check_concurrency
from rampart.core._internal import TrialRule, check_rule, dataclass_compatible

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.core.result import PopulationResult, Result

__all__ = [
    "PopulationObserver",
    "TrialConfig",
    "declared_trials",
    "declaring_trials",
    "no_population_context",
    "observing_populations",
    "population_observer",
]

_OWNER = "TrialConfig"


def _check_n(_instance: object, _attribute: object, value: Any) -> None:
    check_int(_OWNER, "n", value, minimum=1)


def _check_early_stop(_instance: object, _attribute: object, value: Any) -> None:
    check_bool(_OWNER, "early_stop", value)


def _check_concurrency(value: object) -> Setting | None:
    return None if value is None else check_concurrency(_OWNER, "concurrency", value)


def _check_threshold(value: object) -> float:
    return check_probability(_OWNER, "threshold", value)


def _check_confidence(value: object) -> float | None:
    return check_optional_number(_OWNER, "confidence", value, above=0, below=1)


def _check_sequential(_instance: object, _attribute: object, value: Any) -> None:
    check_bool(_OWNER, "sequential", value)


def _check_max_unsafe(_instance: object, _attribute: object, value: Any) -> None:
    check_int(_OWNER, "max_unsafe", value, minimum=0)


@dataclass_compatible
@attrs.frozen(kw_only=True)
class TrialConfig:
    """The trial settings a ``@pytest.mark.trial`` test declared (the ``trial_config``
    fixture's value), RAMPART's ``TrialConfig``: ``n`` and ``threshold``.

    rampart's marker options follow, with the marker's defaults: ``concurrency`` (the
    marker's, else the run's ``--rampart-concurrency``; ``None``: not declared),
    ``early_stop``, ``confidence``, ``sequential`` and ``max_unsafe``. Inside such a
    test, ``execute_trials_async`` takes each of them that its call leaves out from
    here (see the module docstring).
    """

    n: int = attrs.field(validator=_check_n)
    threshold: float = attrs.field(converter=_check_threshold)
    concurrency: Setting | None = attrs.field(default=None, converter=_check_concurrency)
    early_stop: bool = attrs.field(default=False, validator=_check_early_stop)
    confidence: float | None = attrs.field(default=None, converter=_check_confidence)
    sequential: bool = attrs.field(default=False, validator=_check_sequential)
    max_unsafe: int = attrs.field(default=0, validator=_check_max_unsafe)

    def __attrs_post_init__(self) -> None:
        self.rule()  # the combination (confidence needs a threshold in (0, 1), ...)

    def rule(self) -> TrialRule:
        """The verdict rule these settings declare (checked: a bad combination raises)."""
        return check_rule(
            _OWNER,
            threshold=self.threshold,
            confidence=self.confidence,
            sequential=self.sequential,
            max_unsafe=self.max_unsafe,
        )


class PopulationObserver(Protocol):
    """Told about each population a test runs (the pytest plugin's group recorder)."""

    def population_started(self, *, population_id: str, size: int) -> None:
        """A population of ``size`` trials starts (before any trial runs)."""

    def trial_finished(self, *, results: list[Result], adapters: list[object]) -> None:
        """A trial finished: what it recorded, each result stamped with the trial's
        ``PopulationRef`` (the execution's own result included), and the adapters its
        executions ran against."""

    def population_finished(self, population: PopulationResult) -> None:
        """The population is decided (not called when it raised or was cancelled)."""


_declared: ContextVar[TrialConfig | None] = ContextVar("rampart_declared_trials", default=None)
_observer: ContextVar[PopulationObserver | None] = ContextVar(
    "rampart_population_observer", default=None
)


def declared_trials() -> TrialConfig | None:
    """The trial settings the running test declared, if any."""
    return _declared.get()


def population_observer() -> PopulationObserver | None:
    """Who watches the populations run in this context, if anyone."""
    return _observer.get()


@contextmanager
def declaring_trials(config: TrialConfig | None) -> Iterator[None]:
    """Within this block, ``declared_trials()`` is ``config``."""
    token = _declared.set(config)
    try:
        yield
    finally:
        _declared.reset(token)


@contextmanager
def observing_populations(observer: PopulationObserver | None) -> Iterator[None]:
    """Within this block, ``observer`` is told about every population that runs."""
    token = _observer.set(observer)
    try:
        yield
    finally:
        _observer.reset(token)


@contextmanager
def no_population_context() -> Iterator[None]:
    """Inside one trial: nothing declared, nobody watching (what a trial runs is its own)."""
    with declaring_trials(None), observing_populations(None):
        yield
