"""``coerce_trigger``: accept the shorthand forms a strategy's prompt argument allows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core.driver import PromptDriver
from rampart.core.types import Request
from rampart.drivers._static import StaticDriver, normalize_prompts

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["coerce_trigger"]

_ACCEPTED = "a str, a Request, a list of str or Request, or a PromptDriver"


def coerce_trigger(
    value: str | Request | Sequence[str | Request] | PromptDriver,
    *,
    name: str = "trigger",
) -> PromptDriver:
    """Turn a trigger argument into a ``PromptDriver``.

    A ``str`` or ``Request`` becomes a one-prompt ``StaticDriver``; a list becomes a
    ``StaticDriver`` over it (an empty list is allowed and produces zero turns); a
    ``PromptDriver`` is returned as is. Anything else raises ``TypeError`` naming
    ``name`` (the caller's argument, e.g. ``"trigger"`` or ``"prompts"``).
    """
    if isinstance(value, str | Request):
        return StaticDriver(prompts=[value])
    if isinstance(value, list | tuple):
        # Validate under the caller's argument name, then build from the requests.
        return StaticDriver(prompts=list(normalize_prompts(value, name=name)))
    if isinstance(value, PromptDriver) and callable(value.next_prompt_async):
        return value
    raise TypeError(f"{name} must be {_ACCEPTED}, got {type(value).__name__}")
