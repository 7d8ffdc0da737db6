"""``ModelEndpoint``: an LLM endpoint as an ``AgentAdapter``, so ``limit()`` can pace it.

``rampart.limits`` paces, bounds and retries adapters' ``send_async`` calls. Making
the model endpoint an adapter puts every LLM call (judge, attacker, generator) through
the very same machinery as the agent under test: slots, token buckets (shareable with
the agent's by name and backend), ``Retry-After`` pauses, retries and statistics.

A session here is one stateless call: its ``send_async`` takes a ``ChatRequest``
(a ``Request`` that carries the whole JSON body) and returns the completion as a
``Response``. The HTTP exchange and error classification are
``rampart.adapters._http``'s, shared with ``ChatCompletionsAdapter``.

HTTP client lifetime: one ``httpx.AsyncClient`` is open while calls are in flight
(shared by all of them) and closed when the last one finishes, or for as long as an
``async with`` block of the owning ``LLMClient`` lasts. Nothing is left open when an
event loop ends, so one endpoint serves any number of test event loops, on asyncio
and trio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
from anyio.lowlevel import RunVar

from rampart._checks import check_instance
from rampart._redact import Masked, Secret, mask_secrets
from rampart.adapters._internal import (
    ClientUsers,
    GuardedSession,
    close_client,
    new_client,
    parse_completion,
    post_json,
)
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response

if TYPE_CHECKING:
    import ssl

    import httpx

    from rampart.llm._endpoint import Endpoint
    from rampart.llm._entra import EntraTokenProvider

__all__ = ["ChatRequest", "ModelCall", "ModelEndpoint"]


@attrs.define(kw_only=True)
class ChatRequest(Request):
    """A ``Request`` that carries a complete chat-completions body (``messages`` etc.)."""

    body: dict[str, Any] = attrs.field(factory=dict)


def _ssl_context(trust_env: bool) -> ssl.SSLContext:
    """One verifying TLS context per process: building one costs tens of milliseconds."""
    from rampart._http import default_ssl_context

    return default_ssl_context(trust_env)


class ModelEndpoint:
    """The ``AgentAdapter`` behind an ``LLMClient`` (see the module docstring)."""

    def __init__(
        self,
        *,
        endpoint: Endpoint,
        api_key: str | None,
        entra: EntraTokenProvider | None,
        timeout: float,
        max_connections: int,
        max_response_bytes: int,
        trust_env: bool,
    ) -> None:
        self._endpoint = endpoint
        self._api_key = None if api_key is None else Secret(api_key)
        self._entra = entra
        self._timeout = timeout
        self._max_connections = max_connections
        self._max_response_bytes = max_response_bytes
        self._trust_env = trust_env
        self._manifest = AppManifest(name=endpoint.model)
        self._client: httpx.AsyncClient | None = None
        self._users = ClientUsers()
        self._held = 0
        self._client_loop: RunVar[bool] = RunVar(f"rampart.llm.client.{id(self)}")

    def __repr__(self) -> str:
        return f"ModelEndpoint(url={self._endpoint.display_url!r}, model={self._endpoint.model!r})"

    @property
    def manifest(self) -> AppManifest:
        return self._manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return ObservabilityLevel.RESPONSE_ONLY

    @property
    def endpoint(self) -> Endpoint:
        return self._endpoint

    async def create_session_async(self) -> ModelCall:
        # Called by the limiter before it takes a slot or a token: pay the one-off cost
        # of importing httpx and building the TLS context here, not after a token.
        _ssl_context(self._trust_env)
        return ModelCall(endpoint=self)

    # -- the HTTP client ---------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        if self._api_key is None:
            return {}
        if self._endpoint.auth == "api-key":
            return {"api-key": self._api_key}
        return {"Authorization": Secret(f"Bearer {self._api_key}")}

    def _new_client(self) -> httpx.AsyncClient:
        return new_client(
            url=self._endpoint.url,
            headers=self._headers(),
            timeout=self._timeout,
            max_connections=self._max_connections,
            trust_env=self._trust_env,
            http2=False,
            verify=_ssl_context(self._trust_env),
        )

    def _acquire(self) -> tuple[httpx.AsyncClient, bool]:
        """A client for one call, and whether it is shared (else the caller closes it)."""
        client = self._client
        if client is None:
            client = self._client = self._new_client()
            self._client_loop.set(True)
        elif not self._client_loop.get(False):
            # Open in another event loop (another thread): this call gets its own.
            return self._new_client(), False
        self._users.enter(client)
        return client, True

    async def _release(self, client: httpx.AsyncClient, shared: bool) -> None:
        """The shared client closes when its last user (call or holder) leaves."""
        if shared and not self._users.leave(client):
            return
        if client is self._client:
            self._client = None
        await close_client(client)

    def hold(self) -> None:
        """Keep the shared client open until ``unhold`` (an ``async with LLMClient``):
        the holder counts as one of its users."""
        if self._client is not None and not self._client_loop.get(False):
            return  # open in another event loop; calls here use their own clients
        self._acquire()
        self._held += 1

    async def unhold(self) -> None:
        client = self._client
        if self._held == 0 or client is None or not self._client_loop.get(False):
            return
        self._held -= 1
        await self._release(client, True)

    async def post(self, body: dict[str, Any]) -> Response:
        """One chat-completions exchange; the completion as a ``Response``."""
        headers: dict[str, str] | None = None
        redact: list[str] = [] if self._api_key is None else [self._api_key]
        if self._entra is not None:
            token = Secret(await self._entra.token())
            headers = {"Authorization": Secret(f"Bearer {token}")}
            redact.append(token)
        client, shared = self._acquire()
        try:
            data = await post_json(
                client,
                Masked(self._endpoint.url),
                body,
                time_limit=self._timeout,
                max_response_bytes=self._max_response_bytes,
                headers=headers,
                redact=redact,
            )
        finally:
            await self._release(client, shared)
        response, message = parse_completion(data)
        if response.tool_calls:  # their ids, which a tool result must name
            response.metadata["tool_call_ids"] = [
                call.get("id") for call in message.get("tool_calls", [])
            ]
        # A model that echoes the credential it was sent (in a verdict's evidence, an
        # attacker prompt) must not carry it into results, prompts or the cache.
        response.text = mask_secrets(response.text, redact)
        return response


class ModelCall(GuardedSession):
    """One stateless model call; ``send_async`` takes a ``ChatRequest``."""

    __slots__ = ("_endpoint",)

    def __init__(self, *, endpoint: ModelEndpoint) -> None:
        super().__init__(index=0)
        self._endpoint = endpoint

    def __repr__(self) -> str:
        return f"ModelCall({self._endpoint!r})"

    async def send_async(self, request: Request) -> Response:
        self._check_send(request)
        chat = check_instance(
            "ModelCall.send_async", "request", request, ChatRequest, expected="a ChatRequest"
        )
        return await self._endpoint.post(chat.body)
