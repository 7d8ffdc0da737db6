"""Attacks: executions that try to make the agent do harm (today: XPIA)."""

from rampart.attacks._factory import Attacks
from rampart.attacks._xpia import XPIAExecution

__all__ = ["Attacks", "XPIAExecution"]
