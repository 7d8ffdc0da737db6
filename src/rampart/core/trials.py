"""Compatibility path: concurrent trials live in ``rampart.engine``."""

from rampart.core.result import PopulationResult
from rampart.engine import execute_trials_async

__all__ = ["PopulationResult", "execute_trials_async"]
