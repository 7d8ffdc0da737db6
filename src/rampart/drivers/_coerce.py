"""``coerce_trigger``: accept the shorthand forms a strategy's prompt argument allows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._checks import invalid
from rampart.core.types import Request
from rampart.drivers._static import StaticDriver, normalize_prompts

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.driver import PromptDriver

__all__ = ["coerce_trigger"]

_ACCEPTED = "a str, a Request, a list of str or Request, or a PromptDriver"


def coerce_trigger(
    value: str | Request | Sequence[str | Request] | PromptDriver,
    *,
    name: str = "trigger",
    owner: str = "coerce_trigger",
) -> PromptDriver:
    """Turn a trigger argument into a ``PromptDriver``.

    A ``str`` or ``Request`` becomes a one-prompt ``StaticDriver``; a list becomes a
    ``StaticDriver`` over it (an empty list is allowed and produces zero turns); a
    ``PromptDriver`` is returned as is. Anything else raises ``TypeError`` naming
    ``owner`` and ``name`` (the caller and its argument, e.g. ``"Attacks.xpia"`` and
    ``"trigger"``).
    """
    if isinstance(value, str | Request):
        return StaticDriver(prompts=[value])
    if isinstance(value, list | tuple):
        # Checked under the caller's argument name, once.
        return StaticDriver._of(normalize_prompts(value, owner=owner, name=name))
    if not isinstance(value, type) and callable(getattr(value, "next_prompt_async", None)):
        return value  # type: ignore[return-value]
    raise invalid(owner, name, _ACCEPTED, value)
