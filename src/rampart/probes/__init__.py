"""Probes: executions that check the agent behaves as expected."""

from rampart.probes._factory import Probes
from rampart.probes._single_turn import SingleTurnExecution

__all__ = ["Probes", "SingleTurnExecution"]
