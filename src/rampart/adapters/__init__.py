"""Adapters for agents reached over the network.

``ChatCompletionsAdapter`` talks to any server speaking OpenAI's chat-completions
dialect over httpx (imported on first use, so this package stays light). See
``docs/http-adapter.md``.
"""

from rampart.adapters._chat import ChatCompletionsAdapter, ChatCompletionsSession, SeedSpec
from rampart.adapters._parse import MalformedResponseError
from rampart.adapters._retry_after import parse_retry_after

__all__ = [
    "ChatCompletionsAdapter",
    "ChatCompletionsSession",
    "MalformedResponseError",
    "SeedSpec",
    "parse_retry_after",
]
