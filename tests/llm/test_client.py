"""``LLMClient`` against the real test server: requests, auth, errors, limits, statistics."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from rampart.adapters import MalformedResponseError
from rampart.core.errors import InfrastructureError
from rampart.limits import MemoryBackend, RateLimitedError
from rampart.llm import LLMClient, as_client, shared_client
from rampart.testing.server import serve, serve_asgi
from tests._asgi import lifespan
from tests._in_flight import held_at_once
from tests.llm._support import FAKE_KEY, config, recorder

pytestmark = pytest.mark.anyio

USER = [{"role": "user", "content": "hello"}]


class TestRequests:
    async def test_body_carries_model_messages_and_generation_keys_only(self) -> None:
        """model, messages, the documented generation keys; other metadata stays home."""
        app, seen = recorder()
        async with serve_asgi(app) as root:
            client = LLMClient(
                config(
                    f"{root}/v1",
                    model="gpt-x",
                    metadata={"temperature": 0, "seed": 5, "max_tokens": 50, "api_version": "v"},
                )
            )
            completion = await client.complete(USER)
        assert completion.text == "ok"
        assert not completion.cached
        body = seen[0]["body"]
        assert body == {
            "temperature": 0,
            "seed": 5,
            "max_tokens": 50,
            "model": "gpt-x",
            "messages": USER,
        }
        assert seen[0]["path"] == "/v1/chat/completions"
        assert "authorization" not in seen[0]["headers"]

    async def test_json_object_and_seed_override(self) -> None:
        """``json_object`` adds response_format (unless is_json_supported is false); ``seed`` wins."""
        app, seen = recorder()
        async with serve_asgi(app) as root:
            await LLMClient(config(f"{root}/v1", metadata={"seed": 1})).complete(
                USER, json_object=True, seed=9
            )
            await LLMClient(config(f"{root}/v1", metadata={"is_json_supported": False})).complete(
                USER, json_object=True
            )
        assert seen[0]["body"]["response_format"] == {"type": "json_object"}
        assert seen[0]["body"]["seed"] == 9
        assert "response_format" not in seen[1]["body"]

    async def test_bearer_key(self) -> None:
        """An OpenAI-style endpoint gets ``Authorization: Bearer <key>``."""
        app, seen = recorder()
        async with serve_asgi(app) as root:
            await LLMClient(config(f"{root}/v1", api_key=FAKE_KEY)).complete(USER)
        assert seen[0]["headers"]["authorization"] == f"Bearer {FAKE_KEY}"

    async def test_azure_deployment_path_and_api_key_header(self) -> None:
        """Azure: the deployment path with api-version, and the ``api-key`` header."""
        app, seen = recorder()
        async with serve_asgi(app) as root:
            client = LLMClient(
                config(
                    root,
                    model="gpt-4o",
                    deployment="judge",
                    api_key=FAKE_KEY,
                    metadata={"api_type": "azure"},
                )
            )
            await client.complete(USER)
        assert seen[0]["path"] == "/openai/deployments/judge/chat/completions"
        assert seen[0]["query"] == "api-version=2024-10-21"
        assert seen[0]["headers"]["api-key"] == FAKE_KEY
        assert "authorization" not in seen[0]["headers"]

    async def test_azure_against_the_test_server(self) -> None:
        """The test server serves the Azure path, checks the key, and answers as the deployment."""
        async with serve(api_key=FAKE_KEY) as server:
            endpoint = f"{server.root_url}/openai/deployments/sim-generator/chat/completions"
            client = LLMClient(config(endpoint, model="unused", api_key=FAKE_KEY))
            assert client.azure
            completion = await client.complete(
                [{"role": "user", "content": "OBJECTIVE: be helpful\n\nINSTRUCTION:\nwrite"}]
            )
        assert completion.text.strip()
        assert completion.model == "sim-generator"

    async def test_messages_are_checked(self) -> None:
        """Bad messages are refused before any request, naming the problem."""
        client = LLMClient(config("http://127.0.0.1:9/v1"))
        with pytest.raises(
            ValueError,
            match=r"^LLMClient\.complete: messages\[0\]\.role must be one of 'assistant', "
            r"'system', 'user', got 'tool'$",
        ):
            await client.complete([{"role": "tool", "content": "x"}])
        with pytest.raises(
            TypeError, match=r"^LLMClient\.complete: messages\[0\]\.content must be a str, got 3$"
        ):
            await client.complete([{"role": "user", "content": 3}])
        with pytest.raises(ValueError, match="the last message must have role 'user'"):
            await client.complete([{"role": "system", "content": "x"}])
        with pytest.raises(
            ValueError,
            match=r"^LLMClient\.complete: messages must be a non-empty list .*, got \[\]$",
        ):
            await client.complete([])
        with pytest.raises(TypeError, match=r"^LLMClient\.complete: messages must be a non-empty"):
            await client.complete("hello")  # type: ignore[arg-type]

    async def test_tool_calls_come_back_with_their_ids(self) -> None:
        """With ``tools``, a conversation may end with a tool result; the reply's calls
        carry the ids the next tool results must name (the AgentDojo model answers)."""
        pytest.importorskip("agentdojo", reason="sim-agentdojo needs the agentdojo extra")
        from rampart.agentdojo import load_suite

        task = load_suite("banking").user_tasks["user_task_0"]
        tool = {"type": "function", "function": {"name": "read_file", "parameters": {}}}
        async with serve() as server:
            client = LLMClient(config(server.url, model="sim-agentdojo"), cache=False)
            first = await client.complete([{"role": "user", "content": task.PROMPT}], tools=[tool])
            (call,) = first.tool_calls
            assert (call.id, call.name) == ("call_0", "read_file")
            assert call.arguments == {"file_path": "bill-december-2023.txt"}
            conversation = [
                {"role": "user", "content": task.PROMPT},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.arguments),
                            },
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": call.id, "content": "bill: pay 98.70 to UK12"},
            ]
            second = await client.complete(conversation, tools=[tool])
            with pytest.raises(InfrastructureError, match=r"no task prompt of AgentDojo v1\.2\.2"):
                await client.complete(USER, tools=[tool])
            odd = LLMClient(config(server.url, model="sim-agentdojo:speed=3"), cache=False)
            with pytest.raises(InfrastructureError, match=r"expected sim-agentdojo\[:follow=P"):
                await odd.complete(USER, tools=[tool])
        assert second.tool_calls[0].name == "send_money"

    async def test_tools_and_tool_messages_are_checked(self) -> None:
        client = LLMClient(config("http://127.0.0.1:9/v1"))
        with pytest.raises(TypeError, match=r"^LLMClient\.complete: tools\[0\] must be a"):
            await client.complete(USER, tools=["read_file"])
        with pytest.raises(ValueError, match=r"^LLMClient\.complete: tools must be a non-empty"):
            await client.complete(USER, tools=[])
        with pytest.raises(ValueError, match="the last message must have role 'user' or 'tool'"):
            await client.complete(
                [*USER, {"role": "assistant", "content": "x"}], tools=[{"function": {}}]
            )


class TestErrors:
    async def test_rate_limit_survives_retries_as_rate_limited_error(self) -> None:
        """A model that keeps answering 429 ends in RateLimitedError after the retries."""
        async with serve() as server:
            client = LLMClient(config(server.url, model="sim-judge:429"), max_retries=2)
            failures = client.statistics().failures
            with pytest.raises(RateLimitedError, match="HTTP 429"):
                await client.complete(USER)
            stats = client.limiter.statistics()
            assert (stats.requests, stats.retries, stats.rate_limited) == (1, 2, 3)
            assert server.statistics().rate_limited == 3
        assert client.statistics().failures == failures + 1

    async def test_transient_errors_are_retried(self) -> None:
        """Injected 5xx are retried by the limiter until a call succeeds."""
        async with serve(error_rate=0.5, error_statuses=(500,), seed=4) as server:
            client = LLMClient(config(server.url, model="sim-attacker"), max_retries=20)
            for _ in range(6):
                assert (await client.complete([{"role": "user", "content": "Begin."}])).text
            assert client.limiter.statistics().transient_failures > 0

    async def test_wrong_key_is_an_infrastructure_error_without_the_key(self) -> None:
        """401 is not retried; the server echoes the key but the message has it redacted."""
        async with serve(api_key="right-key-123") as server:
            client = LLMClient(config(server.url, api_key=FAKE_KEY))
            with pytest.raises(InfrastructureError) as caught:
                await client.complete(USER)
        message = str(caught.value)
        assert "HTTP 401" in message
        assert "[REDACTED]" in message
        assert FAKE_KEY not in message
        assert not caught.value.transient

    async def test_unreachable_endpoint_is_transient(self) -> None:
        """A refused connection is a transient InfrastructureError (retried, then raised)."""
        async with serve() as server:
            url = server.url
        client = LLMClient(config(url), max_retries=1)
        with pytest.raises(InfrastructureError, match="connection failed") as caught:
            await client.complete(USER)
        assert caught.value.transient

    async def test_malformed_body(self) -> None:
        """A 2xx body that is not a chat completion is a MalformedResponseError."""

        async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] == "lifespan":
                await lifespan(receive, send)
                return
            while (await receive()).get("more_body"):
                pass
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b'{"choices": []}'})

        async with serve_asgi(app) as root:
            with pytest.raises(
                MalformedResponseError, match=r"\$.choices must be a non-empty array"
            ):
                await LLMClient(config(f"{root}/v1")).complete(USER)

    def test_entra_without_azure_identity_names_the_extra(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An Azure endpoint without a key needs azure-identity; the error says how to get it."""
        import importlib.util

        real = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util,
            "find_spec",
            lambda name, *a: None if name.startswith("azure") else real(name, *a),
        )
        with pytest.raises(ImportError, match=r"pip install 'rampart\[azure\]'"):
            LLMClient(config("https://res.openai.azure.com", model="gpt-4o"))


