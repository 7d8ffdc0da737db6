"""``ChatCompletionsApp``: a small ASGI application speaking the chat-completions dialect.

It is served by hypercorn (see ``_serve``) but is plain ASGI 3, so any ASGI server can
run it. Per ``POST /v1/chat/completions`` it:

1. reads the body (``413`` beyond ``max_body_bytes``), then takes a token from the
   bucket or answers ``429`` with ``Retry-After`` (and ``retry-after-ms``);
2. validates the request (``400`` naming the field);
3. draws its faults: an error status, or a hang that lasts until the client
   disconnects or the server stops (and, after the agent answered, whether the
   answer goes out as one of the broken ``200`` bodies, ``broken_rate``);
4. answers a ``sim-judge`` / ``sim-attacker`` / ``sim-generator`` model with the
   simulated models (``_models``); otherwise finds the conversation the messages
   continue (or starts one), turns the last user message back into a ``Request``
   (prompt plus delimited documents) and answers it with that conversation's
   ``SimulatedAgent`` session;
5. returns the text, the tool calls in OpenAI format and word-count usage numbers.

Azure OpenAI paths are served too (``/openai/deployments/{name}/chat/completions``,
which needs an ``api-version`` query parameter and answers as model ``name``, and
``/openai/v1/chat/completions``). With ``api_key`` set, a request must carry it as
``Authorization: Bearer`` or ``api-key``; otherwise the answer is ``401`` and, like
some real APIs, its message repeats the credential it got, so clients' redaction of
secrets in error messages can be tested. With ``echo_credentials`` every error answer
repeats the headers the request carried (all but the transport ones), credentials
included, and so do the simulated judge's rationale and evidence.

Conversations are recognised by content: the server remembers a digest of every
conversation it answered (the messages plus its own reply), so a client that resends
the history gets the same session back, with its memory of what it read and decided.
Requests carrying a ``seed`` are answered by an agent seeded from ``(server seed,
request seed)``, which makes a trial's answers independent of arrival order.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import anyio.to_thread

from rampart._checks import check_optional_instance
from rampart.adapters._documents import split_documents
from rampart.core.types import ObservabilityLevel, Payload, PayloadFormat, Request, Response
from rampart.testing._simulated import DEFAULT_SECRET, SimulatedAgent, SimulatedSession
from rampart.testing._surface import InMemorySurface
from rampart.testing.server._agentdojo import (
    AgentDojoModelError,
    agentdojo_reply,
    is_agentdojo_model,
)
from rampart.testing.server._bucket import TokenBucket
from rampart.testing.server._models import SimulatedModels, UnknownModelMode, is_simulated_model
from rampart.testing.server._options import ServerOptions
from rampart.testing.server._stats import ServerStatistics

__all__ = [
    "ASGIApp",
    "ChatCompletionsApp",
    "Receive",
    "Scope",
    "Send",
    "go_duration",
    "ietf_quota_headers",
    "openai_quota_headers",
]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_COMPLETIONS = "/v1/chat/completions"
_AZURE_V1 = "/openai/v1/chat/completions"
_AZURE_DEPLOYMENT = re.compile(r"/openai/deployments/([^/]+)/chat/completions")
_TEXT_FORMATS = {fmt.value: fmt for fmt in PayloadFormat if fmt.is_text}
_MAX_AGENTS = 4096


_Reply = tuple[int, dict[str, Any] | bytes, list[tuple[bytes, bytes]]]
"""Status, JSON body (or JSON text, already encoded) and extra headers of a response."""


def go_duration(seconds: float) -> str:
    """``seconds`` as OpenAI writes ``x-ratelimit-reset-*``: ``"6m0s"``, ``"1.5s"``,
    ``"12ms"`` (Go duration syntax, microsecond precision)."""
    micros = max(0, round(seconds * 1_000_000))
    if micros < 1000:
        return f"{micros}us" if micros else "0s"
    if micros < 1_000_000:
        return f"{micros / 1000:.3f}".rstrip("0").rstrip(".") + "ms"
    minutes, micros = divmod(micros, 60_000_000)
    text = f"{micros / 1_000_000:.6f}".rstrip("0").rstrip(".") + "s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return text


def openai_quota_headers(*, tokens: float, rate: float, burst: int) -> list[tuple[bytes, bytes]]:
    """OpenAI's request-quota headers for a bucket holding ``tokens`` of ``burst``:
    the limit (its size), what is left (whole requests) and the time until it is full."""
    return [
        (b"x-ratelimit-limit-requests", str(burst).encode()),
        (b"x-ratelimit-remaining-requests", str(max(0, math.floor(tokens))).encode()),
        (b"x-ratelimit-reset-requests", go_duration((burst - tokens) / rate).encode()),
    ]


def ietf_quota_headers(*, tokens: float, rate: float) -> list[tuple[bytes, bytes]]:
    """The IETF draft's fields for a bucket refilling at ``rate``: the policy as a quota
    per whole-second window (``q / w`` = the rate, exactly when some window up to an
    hour makes ``q`` whole), and what is left with the seconds until the next request
    is allowed (rounded up)."""
    window = next((w for w in (1, 10, 60, 3600) if abs(rate * w - round(rate * w)) < 1e-9), 60)
    quota = max(1, math.floor(rate * window + 1e-9))
    remaining = max(0, math.floor(tokens))
    until = 0 if tokens >= 1.0 else math.ceil((1.0 - tokens) / rate)
    return [
        (b"ratelimit-policy", f'"default";q={quota};w={window}'.encode()),
        (b"ratelimit", f'"default";r={remaining};t={until}'.encode()),
    ]


class _Disconnected(Exception):
    """The client went away before its request body was complete."""


class BadRequest(Exception):
    """A request the server refuses with a 4xx status and an OpenAI-style error body."""

    def __init__(self, status: int, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


def _error_body(
    message: str, kind: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# Headers every HTTP client sends; the others (credentials among them) are echoed.
_TRANSPORT_HEADERS = frozenset(
    {
        b"accept",
        b"accept-encoding",
        b"connection",
        b"content-length",
        b"content-type",
        b"host",
        b"user-agent",
    }
)


def _given_headers(scope: Scope) -> str:
    """The request's non-transport headers, as ``name: value; ...``."""
    return "; ".join(
        f"{name.decode('latin-1')}: {value.decode('latin-1')}"
        for name, value in scope.get("headers", [])
        if name.lower() not in _TRANSPORT_HEADERS
    )


