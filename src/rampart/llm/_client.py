"""``LLMClient``: one async chat client for judges, attackers and payload generators.

Every call goes, in this order, through

1. the **response cache**, when one is on (a hit costs no request and no token);
2. a **limiter** built with ``rampart.limits.limit`` around the model endpoint
   (``ModelEndpoint``): concurrency slots, an optional token bucket (shareable with
   the agent under test: same ``name`` and ``backend``), ``Retry-After`` pauses,
   retries of rate-limited and transient failures;
3. the **HTTP exchange** shared with ``ChatCompletionsAdapter``
   (``rampart.adapters._http``).

Errors keep their classes: ``RateLimitedError`` when the endpoint still said "slow
down" after the retries, ``InfrastructureError`` for other failures,
``MalformedResponseError`` for a 2xx body that is not a chat completion. The api key
appears in none of their messages, nor in ``repr()``, statistics or cache entries.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Self

import attrs

from rampart._checks import (
    check_bool,
    check_choice,
    check_instance,
    check_int,
    check_seconds,
    check_text,
    invalid,
)
from rampart._http._internal import DEFAULT_MAX_CONNECTIONS
from rampart.core.llm import LLMConfig
from rampart.limits import DEFAULT_MAX_RETRY_AFTER, DEFAULT_RETRY_BUDGET, LimitBackend, limit
from rampart.llm._cache import CachedCompletion, ResponseCache, default_cache
from rampart.llm._endpoint import resolve_endpoint
from rampart.llm._entra import EntraTokenProvider, require_azure_identity
from rampart.llm._stats import LLMStatistics, usage_for
from rampart.llm._transport import ChatRequest, ModelEndpoint

if TYPE_CHECKING:
    from types import TracebackType

    from rampart.limits import LimitedAdapter

__all__ = ["CacheSetting", "Completion", "LLMClient", "LLMToolCall", "as_client", "shared_client"]

_OWNER = "LLMClient"
_ROLES = frozenset({"system", "user", "assistant"})

CacheSetting = ResponseCache | str | os.PathLike[str] | Literal[False] | None
"""``None``: the process default (off unless configured); ``False``: never; else a cache."""


@attrs.frozen(kw_only=True)
class LLMToolCall:
    """A tool call the model asked for: its ``id`` (which the tool result names), the
    function ``name`` and the decoded ``arguments`` (``{"_raw": text}`` when they were
    not a JSON object)."""

    id: str | None
    name: str
    arguments: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen(kw_only=True)
class Completion:
    """One model reply: its ``text``, the ``model`` that wrote it, whether it came from
    the cache, the ``usage`` / ``finish_reason`` the endpoint reported, and the
    ``tool_calls`` it asked for (when the request offered ``tools``)."""

    text: str
    model: str | None = None
    cached: bool = False
    usage: dict[str, Any] | None = None
    finish_reason: str | None = None
    tool_calls: tuple[LLMToolCall, ...] = ()


def _check_config(owner: str, value: object) -> LLMConfig:
    return check_instance(owner, "config", value, LLMConfig, expected="an LLMConfig")


def _check_cache(value: object) -> ResponseCache | Literal[False] | None:
    if value is None or value is False or isinstance(value, ResponseCache):
        return value
    if isinstance(value, str | os.PathLike):
        return ResponseCache(value)
    raise invalid(_OWNER, "cache", "a ResponseCache, a directory path, False or None", value)


_MESSAGES = "a non-empty list of {'role': ..., 'content': ...} mappings"


def _check_list(owner: str, field: str, value: object, expected: str) -> Sequence[Any]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        raise invalid(owner, field, expected, value)
    if not value:
        raise invalid(owner, field, expected, value, error=ValueError)
    return value


def _check_tool_loop(messages: object, tools: object) -> tuple[list[Any], list[Any]]:
    """A tool-calling conversation as sent: assistant messages may carry ``tool_calls``
    and ``tool`` messages answer them; it ends with a user or a tool message."""
    owner = f"{_OWNER}.complete"
    checked: list[Any] = []
    for index, item in enumerate(_check_list(owner, "messages", messages, _MESSAGES)):
        name = f"messages[{index}]"
        if not isinstance(item, Mapping):
            raise invalid(owner, name, "a mapping", item)
        check_choice(owner, f"{name}.role", item.get("role"), sorted({*_ROLES, "tool"}))
        checked.append(dict(item))
    if checked[-1]["role"] not in ("user", "tool"):
        raise ValueError(f"{owner}: the last message must have role 'user' or 'tool'")
    offered: list[Any] = []
    for index, tool in enumerate(
        _check_list(owner, "tools", tools, "a non-empty list of tool mappings")
    ):
        if not isinstance(tool, Mapping) or not isinstance(tool.get("function"), Mapping):
            raise invalid(owner, f"tools[{index}]", "a {'type': 'function', ...} mapping", tool)
        offered.append(dict(tool))
    return checked, offered


def _check_messages(value: object) -> list[dict[str, str]]:
    owner = f"{_OWNER}.complete"
    messages: list[dict[str, str]] = []
    for index, item in enumerate(_check_list(owner, "messages", value, _MESSAGES)):
        name = f"messages[{index}]"
        if not isinstance(item, Mapping):
            raise invalid(owner, name, "a mapping", item)
        role = check_choice(owner, f"{name}.role", item.get("role"), sorted(_ROLES))
        content = check_instance(
            owner, f"{name}.content", item.get("content"), str, expected="a str"
        )
        messages.append({"role": str(role), "content": content})
    if messages[-1]["role"] != "user":
        raise ValueError(f"{owner}: the last message must have role 'user'")
    return messages


class LLMClient:
    """A rate-limited, optionally cached chat client for one ``LLMConfig``.

    Limiter options are ``limit()``'s (``docs/limits.md``): ``max_concurrency``,
    ``rate`` / ``burst`` (default rate: ``metadata["max_requests_per_minute"] / 60``
    when set), ``adaptive``, ``max_retries``, ``retry_budget``, ``max_retry_after``,
    ``name`` (default ``"llm:<deployment or model>"``; the name is the limiter, one per
    run, shared with every ``limit()`` of it, e.g. the agent's) and ``backend``.
    ``timeout`` bounds each HTTP exchange; ``cache`` is a ``ResponseCache`` or
    directory, ``False`` (never) or ``None`` (the process default:
    ``--rampart-llm-cache`` / ``RAMPART_LLM_CACHE``).

    ``async with client:`` keeps one HTTP connection pool open for the block; without
    it a pool is open while calls are in flight and closed when the last one ends.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        max_concurrency: int | None = None,
        rate: float | None = None,
        burst: int | None = None,
        adaptive: bool = False,
        max_retries: int | None = None,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        max_retry_after: float = DEFAULT_MAX_RETRY_AFTER,
        name: str | None = None,
        backend: LimitBackend | None = None,
        timeout: float = 120.0,
        cache: CacheSetting = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_response_bytes: int = 8 * 1024 * 1024,
        trust_env: bool = True,
    ) -> None:
        self._config = _check_config(_OWNER, config)
        self._resolved = resolve_endpoint(config)
        entra: EntraTokenProvider | None = None
        if self._resolved.auth == "entra":
            require_azure_identity(_OWNER)
            entra = EntraTokenProvider()
        timeout = check_seconds(_OWNER, "timeout", timeout, positive=True)
        self._cache = _check_cache(cache)
        name = f"llm:{self._resolved.model}" if name is None else check_text(_OWNER, "name", name)
        if rate is None and "max_requests_per_minute" in config.metadata:
            rate = config.metadata["max_requests_per_minute"] / 60.0
        self._endpoint = ModelEndpoint(
            endpoint=self._resolved,
            api_key=config.api_key,
            entra=entra,
            timeout=timeout,
            max_connections=check_int(_OWNER, "max_connections", max_connections, minimum=1),
            max_response_bytes=check_int(
                _OWNER, "max_response_bytes", max_response_bytes, minimum=1
            ),
            trust_env=check_bool(_OWNER, "trust_env", trust_env),
        )
        self._limited: LimitedAdapter = limit(
            self._endpoint,
            max_concurrency=max_concurrency,
            rate=rate,
            burst=burst,
            adaptive=adaptive,
            max_retries=max_retries,
            retry_budget=retry_budget,
            max_retry_after=max_retry_after,
            name=name,
            backend=backend,
        )
        self._usage = usage_for(
            name=name, model=self._resolved.model, endpoint=self._resolved.display_url
        )

    def __repr__(self) -> str:
        return (
            f"LLMClient(model={self._resolved.model!r}, endpoint={self._resolved.display_url!r}, "
            f"name={self.name!r})"
        )

    @property
    def config(self) -> LLMConfig:
        return self._config

    @property
    def name(self) -> str:
        """The limiter and statistics name."""
        return self._limited.name

    @property
    def model(self) -> str:
        """The model name sent in requests (the deployment, when one is configured)."""
        return self._resolved.model

    @property
    def url(self) -> str:
        """Where requests are posted (query string included)."""
        return self._resolved.url

    @property
    def azure(self) -> bool:
        return self._resolved.azure

    @property
    def limiter(self) -> LimitedAdapter:
        """The ``LimitedAdapter`` every request goes through (its ``statistics()`` too)."""
        return self._limited

    @property
    def cache(self) -> ResponseCache | None:
        """The cache calls use now (``None``: off)."""
        if self._cache is False:
            return None
        return self._cache if self._cache is not None else default_cache()

    def statistics(self) -> LLMStatistics:
        """Counters of every client with this name in this process (see ``LLMStatistics``)."""
        return self._usage.snapshot()

    async def __aenter__(self) -> Self:
        self._endpoint.hold()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._endpoint.unhold()

    def request_body(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        json_object: bool = False,
        seed: int | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The JSON body ``complete`` would send (for inspection and cache keys)."""
        body: dict[str, Any] = {**self._config.generation_settings, "model": self._resolved.model}
        if tools is None:
            body["messages"] = _check_messages(messages)
        else:
            body["messages"], body["tools"] = _check_tool_loop(messages, tools)
        if seed is not None:
            body["seed"] = check_int(f"{_OWNER}.complete", "seed", seed)
        if json_object and self._config.metadata.get("is_json_supported", True):
            body["response_format"] = {"type": "json_object"}
        return body

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        json_object: bool = False,
        seed: int | None = None,
        tag: str = "",
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Completion:
        """Send ``messages`` (``[{"role": ..., "content": ...}, ...]``); the reply.

        ``tools`` (OpenAI's ``[{"type": "function", "function": {...}}, ...]``) offers
        the model functions to call: the reply's ``tool_calls`` are what it asked for,
        and the conversation may then carry assistant messages with ``tool_calls`` and
        ``tool`` messages with their results (sent as given), ending with either.

        ``json_object`` asks for a JSON object (``response_format``) unless
        ``metadata["is_json_supported"]`` is false; ``seed`` overrides the configured
        seed for this call; ``tag`` distinguishes calls that send the same body but
        must not share a cache entry (retries, variants). An empty reply is returned
        as is (``text == ""``); the caller decides what it means.
        """
        body = self.request_body(messages, json_object=json_object, seed=seed, tools=tools)
        check_instance(f"{_OWNER}.complete", "tag", tag, str, expected="a str")
        usage = self._usage
        usage.calls += 1
        cache = self.cache
        key = None
        if cache is not None:
            key = cache.key(body=body, tag=tag)
            hit = await cache.get(key)
            if hit is not None:
                usage.cache_hits += 1
                return Completion(
                    text=hit.text,
                    model=hit.model,
                    cached=True,
                    usage=hit.usage,
                    tool_calls=tuple(LLMToolCall(**call) for call in hit.tool_calls or ()),
                )
            usage.cache_misses += 1
        usage.requests += 1
        try:
            session = await self._limited.create_session_async()
            async with session:
                response = await session.send_async(
                    ChatRequest(prompt=str(body["messages"][-1].get("content") or " "), body=body)
                )
        except Exception:
            usage.failures += 1
            raise
        metadata = response.metadata
        usage.add_usage(metadata.get("usage"))
        model = metadata.get("model")
        finish = metadata.get("finish_reason")
        reported = metadata.get("usage")
        ids = metadata.get("tool_call_ids") or [None] * len(response.tool_calls)
        completion = Completion(
            text=response.text,
            model=model if isinstance(model, str) else None,
            usage=reported if isinstance(reported, dict) else None,
            finish_reason=finish if isinstance(finish, str) else None,
            tool_calls=tuple(
                LLMToolCall(id=call_id, name=call.name, arguments=call.arguments)
                for call_id, call in zip(ids, response.tool_calls, strict=True)
            ),
        )
        if not (completion.text.strip() or completion.tool_calls):
            usage.empty_replies += 1
        elif cache is not None and key is not None:
            await cache.put(
                key,
                CachedCompletion(
                    text=completion.text,
                    model=completion.model,
                    usage=completion.usage,
                    tool_calls=[attrs.asdict(call) for call in completion.tool_calls] or None,
                ),
            )
            usage.cache_writes += 1
        return completion


_SHARED: OrderedDict[str, LLMClient] = OrderedDict()
_SHARED_LIMIT = 256
_SHARED_LOCK = threading.Lock()


def _fingerprint(config: LLMConfig) -> str:
    secret = hashlib.sha256((config.api_key or "").encode()).hexdigest()
    material = [config.model, config.endpoint, config.deployment, secret, config.metadata]
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


def shared_client(config: LLMConfig) -> LLMClient:
    """The default ``LLMClient`` for ``config``: one per distinct configuration, shared by
    every judge, driver and generator given that ``LLMConfig`` (one limiter, one set of
    statistics). The 256 most recently used are kept alive (so their limiters still
    show in the run's report after the test that built them ended)."""
    _check_config("shared_client", config)
    key = _fingerprint(config)
    with _SHARED_LOCK:
        client = _SHARED.get(key)
        if client is None:
            client = _SHARED[key] = LLMClient(config)
        _SHARED.move_to_end(key)
        while len(_SHARED) > _SHARED_LIMIT:
            _SHARED.popitem(last=False)
    return client


def as_client(llm: object, *, owner: str) -> LLMClient:
    """``llm`` as an ``LLMClient``: an ``LLMConfig`` gets its shared client."""
    if isinstance(llm, LLMClient):
        return llm
    if isinstance(llm, LLMConfig):
        return shared_client(llm)
    raise invalid(owner, "llm", "an LLMConfig or an LLMClient", llm)
