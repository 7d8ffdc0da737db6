"""The recipes of docs/real-agents.md: real SDKs and frameworks whose model calls go
through ``LimitedTransport``, against servers on 127.0.0.1.

The OpenAI SDK, Agent Framework's chat-completions client and LangChain talk to the
rate-limited test server (chat completions); the Anthropic SDK posts ``/v1/messages``,
which a scripted endpoint answers (429, then a message), through an ``httpx2`` client
(the SDK refuses httpx's). LangChain runs on asyncio only (its ``ainvoke`` gathers with
asyncio); everything else on asyncio and trio.
"""

from __future__ import annotations

import json

import anthropic
import anyio
import anyio.to_thread
import httpx
import httpx2
import openai
import pytest
from agent_framework.openai import OpenAIChatCompletionClient
from langchain_openai import ChatOpenAI

from rampart.limits import LimitedSyncTransport, LimitedTransport, live_limiters
from rampart.testing.server import serve, serve_asgi
from tests.limits._scripted_http import ScriptedEndpoint, refusal

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "Summarise my inbox."}]


def _limited_client() -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=LimitedTransport(name="model", adaptive=True))


def _only_limiter_stats() -> tuple[int, int, int, int]:
    (limiter,) = live_limiters()
    stats = limiter.statistics()
    return stats.requests, stats.retries, stats.rate_limited, stats.failed


class TestOpenAISDK:
    async def test_concurrent_calls_are_paced_at_the_model_apis_rate(self) -> None:
        """20 concurrent completions through AsyncOpenAI (its own retries off) against
        a 20/s burst-1 model API: every call answered; each refusal retried below it."""
        async with serve(rate=20, burst=1) as server:
            model_api = openai.AsyncOpenAI(
                base_url=server.url, api_key="sk-test", max_retries=0, http_client=_limited_client()
            )
            answers: list[str | None] = []

            async def call() -> None:
                completion = await model_api.chat.completions.create(
                    model="simulated-agent",
                    messages=MESSAGES,  # type: ignore[arg-type]
                )
                answers.append(completion.choices[0].message.content)

            async with model_api, anyio.create_task_group() as group:
                for _ in range(20):
                    group.start_soon(call)
            refused = server.statistics().rate_limited
        assert len(answers) == 20
        requests, retries, rate_limited, failed = _only_limiter_stats()
        assert (requests, failed) == (20, 0)
        assert retries == rate_limited == refused

    async def test_an_exhausted_budget_is_the_sdks_own_rate_limit_error(self) -> None:
        """The 429 handed back is what the SDK turns into ``openai.RateLimitError``."""
        endpoint = ScriptedEndpoint([refusal(body=b'{"error": {"message": "quota used"}}')])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model", max_retries=1)
            model_api = openai.AsyncOpenAI(
                base_url=f"{url}/v1",
                api_key="sk-test",
                max_retries=0,
                http_client=httpx.AsyncClient(transport=transport),
            )
            async with model_api:
                with pytest.raises(openai.RateLimitError, match="quota used") as raised:
                    await model_api.chat.completions.create(
                        model="m",
                        messages=MESSAGES,  # type: ignore[arg-type]
                    )
        assert raised.value.status_code == 429
        assert len(endpoint.bodies) == 2

    async def test_a_sync_client_from_worker_threads(self) -> None:
        """openai.OpenAI with LimitedSyncTransport, called from anyio worker threads."""
        async with serve(rate=20, burst=1) as server:
            transport = LimitedSyncTransport(name="model", adaptive=True)
            model_api = openai.OpenAI(
                base_url=server.url,
                api_key="sk-test",
                max_retries=0,
                http_client=httpx.Client(transport=transport),
            )

            def call() -> None:
                model_api.chat.completions.create(
                    model="simulated-agent",
                    messages=MESSAGES,  # type: ignore[arg-type]
                )

            with model_api:
                async with anyio.create_task_group() as group:
                    for _ in range(10):
                        group.start_soon(anyio.to_thread.run_sync, call)
            refused = server.statistics().rate_limited
        requests, retries, rate_limited, failed = _only_limiter_stats()
        assert (requests, failed) == (10, 0)
        assert retries == rate_limited == refused