def _with_credentials(reply: _Reply, scope: Scope) -> _Reply:
    """``reply`` (an error) with the request's non-transport headers in its message."""
    status, payload, headers = reply
    given = _given_headers(scope)
    error = payload.get("error") if isinstance(payload, dict) else None
    if given and isinstance(payload, dict) and isinstance(error, dict):
        error = {**error, "message": f"{error.get('message', '')} (you sent {given})"}
        payload = {**payload, "error": error}
    return status, payload, headers


async def send_json(
    send: Send, status: int, payload: object, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Send a complete JSON response (``payload`` as a value, or as encoded JSON text)."""
    if isinstance(payload, bytes):
        body = payload
    else:
        body = json.dumps(payload, separators=(",", ":")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _Disconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BadRequest(413, f"request body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _message_text(content: object, path: str) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise BadRequest(400, f"{path}[{index}] must be a content part object with a type")
            if part["type"] == "text":
                text = part.get("text")
                if not isinstance(text, str):
                    raise BadRequest(400, f"{path}[{index}].text must be a string")
                texts.append(text)
        return "\n".join(texts)
    raise BadRequest(400, f"{path} must be a string, null or an array of content parts")


def _normalise(
    messages: object, *, tool_loop: bool = False
) -> list[tuple[str, str, tuple[tuple[str, str, str], ...]]]:
    """``(role, text, tool calls)`` per message; ``BadRequest`` naming the bad field.

    The last message must be the user's, except in a ``tool_loop`` (a tool-calling
    model's conversation, which continues after each tool result)."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest(400, "messages must be a non-empty array", param="messages")
    normalised = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, dict):
            raise BadRequest(400, f"{path} must be an object", param=path)
        role = message.get("role")
        if not isinstance(role, str):
            raise BadRequest(400, f"{path}.role must be a string", param=f"{path}.role")
        text = _message_text(message.get("content"), f"{path}.content")
        calls = []
        raw_calls = message.get("tool_calls") or []
        if not isinstance(raw_calls, list):
            raise BadRequest(400, f"{path}.tool_calls must be an array", param=f"{path}.tool_calls")
        for number, call in enumerate(raw_calls):
            function = call.get("function") if isinstance(call, dict) else None
            if not isinstance(function, dict):
                raise BadRequest(400, f"{path}.tool_calls[{number}].function must be an object")
            calls.append(
                (
                    str(call.get("id", "")),
                    str(function.get("name", "")),
                    str(function.get("arguments", "")),
                )
            )
        normalised.append((role, text, tuple(calls)))
    if normalised[-1][0] != "user" and not (tool_loop and normalised[-1][0] == "tool"):
        raise BadRequest(400, "the last message must have role 'user'", param="messages")
    return normalised


