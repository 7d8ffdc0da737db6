"""Compatibility path: concurrent trials live in ``rampart.engine``."""

# layering: compatibility re-export, the one kind of module that may import a higher layer
from rampart.core.result import PopulationResult
from rampart.engine import execute_trials_async

__all__ = ["PopulationResult", "execute_trials_async"]
