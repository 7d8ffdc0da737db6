"""The strategies' room: what each strategy declares, and the one list of them.

A strategy is named on every result it produces (``Result.strategy``). What rampart
decides from that name lives here and nowhere else: each strategy's module declares a
``Strategy`` -- its polarity (what a DETECTED outcome means), its one-line summary and
its shaping (when a SAFE verdict is withheld) -- and ``STRATEGIES`` lists them. The
executions that run a strategy (``rampart.attacks``, ``rampart.probes``) and
re-judging saved work (``rampart.llm``) read these declarations; the engine runs any
strategy without knowing one. Adding a strategy adds one module here and one line to
``STRATEGIES``.

Modules: ``_strategy`` (the declaration), ``_xpia`` and ``_probe`` (the built-in
strategies), ``_wording`` (the summary parts they share), ``_shaping`` (the SAFE
guards they share). This room imports the model only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.strategies._probe import PROBE
from rampart.strategies._strategy import Strategy
from rampart.strategies._xpia import XPIA

if TYPE_CHECKING:
    from rampart.core._internal import Polarity

__all__ = ["PROBE", "STRATEGIES", "Strategy", "XPIA", "strategy_for", "strategy_named"]

STRATEGIES: tuple[Strategy, ...] = (XPIA, PROBE)
"""Every built-in strategy; the first one of a polarity is that polarity's default."""

_BY_NAME = {strategy.name: strategy for strategy in STRATEGIES}


def strategy_named(name: str) -> Strategy | None:
    """The strategy recorded as ``name`` on results, or ``None`` for one rampart does not know."""
    return _BY_NAME.get(name)


def strategy_for(polarity: Polarity) -> Strategy:
    """The default strategy of ``polarity`` (its summary words a re-judged result)."""
    return next(strategy for strategy in STRATEGIES if strategy.polarity is polarity)