def broken_body(kind: str, payload: dict[str, Any]) -> bytes:
    """``payload`` (a well-formed completion) turned into the broken body ``kind``.

    See ``BROKEN_BODIES`` for what each one is. The id, model and usage are kept, so
    only the part under test is wrong.
    """
    choice = payload["choices"][0]
    message = choice["message"]
    if kind == "duplicate-tool-calls":
        # Written by hand: a JSON encoder cannot produce a repeated key.
        calls = json.dumps(message.get("tool_calls", []), separators=(",", ":"))
        content = json.dumps(message.get("content"))
        head = {key: value for key, value in payload.items() if key != "choices"}
        text = json.dumps(head, separators=(",", ":"))[:-1]
        return (
            f'{text},"choices":[{{"index":0,"message":{{"role":"assistant",'
            f'"content":{content},"tool_calls":{calls},"tool_calls":null}},'
            f'"finish_reason":{json.dumps(choice["finish_reason"])}}}]}}'
        ).encode()
    broken = dict(payload)
    if kind == "empty-message":
        broken["choices"] = [{"message": {}}]
    elif kind == "error-object":
        broken["error"] = {"message": "upstream model failed", "type": "server_error"}
        broken["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None},
                "finish_reason": "error",
            }
        ]
    elif kind == "finish-error":
        broken["choices"] = [{**choice, "finish_reason": "error"}]
    elif kind == "content-filter":
        broken["choices"] = [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None},
                "finish_reason": "content_filter",
            }
        ]
    else:  # pragma: no cover - ServerOptions only admits BROKEN_BODIES
        raise ValueError(f"unknown broken body {kind!r}")
    return json.dumps(broken, separators=(",", ":")).encode()


