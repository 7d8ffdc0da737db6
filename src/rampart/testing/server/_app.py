"""``ChatCompletionsApp``: the test server's ASGI application, for both OpenAI APIs.

It is served by hypercorn (see ``_serve``) but is plain ASGI 3, so any ASGI server can
run it. Per ``POST /v1/chat/completions`` or ``POST /v1/responses`` it:

1. reads the body (``413`` beyond ``max_body_bytes``), then takes a token from the
   bucket or answers ``429`` with ``Retry-After`` (and ``retry-after-ms``);
2. reads the request in its API's form (``_chat``, ``_responses``) into one
   ``ModelRequest`` (``400`` naming the field; for the Responses API the stored chain
   of ``previous_response_id`` comes first);
3. draws its faults: an error status, or a hang that lasts until the client
   disconnects or the server stops (and, after the agent answered, whether the
   answer goes out as one of the broken ``200`` bodies, ``broken_rate``);
4. answers with a simulated model (``sim-judge`` / ``sim-attacker`` /
   ``sim-generator``: ``_models``; ``sim-agentdojo``: ``_agentdojo``; ``sim-tools``:
   ``_tool_model``) or else the simulated agent: the conversation the messages
   continue (or a new one) turns the last user message back into a ``Request``
   (prompt plus delimited documents) for its ``SimulatedAgent`` session;
5. writes the ``Answer`` in the request's API form, with word-count usage.

So rate limits, quotas, faults, latency and statistics are one code path for both
APIs. A body of more than ``INLINE_BYTES`` is read, and a conversation of more
characters answered, in a worker thread, so a large request never stalls the event
loop (and with it every other client and ``/stats``).

Azure OpenAI paths are served too (``/openai/deployments/{name}/chat/completions``,
which needs an ``api-version`` query parameter and answers as model ``name``,
``/openai/v1/chat/completions``, ``/openai/v1/responses`` and ``/openai/responses``,
the last needing ``api-version``). With ``api_key`` set, a request must carry it as
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
import logging
import math
import random
import re
import time
from collections import OrderedDict
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import anyio.to_thread
import attrs

from rampart._checks import check_callable, check_optional_instance
from rampart.adapters._internal import split_documents
from rampart.core.types import ObservabilityLevel, Payload, PayloadFormat, Request
from rampart.testing._simulated import DEFAULT_SECRET, SimulatedAgent, SimulatedSession
from rampart.testing._surface import InMemorySurface
from rampart.testing.server._agentdojo import agentdojo_reply, is_agentdojo_model
from rampart.testing.server._bucket import TokenBucket
from rampart.testing.server._chat import broken_body, chat_payload, read_chat
from rampart.testing.server._models import SimulatedModels, is_simulated_model
from rampart.testing.server._options import ServerOptions
from rampart.testing.server._responses import (
    ResponsesInput,
    ResponseStore,
    Stored,
    broken_response,
    new_response_id,
    read_responses,
    response_payload,
)
from rampart.testing.server._stats import ServerStatistics
from rampart.testing.server._tool_model import is_tools_model, policy_choice, tools_answer
from rampart.testing.server._wire import (
    Answer,
    BadModelInput,
    BadRequest,
    Call,
    ChatMessage,
    ModelRequest,
    Receive,
    Reply,
    Scope,
    Send,
    chars,
    check_ending,
    error_body,
    read_json_object,
    send_json,
    words,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from rampart.testing.server._tool_policy import ToolPolicy

__all__ = [
    "ChatCompletionsApp",
    "INLINE_BYTES",
    "STORED_RESPONSE_CHARS",
    "go_duration",
    "ietf_quota_headers",
    "openai_quota_headers",
]

_T = TypeVar("_T")
_LOGGER = logging.getLogger("rampart.testing.server")
_COMPLETIONS = ("/v1/chat/completions", "/openai/v1/chat/completions")
_AZURE_DEPLOYMENT = re.compile(r"/openai/deployments/([^/]+)/chat/completions")
_RESPONSES = ("/v1/responses", "/openai/v1/responses")
_AZURE_RESPONSES = "/openai/responses"
_TEXT_FORMATS = {fmt.value: fmt for fmt in PayloadFormat if fmt.is_text}
_MAX_AGENTS = 4096
INLINE_BYTES = 64 * 1024
"""A request body larger than this is read in a worker thread, and a request whose
conversation holds more characters than this is answered in one."""
STORED_RESPONSE_CHARS = 64 * 1024 * 1024
"""Characters of history the stored Responses API chains may keep in all (at least
twice ``max_body_bytes``); the least recently used are forgotten first."""


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


def _with_credentials(reply: Reply, scope: Scope) -> Reply:
    """``reply`` (an error) with the request's non-transport headers in its message."""
    status, payload, headers = reply
    given = _given_headers(scope)
    error = payload.get("error") if isinstance(payload, dict) else None
    if given and isinstance(payload, dict) and isinstance(error, dict):
        error = {**error, "message": f"{error.get('message', '')} (you sent {given})"}
        payload = {**payload, "error": error}
    return status, payload, headers


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


