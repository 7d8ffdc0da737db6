"""Compatibility path (RAMPART's ``rampart.core.prompt_driver``): see ``rampart.core.driver``."""

from rampart.core.driver import PromptDecision, PromptDriver

__all__ = ["PromptDecision", "PromptDriver"]