def _digest(
    seed: int | None, messages: list[tuple[str, str, tuple[tuple[str, str, str], ...]]]
) -> str:
    encoded = json.dumps([seed, messages], separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def _words(text: str) -> int:
    return len(text.split())


class _Conversation:
    __slots__ = ("session", "turns")

    def __init__(self, session: SimulatedSession) -> None:
        self.session = session
        self.turns = 0


class ChatCompletionsApp:
    """The ASGI app behind ``rampart.testing.server`` (see the module docstring).

    ``surface`` (default: a fresh ``InMemorySurface``) is the inbox every simulated
    agent reads, so in-process tests can plant documents in it. ``clock`` (default:
    ``anyio.current_time``) drives the token bucket and the statistics window.
    Routes: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /stats``,
    ``POST /stats/reset``.
    """

    def __init__(
        self,
        options: ServerOptions | None = None,
        *,
        surface: InMemorySurface | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        owner = "ChatCompletionsApp"
        options = check_optional_instance(
            owner, "options", options, ServerOptions, expected="a ServerOptions"
        )
        if options is None:
            options = ServerOptions()
        surface = check_optional_instance(
            owner, "surface", surface, InMemorySurface, expected="an InMemorySurface"
        )
        if surface is None:
            surface = InMemorySurface(name="inbox")
        self._options = options
        self._surface = surface
        self._clock = clock if clock is not None else anyio.current_time
        self._bucket: TokenBucket | None = None
        self._faults = random.Random(f"rampart.testing.server/{options.seed}/faults")
        self._agents: OrderedDict[int | None, SimulatedAgent] = OrderedDict()
        # Conversations by the digest of their history. Identical histories (trials of
        # one scenario) share a key, so each key holds a list; any of them may continue.
        self._conversations: OrderedDict[str, list[_Conversation]] = OrderedDict()
        self._remembered = 0
        self._closing: anyio.Event | None = None
        self._completions = 0
        self._models = SimulatedModels(seed=options.seed)
        self._reset_counters()
        self._in_flight = 0

    def _reset_counters(self) -> None:
        self._requests = 0
        self._served = 0
        self._rate_limited = 0
        self._errors = 0
        self._hangs = 0
        self._broken = 0
        self._bad_requests = 0
        self._model_requests = 0
        self._max_in_flight = 0
        self._first_request_at: float | None = None
        self._last_served_at: float | None = None

    @property
    def options(self) -> ServerOptions:
        return self._options

    @property
    def surface(self) -> InMemorySurface:
        return self._surface

    def statistics(self) -> ServerStatistics:
        window = 0.0
        if self._first_request_at is not None and self._last_served_at is not None:
            window = max(0.0, self._last_served_at - self._first_request_at)
        return ServerStatistics(
            requests=self._requests,
            served=self._served,
            rate_limited=self._rate_limited,
            errors=self._errors,
            hangs=self._hangs,
            broken=self._broken,
            bad_requests=self._bad_requests,
            in_flight=self._in_flight,
            max_in_flight=self._max_in_flight,
            conversations=self._remembered,
            window_seconds=window,
            served_per_second=self._served / window if window > 0 else 0.0,
            rate=self._options.rate,
            burst=self._options.burst,
            model_requests=self._model_requests,
        )

    def reset_statistics(self) -> None:
        """Zero the counters (``max_in_flight`` restarts from the current load)."""
        self._reset_counters()
        self._max_in_flight = self._in_flight

    def close(self) -> None:
        """Release hanging requests (they answer ``503``); later hangs end at once."""
        self._closing_event().set()

    def _closing_event(self) -> anyio.Event:
        if self._closing is None:
            self._closing = anyio.Event()
        return self._closing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind != "http":
            return  # websockets are not part of the dialect; the server closes them
        path = scope["path"]
        method = scope["method"]
        deployment = _AZURE_DEPLOYMENT.fullmatch(path)
        if path in (_COMPLETIONS, _AZURE_V1) or deployment is not None:
            if method != "POST":
                await self._refuse(send, 405, f"use POST for {path}")
            elif deployment is not None and b"api-version=" not in scope.get("query_string", b""):
                await self._refuse(send, 400, "the api-version query parameter is required")
            else:
                model = deployment.group(1) if deployment is not None else None
                await self._completion(scope, receive, send, model)
        elif path == "/stats" and method == "GET":
            await send_json(send, 200, self.statistics().to_dict())
        elif path == "/stats/reset" and method == "POST":
            self.reset_statistics()
            await send_json(send, 200, self.statistics().to_dict())
        elif path == "/v1/models" and method == "GET":
            model = {"id": self._options.model, "object": "model", "owned_by": "rampart"}
            await send_json(send, 200, {"object": "list", "data": [model]})
        else:
            await self._refuse(send, 404, f"no route for {method} {path}")

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await self._close_conversations()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _refuse(
        self, send: Send, status: int, message: str, param: str | None = None
    ) -> None:
        await send_json(send, status, _error_body(message, "invalid_request_error", param=param))

    async def _completion(
        self, scope: Scope, receive: Receive, send: Send, model: str | None
    ) -> None:
        now = self._clock()
        self._requests += 1
        if self._first_request_at is None:
            self._first_request_at = now
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            reply = await self._handle(scope, receive, model)
        finally:
            # Leave the in-flight count before answering, so a client that has its
            # answer never sees the request still counted.
            self._in_flight -= 1
        if reply is not None:
            if self._options.echo_credentials and reply[0] >= 400:
                reply = _with_credentials(reply, scope)
            await send_json(send, *reply)

    def _check_credentials(self, scope: Scope) -> None:
        expected = self._options.api_key
        if expected is None:
            return
        headers = {name.lower(): value for name, value in scope.get("headers", [])}
        bearer = headers.get(b"authorization", b"").decode("latin-1")
        given = headers.get(b"api-key", b"").decode("latin-1") or bearer.removeprefix("Bearer ")
        if given != expected:
            shown = given or "(none)"
            raise BadRequest(401, f"Incorrect API key provided: {shown}")

    async def _handle(self, scope: Scope, receive: Receive, model: str | None) -> _Reply | None:
        """The reply to one completion request (``None``: the client went away)."""
        quota: list[tuple[bytes, bytes]] = []
        reply = await self._reply_to(scope, receive, model, quota)
        if reply is None or not quota:
            return reply
        status, body, headers = reply
        return status, body, [*headers, *quota]

    async def _reply_to(
        self,
        scope: Scope,
        receive: Receive,
        model: str | None,
        quota: list[tuple[bytes, bytes]],
    ) -> _Reply | None:
        """The reply; ``quota`` receives the rate-limit headers once a token was taken."""
        try:
            body = await _read_body(receive, self._options.max_body_bytes)
            self._check_credentials(scope)
            wait = self._take_token()
            quota.extend(self._quota_headers())
            if wait > 0:
                self._rate_limited += 1
                return self._too_many(wait)
            requested, seed, messages = self._parse(body)
            model = model or requested
        except BadRequest as exc:
            self._bad_requests += 1
            return exc.status, _error_body(str(exc), "invalid_request_error", param=exc.param), []
        except _Disconnected:
            return None
        if self._chance(self._options.error_rate):
            self._errors += 1
            status = self._faults.choice(self._options.error_statuses)
            return status, _error_body(f"injected fault: HTTP {status}", "server_error"), []
        if self._chance(self._options.hang_rate):
            self._hangs += 1
            if await self._hang(receive):
                return 503, _error_body("server shutting down", "server_error"), []
            return None
        if is_agentdojo_model(model):
            return await self._agentdojo_reply(model, messages)
        if is_simulated_model(model):
            return await self._model_reply(model, seed, messages, scope)
        payload = await self._answer(seed, messages)
        self._served += 1
        self._last_served_at = self._clock()
        if self._chance(self._options.broken_rate):
            self._broken += 1
            kind = self._faults.choice(self._options.broken_bodies)
            return 200, broken_body(kind, payload), []
        return 200, payload, []

    def _quota_headers(self) -> list[tuple[bytes, bytes]]:
        """The bucket as a provider states it (``rate_limit_headers``), right after the
        request took its token (or was refused one)."""
        style = self._options.rate_limit_headers
        bucket = self._bucket
        if style == "none" or bucket is None:
            return []
        tokens = bucket.tokens(self._clock())
        headers: list[tuple[bytes, bytes]] = []
        if style in ("openai", "all"):
            headers += openai_quota_headers(tokens=tokens, rate=bucket.rate, burst=bucket.burst)
        if style in ("ietf", "all"):
            headers += ietf_quota_headers(tokens=tokens, rate=bucket.rate)
        return headers

    async def _model_reply(
        self,
        model: str,
        seed: int | None,
        messages: list[tuple[str, str, tuple[tuple[str, str, str], ...]]],
        scope: Scope,
    ) -> _Reply:
        """A simulated judge, attacker or generator answers (see ``_models``)."""
        self._model_requests += 1
        try:
            answer = self._models.answer(
                model,
                [(role, text) for role, text, _ in messages],
                seed,
                echo=_given_headers(scope) if self._options.echo_credentials else "",
            )
        except UnknownModelMode as exc:
            self._bad_requests += 1
            return 400, _error_body(str(exc), "invalid_request_error", param="model"), []
        if answer.rate_limited:
            self._rate_limited += 1
            headers = [(b"retry-after", b"1"), (b"retry-after-ms", b"20")]
            body = _error_body(f"{model} is rate limited", "requests", code="rate_limit_exceeded")
            return 429, body, headers
        text = answer.text or ""
        return await self._simulated_completion(
            model, messages, {"role": "assistant", "content": text}
        )

    async def _agentdojo_reply(
        self, model: str, messages: list[tuple[str, str, tuple[tuple[str, str, str], ...]]]
    ) -> _Reply:
        """The simulated AgentDojo agent answers (see ``_agentdojo``)."""
        self._model_requests += 1
        try:
            message = await anyio.to_thread.run_sync(agentdojo_reply, model, messages)
        except AgentDojoModelError as exc:
            self._bad_requests += 1
            return 400, _error_body(str(exc), "invalid_request_error", param="model"), []
        return await self._simulated_completion(model, messages, message)

    async def _simulated_completion(
        self,
        model: str,
        messages: list[tuple[str, str, tuple[tuple[str, str, str], ...]]],
        message: dict[str, Any],
    ) -> _Reply:
        """A simulated model's ``message`` as a completion, after the server's latency."""
        if self._options.latency > 0:
            await anyio.sleep(self._options.latency)
        self._completions += 1
        self._served += 1
        self._last_served_at = self._clock()
        prompt_tokens = sum(_words(text) for _, text, _ in messages)
        written = _words(message.get("content") or "") + sum(
            _words(call["function"]["arguments"]) for call in message.get("tool_calls", [])
        )
        payload = {
            "id": f"chatcmpl-{self._completions:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": written,
                "total_tokens": prompt_tokens + written,
            },
        }
        return 200, payload, []

    def _take_token(self) -> float:
        rate = self._options.rate
        if rate is None:
            return 0.0
        now = self._clock()
        if self._bucket is None:
            self._bucket = TokenBucket(rate=rate, burst=self._options.burst, now=now)
        return self._bucket.take(now)

    def _too_many(self, wait: float) -> _Reply:
        headers = [(b"retry-after", str(max(1, math.ceil(wait))).encode())]
        if self._options.retry_after_ms:
            headers.append((b"retry-after-ms", str(max(1, math.ceil(wait * 1000))).encode()))
        message = f"rate limit of {self._options.rate:g} requests/s reached; retry in {wait:.3f} s"
        return 429, _error_body(message, "requests", code="rate_limit_exceeded"), headers

    def _chance(self, probability: float) -> bool:
        return probability > 0.0 and (probability >= 1.0 or self._faults.random() < probability)

    async def _hang(self, receive: Receive) -> bool:
        """Wait for the client to disconnect (``False``) or the server to close (``True``)."""
        closing = self._closing_event()
        async with anyio.create_task_group() as group:

            async def stop_on_close() -> None:
                await closing.wait()
                group.cancel_scope.cancel()

            group.start_soon(stop_on_close)
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()
        return closing.is_set()

    def _parse(
        self, body: bytes
    ) -> tuple[str, int | None, list[tuple[str, str, tuple[tuple[str, str, str], ...]]]]:
        from rampart.codec import parse_strict_json  # the one JSON reading policy

        try:
            request = parse_strict_json(data=body.decode("utf-8"))
        except UnicodeDecodeError:
            raise BadRequest(400, "request body must be a JSON object") from None
        except ValueError as error:  # SchemaError: depth, size, duplicate keys, NaN
            raise BadRequest(400, f"request body must be a JSON object ({error})") from None
        if not isinstance(request, dict):
            raise BadRequest(400, "request body must be a JSON object")
        model = request.get("model")
        if not isinstance(model, str) or not model:
            raise BadRequest(400, "model must be a non-empty string", param="model")
        if request.get("stream"):
            raise BadRequest(400, "stream is not supported by this server", param="stream")
        seed = request.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise BadRequest(400, "seed must be an integer", param="seed")
        tool_loop = is_agentdojo_model(model)
        return model, seed, _normalise(request.get("messages"), tool_loop=tool_loop)

    def _agent(self, seed: int | None) -> SimulatedAgent:
        agent = self._agents.get(seed)
        if agent is not None:
            self._agents.move_to_end(seed)
            return agent
        if seed is None:
            agent_seed = self._options.seed
        else:
            digest = hashlib.sha256(f"{self._options.seed}/{seed}".encode()).digest()
            agent_seed = int.from_bytes(digest[:8], "big")
        agent = SimulatedAgent(
            compliance=self._options.compliance,
            seed=agent_seed,
            secret=self._options.secret or DEFAULT_SECRET,
            latency=self._options.latency,
            observability=ObservabilityLevel.TOOL_ONLY,
            surface=self._surface,
            name=self._options.model,
        )
        self._agents[seed] = agent
        if len(self._agents) > _MAX_AGENTS:
            self._agents.popitem(last=False)
        return agent

    async def _answer(
        self, seed: int | None, messages: list[tuple[str, str, tuple[tuple[str, str, str], ...]]]
    ) -> dict[str, Any]:
        conversation = self._recall(_digest(seed, messages[:-1]))
        if conversation is None:
            session = await self._agent(seed).create_session_async()
            await session.__aenter__()
            conversation = _Conversation(session)
        prompt, documents = split_documents(messages[-1][1])
        attachments = [
            Payload(
                id=document.id,
                content=document.content,
                format=_TEXT_FORMATS.get(document.format, PayloadFormat.TEXT),
            )
            for document in documents
        ]
        request = Request(
            prompt=prompt if prompt or not attachments else None, attachments=attachments
        )
        response = await conversation.session.send_async(request)
        conversation.turns += 1
        self._completions += 1
        reply, wire_calls = self._reply(conversation.turns, response)
        key = _digest(seed, [*messages, reply])
        await self._remember(key, conversation)
        prompt_tokens = sum(_words(text) for _, text, _ in messages)
        completion_tokens = _words(response.text) + sum(_words(args) for _, _, args in reply[2])
        message: dict[str, Any] = {"role": "assistant", "content": response.text}
        if wire_calls:
            message["tool_calls"] = wire_calls
        return {
            "id": f"chatcmpl-{self._completions:08d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._options.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if wire_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def _reply(
        self, turn: int, response: Response
    ) -> tuple[tuple[str, str, tuple[tuple[str, str, str], ...]], list[dict[str, Any]]]:
        """The reply as the conversation key sees it, and its tool calls on the wire."""
        wire_calls = []
        key_calls = []
        for number, call in enumerate(response.tool_calls):
            call_id = f"call_{turn}_{number}"
            arguments = json.dumps(call.arguments, separators=(",", ":"))
            wire_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": arguments},
                }
            )
            key_calls.append((call_id, call.name, arguments))
        return ("assistant", response.text, tuple(key_calls)), wire_calls

    def _recall(self, key: str) -> _Conversation | None:
        waiting = self._conversations.get(key)
        if not waiting:
            return None
        conversation = waiting.pop()
        if not waiting:
            del self._conversations[key]
        self._remembered -= 1
        return conversation

    async def _remember(self, key: str, conversation: _Conversation) -> None:
        self._conversations.setdefault(key, []).append(conversation)
        self._conversations.move_to_end(key)
        self._remembered += 1
        while self._remembered > self._options.max_conversations:
            oldest_key, oldest = next(iter(self._conversations.items()))
            evicted = oldest.pop(0)
            if not oldest:
                del self._conversations[oldest_key]
            self._remembered -= 1
            await evicted.session.__aexit__(None, None, None)

    async def _close_conversations(self) -> None:
        self.close()
        while self._conversations:
            _, conversations = self._conversations.popitem()
            self._remembered -= len(conversations)
            for conversation in conversations:
                await conversation.session.__aexit__(None, None, None)