class _PolicyFailed(Exception):
    """A user's ``tool_policy`` raised: the server answers ``500`` saying so (counted
    in ``errors``), and logs the traceback."""


@attrs.frozen
class _Route:
    """Where a request goes: its API, the Azure deployment (the model it names) and a
    refusal (a missing ``api-version``)."""

    api: Literal["chat", "responses"]
    model: str | None = None
    refusal: str | None = None


def _route(path: str, query: bytes) -> _Route | None:
    versioned = b"api-version=" in query
    deployment = _AZURE_DEPLOYMENT.fullmatch(path)
    if path in _COMPLETIONS or deployment is not None:
        model = deployment.group(1) if deployment is not None else None
        refusal = None if versioned or deployment is None else _NEEDS_VERSION
        return _Route("chat", model, refusal)
    if path in _RESPONSES or path == _AZURE_RESPONSES:
        refusal = None if versioned or path != _AZURE_RESPONSES else _NEEDS_VERSION
        return _Route("responses", None, refusal)
    return None


_NEEDS_VERSION = "the api-version query parameter is required"


def _digest(seed: int | None, messages: tuple[ChatMessage, ...]) -> str:
    encoded = json.dumps([seed, messages], separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()


def _tool_loop(model: str) -> bool:
    """Models whose conversation goes on after a tool result (the tool-calling ones)."""
    return is_agentdojo_model(model) or is_tools_model(model)


def _parse(route: _Route, body: bytes) -> ModelRequest | ResponsesInput:
    """The request read from ``body`` (pure: may run in a worker thread)."""
    request = read_json_object(body)
    if route.api == "chat":
        return read_chat(request, model=route.model, tool_loop=_tool_loop)
    return read_responses(request, model=route.model)


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
    ``tool_policy`` scripts the ``sim-tools`` model in-process (see ``ToolPolicy``).
    Routes: ``POST /v1/chat/completions``, ``POST /v1/responses`` (and their Azure
    forms), ``GET /v1/models``, ``GET /stats``, ``POST /stats/reset``.
    """

    def __init__(
        self,
        options: ServerOptions | None = None,
        *,
        surface: InMemorySurface | None = None,
        clock: Callable[[], float] | None = None,
        tool_policy: ToolPolicy | None = None,
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
        check_callable(
            owner, "tool_policy", tool_policy, expected="a ToolPolicy callable", optional=True
        )
        self._options = options
        self._surface = surface
        self._clock = clock if clock is not None else anyio.current_time
        self._tool_policy = tool_policy
        self._bucket: TokenBucket | None = None
        self._faults = random.Random(f"rampart.testing.server/{options.seed}/faults")
        self._agents: OrderedDict[int | None, SimulatedAgent] = OrderedDict()
        # Conversations by the digest of their history. Identical histories (trials of
        # one scenario) share a key, so each key holds a list; any of them may continue.
        self._conversations: OrderedDict[str, list[_Conversation]] = OrderedDict()
        self._remembered = 0
        self._responses = ResponseStore(
            max_responses=options.max_conversations,
            max_chars=max(STORED_RESPONSE_CHARS, 2 * options.max_body_bytes),
        )
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
        self._unknown_routes = 0
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
            unknown_routes=self._unknown_routes,
            stored_responses=len(self._responses),
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
        route = _route(path, scope.get("query_string", b""))
        if route is not None and method == "POST":
            await self._completion(scope, receive, send, route)
        elif path == "/stats" and method == "GET":
            await send_json(send, 200, self.statistics().to_dict())
        elif path == "/stats/reset" and method == "POST":
            self.reset_statistics()
            await send_json(send, 200, self.statistics().to_dict())
        elif path == "/v1/models" and method == "GET":
            model = {"id": self._options.model, "object": "model", "owned_by": "rampart"}
            await send_json(send, 200, {"object": "list", "data": [model]})
        else:
            self._unknown_routes += 1
            if route is not None:
                await self._refuse(send, 405, f"use POST for {path}")
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

    async def _refuse(self, send: Send, status: int, message: str) -> None:
        await send_json(send, status, error_body(message, "invalid_request_error"))

    async def _completion(self, scope: Scope, receive: Receive, send: Send, route: _Route) -> None:
        now = self._clock()
        self._requests += 1
        if self._first_request_at is None:
            self._first_request_at = now
        self._in_flight += 1
        self._max_in_flight = max(self._max_in_flight, self._in_flight)
        try:
            reply = await self._handle(scope, receive, route)
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

    async def _handle(self, scope: Scope, receive: Receive, route: _Route) -> Reply | None:
        """The reply to one completion request (``None``: the client went away)."""
        quota: list[tuple[bytes, bytes]] = []
        reply = await self._reply_to(scope, receive, route, quota)
        if reply is None or not quota:
            return reply
        status, body, headers = reply
        return status, body, [*headers, *quota]

    async def _reply_to(
        self, scope: Scope, receive: Receive, route: _Route, quota: list[tuple[bytes, bytes]]
    ) -> Reply | None:
        """The reply; ``quota`` receives the rate-limit headers once a token was taken."""
        try:
            body = await _read_body(receive, self._options.max_body_bytes)
            self._check_credentials(scope)
            if route.refusal is not None:
                raise BadRequest(400, route.refusal)
            wait = self._take_token()
            quota.extend(self._quota_headers())
            if wait > 0:
                self._rate_limited += 1
                return self._too_many(wait)
            large = len(body) > INLINE_BYTES
            parsed = await _maybe_off_loop(large, _parse, route, body)
            stored: Stored | None = None
            if isinstance(parsed, ResponsesInput):
                stored = self._chain(parsed)
                request = self._responses_request(parsed, stored)
            else:
                request = parsed
        except BadRequest as exc:
            self._bad_requests += 1
            refusal = error_body(str(exc), "invalid_request_error", param=exc.param, code=exc.code)
            return exc.status, refusal, []
        except _Disconnected:
            return None
        if self._chance(self._options.error_rate):
            self._errors += 1
            status = self._faults.choice(self._options.error_statuses)
            return status, error_body(f"injected fault: HTTP {status}", "server_error"), []
        if self._chance(self._options.hang_rate):
            self._hangs += 1
            if await self._hang(receive):
                return 503, error_body("server shutting down", "server_error"), []
            return None
        # A short follow-up may continue a long stored chain: the answer's work scales
        # with the whole conversation.
        large = large or chars(request.messages) > INLINE_BYTES
        answer = await self._answer(request, scope, large)
        if not isinstance(answer, Answer):
            return answer
        self._completions += 1
        self._served += 1
        self._last_served_at = self._clock()
        payload = self._write(answer, request, parsed, stored)
        if answer.agent and self._chance(self._options.broken_rate):
            self._broken += 1
            kind = self._faults.choice(self._options.broken_bodies)
            broken = broken_body if isinstance(parsed, ModelRequest) else broken_response
            return 200, broken(kind, payload), []
        return 200, payload, []

    def _chain(self, parsed: ResponsesInput) -> Stored | None:
        """The stored response ``previous_response_id`` names (``400`` when unknown, as
        OpenAI answers), checked to leave room for the new input."""
        previous = parsed.previous_response_id
        if previous is None:
            return None
        stored = self._responses.get(previous)
        if stored is None:
            raise BadRequest(
                400,
                f"Previous response with id '{previous}' not found.",
                param="previous_response_id",
                code="previous_response_not_found",
            )
        if stored.size + parsed.size > self._options.max_body_bytes:
            raise BadRequest(
                400,
                f"the conversation would hold more than {self._options.max_body_bytes} "
                "characters (max_body_bytes); start a new one",
                param="input",
                code="context_length_exceeded",
            )
        return stored

    def _responses_request(self, parsed: ResponsesInput, stored: Stored | None) -> ModelRequest:
        """The whole conversation of a Responses API request: its ``instructions`` (as
        a system message: they are not carried over a chain, as OpenAI documents), the
        stored chain, the new input."""
        head: tuple[ChatMessage, ...] = (
            (("system", parsed.instructions, ()),) if parsed.instructions else ()
        )
        history = stored.history() if stored is not None else ()
        messages = (*head, *history, *parsed.items)
        loop = _tool_loop(parsed.model)
        expected = "the last input item must be a user message" + (
            " or a function_call_output" if loop else ""
        )
        check_ending(messages, tool_loop=loop, param="input", expected=expected)
        return ModelRequest(
            model=parsed.model,
            seed=None,
            messages=messages,
            tools=parsed.tools,
            tool_choice=parsed.tool_choice,
        )

    def _write(
        self,
        answer: Answer,
        request: ModelRequest,
        parsed: ModelRequest | ResponsesInput,
        stored: Stored | None,
    ) -> dict[str, Any]:
        """``answer`` in the request's API form; a Responses API answer is stored."""
        prompt_tokens = sum(words(text) for _, text, _ in request.messages)
        created = int(time.time())
        if not isinstance(parsed, ResponsesInput):
            return chat_payload(
                answer, number=self._completions, created=created, prompt_tokens=prompt_tokens
            )
        response_id = new_response_id()
        if parsed.store:
            reply: ChatMessage = ("assistant", answer.text or "", answer.calls)
            self._responses.add(response_id, Stored(stored, (*parsed.items, reply)))
        return response_payload(
            answer,
            response_id=response_id,
            created=created,
            request=parsed,
            prompt_tokens=prompt_tokens,
        )

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

    async def _answer(self, request: ModelRequest, scope: Scope, large: bool) -> Answer | Reply:
        """The answer of the model ``request`` names (a ``Reply`` when a simulated model
        refuses it or is rate limited on purpose); simulated models take the server's
        ``latency`` here, the agent its own."""
        model = request.model
        if not (is_simulated_model(model) or _tool_loop(model)):
            return await self._agent_answer(request, large)
        self._model_requests += 1
        try:
            if is_agentdojo_model(model):
                message = await anyio.to_thread.run_sync(agentdojo_reply, model, request.messages)
                calls: tuple[Call, ...] = tuple(
                    (call["id"], call["function"]["name"], call["function"]["arguments"])
                    for call in message.get("tool_calls", [])
                )
                answer = Answer(model=model, text=message.get("content"), calls=calls)
            elif is_tools_model(model):
                answer = await self._tools_answer(request, large)
            else:
                echo = _given_headers(scope) if self._options.echo_credentials else ""
                pairs = [(role, text) for role, text, _ in request.messages]
                said = await _maybe_off_loop(
                    large, partial(self._models.answer, echo=echo), model, pairs, request.seed
                )
                if said.rate_limited:
                    self._rate_limited += 1
                    headers = [(b"retry-after", b"1"), (b"retry-after-ms", b"20")]
                    message_text = f"{model} is rate limited"
                    body = error_body(message_text, "requests", code="rate_limit_exceeded")
                    return 429, body, headers
                answer = Answer(model=model, text=said.text or "")
        except BadModelInput as exc:
            self._bad_requests += 1
            return 400, error_body(str(exc), "invalid_request_error", param="model"), []
        except _PolicyFailed as failed:
            self._errors += 1
            return 500, error_body(str(failed), "server_error"), []
        if self._options.latency > 0:
            await anyio.sleep(self._options.latency)
        return answer

    async def _tools_answer(self, request: ModelRequest, large: bool) -> Answer:
        """``sim-tools`` answers: a ``tool_policy`` callable is asked on the event loop
        (user code stays in the caller's thread), the model's own rules may run in a
        worker thread."""
        choice = None
        if self._tool_policy is not None:
            try:
                choice = policy_choice(self._tool_policy, request)
            except Exception as exc:
                _LOGGER.exception("the tool_policy of sim-tools failed")
                raise _PolicyFailed(f"tool_policy failed: {type(exc).__name__}: {exc}") from exc
        if choice is not None:
            return tools_answer(request, choice, ())
        rules = self._options.tool_rules
        return await _maybe_off_loop(large, tools_answer, request, None, rules)

    def _take_token(self) -> float:
        rate = self._options.rate
        if rate is None:
            return 0.0
        now = self._clock()
        if self._bucket is None:
            self._bucket = TokenBucket(rate=rate, burst=self._options.burst, now=now)
        return self._bucket.take(now)

    def _too_many(self, wait: float) -> Reply:
        headers = [(b"retry-after", str(max(1, math.ceil(wait))).encode())]
        if self._options.retry_after_ms:
            headers.append((b"retry-after-ms", str(max(1, math.ceil(wait * 1000))).encode()))
        message = f"rate limit of {self._options.rate:g} requests/s reached; retry in {wait:.3f} s"
        return 429, error_body(message, "requests", code="rate_limit_exceeded"), headers

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

    async def _agent_answer(self, request: ModelRequest, large: bool) -> Answer:
        """The simulated agent answers the last user message of its conversation."""
        seed, messages = request.seed, request.messages
        key, (prompt, documents) = await _maybe_off_loop(large, _recall_key, seed, messages)
        conversation = self._recall(key)
        if conversation is None:
            session = await self._agent(seed).create_session_async()
            await session.__aenter__()
            conversation = _Conversation(session)
        attachments = [
            Payload(
                id=document.id,
                content=document.content,
                format=_TEXT_FORMATS.get(document.format, PayloadFormat.TEXT),
            )
            for document in documents
        ]
        prompt_or_none = prompt if prompt or not attachments else None
        turn = Request(prompt=prompt_or_none, attachments=attachments)
        response = await conversation.session.send_async(turn)
        conversation.turns += 1
        calls = tuple(
            (
                f"call_{conversation.turns}_{number}",
                call.name,
                json.dumps(call.arguments, separators=(",", ":")),
            )
            for number, call in enumerate(response.tool_calls)
        )
        reply: ChatMessage = ("assistant", response.text, calls)
        remembered = (*messages, reply)
        await self._remember(await _maybe_off_loop(large, _digest, seed, remembered), conversation)
        return Answer(model=self._options.model, text=response.text, calls=calls, agent=True)

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
        self._responses.clear()
        while self._conversations:
            _, conversations = self._conversations.popitem()
            self._remembered -= len(conversations)
            for conversation in conversations:
                await conversation.session.__aexit__(None, None, None)


def _recall_key(
    seed: int | None, messages: tuple[ChatMessage, ...]
) -> tuple[str, tuple[str, list[Any]]]:
    """The key of the conversation the last message continues, and that message split
    into its prompt and documents (pure: may run in a worker thread)."""
    return _digest(seed, messages[:-1]), split_documents(messages[-1][1])


async def _maybe_off_loop(large: bool, function: Callable[..., _T], *args: Any) -> _T:
    """``function(*args)``, in a worker thread when the request is ``large``."""
    if large:
        return await anyio.to_thread.run_sync(function, *args)
    return function(*args)
