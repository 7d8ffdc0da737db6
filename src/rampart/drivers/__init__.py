"""Prompt drivers: what to send to the agent next.

``StaticDriver`` sends a fixed list of prompts; ``coerce_trigger`` turns the
shorthand a strategy accepts (a prompt, a list of prompts, a ``Request``) into one.
"""

from rampart.core.driver import PromptDecision, PromptDriver
from rampart.drivers._coerce import coerce_trigger
from rampart.drivers._static import StaticDriver

__all__ = ["PromptDecision", "PromptDriver", "StaticDriver", "coerce_trigger"]
