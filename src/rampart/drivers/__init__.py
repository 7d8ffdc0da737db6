"""Prompt drivers: what to send to the agent next.

``StaticDriver`` sends a fixed list of prompts; ``LLMDriver`` lets an attacker model
write each prompt from the conversation so far (loaded on first access, it brings in
the LLM client); ``coerce_trigger`` turns the shorthand a strategy accepts (a prompt,
a list of prompts, a ``Request``) into a driver.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes
from rampart.core.driver import PromptDecision, PromptDriver
from rampart.drivers._coerce import coerce_trigger
from rampart.drivers._static import StaticDriver

if TYPE_CHECKING:
    from rampart.drivers._llm import LLMDriver

__getattr__, __dir__ = lazy_attributes(__name__, globals(), {"LLMDriver": "rampart.drivers._llm"})

__all__ = ["LLMDriver", "PromptDecision", "PromptDriver", "StaticDriver", "coerce_trigger"]
