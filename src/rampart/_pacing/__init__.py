"""Pacing: how fast rampart sends, one room on the ground floor.

Three pieces of one concern, and this module is their face for the rest of rampart
(other rooms import from ``rampart._pacing``, never from its modules):

* ``AimdWindow`` (``_aimd``): the one additive-increase, multiplicative-decrease
  controller, which the adaptive limiter and an adaptive trial group both run;
* ``slowdown`` (``_slowdown``): the one "slow down" channel by which the agent's
  rate-limit news reaches whoever paces the requests;
* the ``concurrency`` setting (``_concurrency``): its one reader and its defaults.
"""

from rampart._pacing import _slowdown as slowdown
from rampart._pacing._aimd import DEFAULT_ADAPTIVE_CAP, AimdWindow
from rampart._pacing._concurrency import (
    AUTO,
    CONCURRENCY_EXPECTED,
    DEFAULT_CONCURRENCY,
    Setting,
    check_concurrency,
    default_concurrency,
    parse_concurrency,
    run_concurrency,
)

__all__ = [
    "AUTO",
    "CONCURRENCY_EXPECTED",
    "DEFAULT_ADAPTIVE_CAP",
    "DEFAULT_CONCURRENCY",
    "AimdWindow",
    "Setting",
    "check_concurrency",
    "default_concurrency",
    "parse_concurrency",
    "run_concurrency",
    "slowdown",
]