class TestLimitsAndSharing:
    async def test_the_default_pool_holds_hundreds_in_flight(self) -> None:
        """Default settings hold 150 completions in flight: the connection pool's default
        is 1,000 (the OpenAI SDK's), no longer 100 (issue 37)."""
        async with serve(hang_rate=1.0) as server:
            client = LLMClient(config(server.url), cache=False, max_retries=0)
            message = [{"role": "user", "content": "Begin."}]
            reached = await held_at_once(server, lambda: client.complete(message), 150)
        assert reached == 150

    async def test_judge_shares_the_agents_bucket(self) -> None:
        """Same limiter name and backend: the LLM client and another limiter share one bucket."""
        from rampart.limits import limit
        from rampart.testing import SimulatedAgent

        backend = MemoryBackend()
        async with serve() as server:
            client = LLMClient(
                config(server.url, model="sim-attacker"), rate=20, name="shared", backend=backend
            )
            agent = limit(SimulatedAgent(seed=1), rate=20, name="shared", backend=backend)
            start = anyio.current_time()
            async with await agent.create_session_async() as session:
                from rampart.core.types import Request

                for _ in range(5):
                    await session.send_async(Request(prompt="hi"))
            for _ in range(5):
                await client.complete([{"role": "user", "content": "Begin."}])
            elapsed = anyio.current_time() - start
        # 10 requests at 20/s from one bucket of burst 1 need at least 9 intervals.
        assert elapsed >= 9 / 20 * 0.9

    async def test_statistics_count_calls_requests_and_tokens(self) -> None:
        """Statistics count calls and the usage the endpoint reported."""
        async with serve() as server:
            client = LLMClient(config(server.url, model="sim-attacker"), name="stats-test-client")
            before = client.statistics()
            await client.complete([{"role": "user", "content": "Begin."}])
            after = client.statistics()
        assert after.calls - before.calls == 1
        assert after.requests - before.requests == 1
        assert after.prompt_tokens > before.prompt_tokens
        assert after.completion_tokens > before.completion_tokens
        assert after.name == "stats-test-client"
        assert after.model == "sim-attacker"

    async def test_async_with_keeps_one_pool(self) -> None:
        """Inside ``async with`` calls reuse one connection pool, closed at the end; outside
        it each call opens its own connection and closes it. Seen from the server: the
        client's address (its port) names the connection each request came on."""
        app, seen = recorder()
        async with serve_asgi(app) as root:
            client = LLMClient(config(f"{root}/v1", model="sim-attacker"), cache=False)
            async with client:
                for _ in range(3):
                    await client.complete(USER)
            await client.complete(USER)
            await client.complete(USER)
        connections = [request["client"] for request in seen]
        assert len(connections) == 5
        assert len(set(connections[:3])) == 1  # one pool, one kept-alive connection
        assert connections[3] != connections[0]  # the pool was closed at the end
        assert connections[4] != connections[3]  # closed after the last call

    async def test_shared_client_per_configuration(self) -> None:
        """Equal configurations share one client; an LLMClient is used as given."""
        first = config("http://127.0.0.1:9/v1", metadata={"seed": 1})
        same = config("http://127.0.0.1:9/v1", metadata={"seed": 1})
        other = config("http://127.0.0.1:9/v1", metadata={"seed": 2})
        assert shared_client(first) is shared_client(same)
        assert shared_client(first) is not shared_client(other)
        explicit = LLMClient(first)
        assert as_client(explicit, owner="x") is explicit
        with pytest.raises(TypeError, match="x: llm must be an LLMConfig or an LLMClient"):
            as_client("gpt", owner="x")

    def test_repr_and_limiter_name(self) -> None:
        """repr shows model, URL and name, never the key; the limiter is named llm:<model>."""
        client = LLMClient(config("http://127.0.0.1:9/v1", model="m", api_key=FAKE_KEY))
        assert FAKE_KEY not in repr(client)
        assert client.limiter.name == client.name == "llm:m"

    def test_rate_from_max_requests_per_minute(self) -> None:
        """RAMPART's ``max_requests_per_minute`` becomes the limiter's default rate."""
        client = LLMClient(config("http://h/v1", metadata={"max_requests_per_minute": 120}))
        assert client.limiter.rate == 2.0

    def test_bad_options(self) -> None:
        """Options are checked with messages naming them."""
        with pytest.raises(ValueError, match="LLMClient: timeout"):
            LLMClient(config("http://h/v1"), timeout=0)
        with pytest.raises(TypeError, match="LLMClient: config must be an LLMConfig"):
            LLMClient("gpt")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="LLMClient: cache must be"):
            LLMClient(config("http://h/v1"), cache=3)  # type: ignore[arg-type]


