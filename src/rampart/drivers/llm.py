"""Compatibility path (RAMPART's ``rampart.drivers.llm``): ``LLMDriver``."""

from rampart.drivers._llm import LLMDriver

__all__ = ["LLMDriver"]