class TestAgentFramework:
    async def test_an_agents_model_calls_are_paced(self) -> None:
        """Agent Framework's chat-completions client over an AsyncOpenAI with the
        transport: 10 agents' runs against a 20/s burst-1 model API, none fails."""
        async with serve(rate=20, burst=1) as server:
            model_api = openai.AsyncOpenAI(
                base_url=server.url, api_key="sk-test", max_retries=0, http_client=_limited_client()
            )
            agent = OpenAIChatCompletionClient(
                model="simulated-agent", async_client=model_api
            ).as_agent(instructions="You are a helpful email assistant.")
            texts: list[str] = []

            async def run() -> None:
                texts.append((await agent.run("Summarise my inbox.")).text)

            async with model_api, anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(run)
            served = server.statistics()
        assert len(texts) == 10
        assert all(texts)
        requests, retries, rate_limited, failed = _only_limiter_stats()
        assert requests == served.served >= 10  # every model call, each answered once
        assert failed == 0
        assert retries == rate_limited == served.rate_limited


class TestLangChain:
    @pytest.mark.parametrize("anyio_backend", ["asyncio"])  # LangChain gathers on asyncio
    async def test_a_chat_models_calls_are_paced(self, anyio_backend: str) -> None:
        async with serve(rate=20, burst=1) as server:
            http = _limited_client()
            model = ChatOpenAI(
                model="simulated-agent",
                base_url=server.url,
                api_key="sk-test",  # type: ignore[arg-type]
                max_retries=0,
                http_async_client=http,
            )
            replies: list[object] = []

            async def call() -> None:
                replies.append((await model.ainvoke("Summarise my inbox.")).content)

            async with http, anyio.create_task_group() as group:
                for _ in range(10):
                    group.start_soon(call)
            refused = server.statistics().rate_limited
        assert len(replies) == 10
        requests, retries, rate_limited, failed = _only_limiter_stats()
        assert (requests, failed) == (10, 0)
        assert retries == rate_limited == refused


ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test",
    "content": [{"type": "text", "text": "Nothing new in your inbox."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 6},
}


class TestAnthropicSDK:
    async def test_a_429_is_retried_under_the_sdk(self) -> None:
        """AsyncAnthropic posts /v1/messages; the endpoint refuses once (Retry-After),
        then answers: the SDK (its own retries off) gets the message."""
        endpoint = ScriptedEndpoint(
            [
                refusal(retry_after_ms=5),
                (200, {"content-type": "application/json"}, json.dumps(ANTHROPIC_MESSAGE).encode()),
            ]
        )
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model", adaptive=True)
            model_api = anthropic.AsyncAnthropic(
                base_url=url,
                api_key="sk-ant-test",
                max_retries=0,
                http_client=httpx2.AsyncClient(transport=transport),  # type: ignore[arg-type]
            )
            async with model_api:
                message = await model_api.messages.create(
                    model="claude-test",
                    max_tokens=64,
                    messages=MESSAGES,  # type: ignore[arg-type]
                )
        assert message.content[0].text == "Nothing new in your inbox."  # type: ignore[union-attr]
        assert endpoint.paths == ["/v1/messages", "/v1/messages"]
        assert endpoint.bodies[0] == endpoint.bodies[1]
        assert _only_limiter_stats() == (1, 1, 1, 0)

    async def test_an_exhausted_budget_is_the_sdks_own_rate_limit_error(self) -> None:
        """Under an httpx2 client too, the refusal handed back is an httpx2 answer the
        SDK turns into ``anthropic.RateLimitError``."""
        endpoint = ScriptedEndpoint([refusal(body=b'{"type": "error", "error": {"message": "x"}}')])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model", retry_budget=0)
            model_api = anthropic.AsyncAnthropic(
                base_url=url,
                api_key="sk-ant-test",
                max_retries=0,
                http_client=httpx2.AsyncClient(transport=transport),  # type: ignore[arg-type]
            )
            async with model_api:
                with pytest.raises(anthropic.RateLimitError):
                    await model_api.messages.create(
                        model="claude-test",
                        max_tokens=64,
                        messages=MESSAGES,  # type: ignore[arg-type]
                    )
        assert len(endpoint.bodies) == 1
