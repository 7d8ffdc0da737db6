"""``StaticDriver``: a fixed list of prompts, sent one per turn."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rampart._checks import invalid
from rampart.core.driver import PromptDecision
from rampart.core.types import Request

if TYPE_CHECKING:
    from rampart.core.types import Turn

__all__ = ["StaticDriver"]


def normalize_prompts(value: object, *, owner: str, name: str) -> tuple[Request, ...]:
    """Check a list of prompts and turn every ``str`` into a ``Request``.

    ``owner`` and ``name`` are the caller and the argument it was given, so errors
    point at them.
    """
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise invalid(owner, name, "a list of str or Request", value)
    requests: list[Request] = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            requests.append(Request(prompt=item))
        elif isinstance(item, Request):
            requests.append(item)
        else:
            raise invalid(owner, f"{name}[{index}]", "a str or Request", item)
    return tuple(requests)


class StaticDriver:
    """Sends the given prompts in order, one per turn, then stops.

    It keeps no state: the next prompt is ``prompts[len(history)]``, and ``None``
    (stop) once the list is used up. One instance can therefore serve any number of
    executions, including concurrent trials. Strings are wrapped as
    ``Request(prompt=...)``; ``Request`` objects are sent as given (use them for
    attachments).
    """

    __slots__ = ("_requests",)

    def __init__(self, *, prompts: Sequence[str | Request]) -> None:
        self._requests = normalize_prompts(prompts, owner="StaticDriver", name="prompts")

    @classmethod
    def _of(cls, requests: tuple[Request, ...]) -> StaticDriver:
        """A driver over ``requests``, which ``normalize_prompts`` made (a strategy
        checks its prompts under its own argument's name, and every execution built
        from a list would otherwise check them twice)."""
        driver = cls.__new__(cls)
        driver._requests = requests
        return driver

    @property
    def requests(self) -> tuple[Request, ...]:
        """The requests this driver sends, in order."""
        return self._requests

    def __len__(self) -> int:
        return len(self._requests)

    def __repr__(self) -> str:
        return f"StaticDriver(prompts={list(self._requests)!r})"

    async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None:
        """The request for turn ``len(history)``, or ``None`` when none is left."""
        index = len(history)
        if index >= len(self._requests):
            return None
        return PromptDecision(request=self._requests[index])