class _FakeToken:
    def __init__(self, token: str, expires_on: float) -> None:
        self.token = token
        self.expires_on = expires_on


@pytest.mark.anyio
class TestEntraId:
    async def test_token_is_sent_and_cached(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without a key, Azure gets ``Authorization: Bearer <Entra token>``; the token is
        fetched once while valid, for the Cognitive Services scope, off the event loop."""
        import importlib.machinery
        import sys
        import threading
        import time
        import types

        fetched: list[tuple[str, str]] = []

        class DefaultAzureCredential:
            def get_token(self, scope: str) -> _FakeToken:
                fetched.append((scope, threading.current_thread().name))
                return _FakeToken("entra-TOKEN-xyz", time.time() + 3600)

        azure = types.ModuleType("azure")
        azure.__spec__ = importlib.machinery.ModuleSpec("azure", None, is_package=True)
        azure.__path__ = []
        identity = types.ModuleType("azure.identity")
        identity.__spec__ = importlib.machinery.ModuleSpec("azure.identity", None)
        identity.DefaultAzureCredential = DefaultAzureCredential  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "azure", azure)
        monkeypatch.setitem(sys.modules, "azure.identity", identity)
        app, seen = recorder()
        async with serve_asgi(app) as root:
            client = LLMClient(config(root, model="gpt-4o", metadata={"api_type": "azure"}))
            await client.complete(USER)
            await client.complete(USER)
        assert [header["headers"]["authorization"] for header in seen] == [
            "Bearer entra-TOKEN-xyz"
        ] * 2
        assert len(fetched) == 1
        assert fetched[0][0] == "https://cognitiveservices.azure.com/.default"
        assert fetched[0][1] != threading.current_thread().name
