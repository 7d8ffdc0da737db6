"""Adapters for agents reached over the network.

``ChatCompletionsAdapter`` talks to any server speaking OpenAI's chat-completions
dialect over httpx (imported on first use, so this package stays light). See
``docs/http-adapter.md``. Every name loads on first access: a room that needs only
``GuardedSession`` (``_session``, the session lifecycle rampart's own sessions share)
loads neither the chat adapter nor the rate-limit signals.
"""

from typing import TYPE_CHECKING

from rampart._lazy import lazy_attributes

if TYPE_CHECKING:
    from rampart.adapters._chat import ChatCompletionsAdapter, ChatCompletionsSession, SeedSpec
    from rampart.adapters._parse import MalformedResponseError
    from rampart.adapters._retry_after import parse_retry_after

__getattr__, __dir__ = lazy_attributes(
    __name__,
    globals(),
    {
        "ChatCompletionsAdapter": "rampart.adapters._chat",
        "ChatCompletionsSession": "rampart.adapters._chat",
        "MalformedResponseError": "rampart.adapters._parse",
        "SeedSpec": "rampart.adapters._chat",
        "parse_retry_after": "rampart.adapters._retry_after",
    },
)

__all__ = [
    "ChatCompletionsAdapter",
    "ChatCompletionsSession",
    "MalformedResponseError",
    "SeedSpec",
    "parse_retry_after",
]
