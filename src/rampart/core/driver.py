"""Prompt drivers decide what to send next."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from rampart.core._dataclass import dataclass_compatible
from rampart.core.types import Request, Turn

__all__ = ["PromptDecision", "PromptDriver"]


@dataclass_compatible
@attrs.define(kw_only=True)
class PromptDecision:
    """The next request and, optionally, why (stored as ``Turn.driver_reasoning``)."""

    request: Request
    reasoning: str = ""


@runtime_checkable
class PromptDriver(Protocol):
    """Produces the next prompt from the history so far; ``None`` means "done"."""

    async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None: ...
