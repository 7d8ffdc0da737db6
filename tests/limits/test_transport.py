"""``LimitedTransport`` / ``LimitedSyncTransport``: an httpx client's requests go through
the name's limiter, against real servers on 127.0.0.1, on asyncio and trio."""

from __future__ import annotations

import socket
import threading
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import httpx
import pytest

from rampart.core.result import Result, SafetyStatus
from rampart.engine import execute_trials_async
from rampart.limits import (
    LimitedSyncTransport,
    LimitedTransport,
    Limiter,
    limit,
    live_limiters,
)
from rampart.testing.server import serve, serve_asgi
from tests._builders import replying_agent, turn
from tests.limits._scripted_http import OK, SSE, SSE_EVENTS, ScriptedEndpoint, refusal

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

pytestmark = pytest.mark.anyio

BODY = {"model": "simulated-agent", "messages": [{"role": "user", "content": "hi"}]}


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class TestPacing:
    async def test_every_request_goes_through_the_names_limiter(self) -> None:
        """30 concurrent chat requests against a 50/s, burst-1 server: all answered, each
        counted once by the limiter of the name, which the run lists."""
        async with serve(rate=50, burst=1) as server:
            transport = LimitedTransport(name="model", adaptive=True)
            async with httpx.AsyncClient(transport=transport) as client:
                statuses: list[int] = []

                async def one() -> None:
                    answer = await client.post(f"{server.url}/chat/completions", json=BODY)
                    statuses.append(answer.status_code)

                async with anyio.create_task_group() as group:
                    for _ in range(30):
                        group.start_soon(one)
            served = server.statistics()
        stats = transport.statistics()
        assert statuses == [200] * 30
        assert served.served == 30
        assert stats.requests == 30
        assert stats.rate_limited == served.rate_limited
        assert stats.retries == served.rate_limited  # every refusal was retried
        assert stats.failed == 0
        assert live_limiters() == (transport.limiter,)

    async def test_the_agents_stated_limit_is_learned(self) -> None:
        """An answer's x-ratelimit-* headers reach the learned rate."""
        async with serve(rate=40, burst=4, rate_limit_headers="openai") as server:
            transport = LimitedTransport(name="model", adaptive=True)
            async with httpx.AsyncClient(transport=transport) as client:
                for _ in range(3):
                    answer = await client.post(f"{server.url}/chat/completions", json=BODY)
                    assert answer.status_code == 200
        learned = transport.statistics().learned
        assert learned is not None
        assert learned.stated_rate == pytest.approx(40.0, rel=0.05)

    async def test_a_transport_and_an_adapter_of_one_name_are_one_limiter(self) -> None:
        """The name is the limiter: limit() and the transport count together."""
        limited = limit(replying_agent(), adaptive=True, name="model")
        transport = LimitedTransport(name="model", adaptive=True)
        assert isinstance(transport.limiter, Limiter)
        assert transport.limiter is limited.limiter
        with pytest.raises(ValueError, match=r"rate=5\.0 \(it has rate=None\)"):
            LimitedTransport(name="model", adaptive=True, rate=5)


class TestRetries:
    async def test_a_429_is_retried_with_the_same_body(self) -> None:
        """Two 429s then an answer: the client sees the answer; the endpoint got the same
        bytes three times."""
        endpoint = ScriptedEndpoint([refusal(), refusal(), OK])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model")
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", json=BODY)
        assert answer.status_code == 200
        assert answer.json() == {"ok": True}
        assert len(endpoint.bodies) == 3
        assert len(set(endpoint.bodies)) == 1
        stats = transport.statistics()
        assert (stats.requests, stats.retries, stats.rate_limited, stats.failed) == (1, 2, 2, 0)

    async def test_a_bare_503_is_an_outage_retried_as_transient(self) -> None:
        """A 503 without a wait is retried too, as a transient failure (not a rate limit)."""
        endpoint = ScriptedEndpoint([refusal(503, retry_after_ms=None), OK])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model")
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", json=BODY)
        assert answer.status_code == 200
        stats = transport.statistics()
        assert (stats.transient_failures, stats.rate_limited, stats.retries) == (1, 0, 1)

    async def test_a_refusal_past_the_budget_goes_back_to_the_sdk_as_it_came(self) -> None:
        """With max_retries=2 a refusal the third time is handed back: status, headers
        and body as the endpoint sent them, so the SDK raises its own error."""
        body = b'{"error": {"message": "quota", "type": "rate_limit"}}'
        endpoint = ScriptedEndpoint([refusal(body=body)])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model", max_retries=2)
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", json=BODY)
        assert answer.status_code == 429
        assert answer.content == body
        assert answer.headers["retry-after-ms"] == "1"
        assert len(endpoint.bodies) == 3
        stats = transport.statistics()
        assert (stats.requests, stats.retries, stats.rate_limited, stats.failed) == (1, 2, 3, 1)

    async def test_no_budget_means_one_attempt(self) -> None:
        endpoint = ScriptedEndpoint([refusal()])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model", retry_budget=0)
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", json=BODY)
        assert answer.status_code == 429
        assert len(endpoint.bodies) == 1

    async def test_a_wait_longer_than_max_retry_after_is_handed_back_at_once(self) -> None:
        endpoint = ScriptedEndpoint([refusal(retry_after_ms=120_000)])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model", max_retry_after=5)
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", json=BODY)
        assert answer.status_code == 429
        assert answer.headers["retry-after-ms"] == "120000"
        assert len(endpoint.bodies) == 1

    async def test_other_statuses_are_not_retried(self) -> None:
        """A 500 may have been processed: it goes back to the SDK unretried."""
        endpoint = ScriptedEndpoint([(500, {}, b"boom"), OK])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model")
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", json=BODY)
        assert (answer.status_code, answer.content) == (500, b"boom")
        assert len(endpoint.bodies) == 1
        assert transport.statistics().failed == 0  # an answer, for the SDK to judge

    async def test_a_streamed_upload_gets_one_attempt(self) -> None:
        """A generator body cannot be sent again: its refusal goes back at once."""
        endpoint = ScriptedEndpoint([refusal(), OK])

        async def upload() -> AsyncIterator[bytes]:
            yield b'{"model": '
            yield b'"m"}'

        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model")
            async with httpx.AsyncClient(transport=transport) as client:
                answer = await client.post(f"{url}/v1/chat/completions", content=upload())
        assert answer.status_code == 429
        assert endpoint.bodies == [b'{"model": "m"}']

    async def test_a_failed_exchange_propagates_unretried(self) -> None:
        """A refused connection is the SDK's to handle (it may retry): raised as the inner
        transport raised it (httpx-aiohttp calls it a ConnectTimeout), once, and counted
        as failed."""
        transport = LimitedTransport(name="model")
        async with httpx.AsyncClient(transport=transport) as client:
            with pytest.raises((httpx.ConnectError, httpx.ConnectTimeout)):
                await client.post(f"http://127.0.0.1:{_closed_port()}/v1/x", json=BODY)
        stats = transport.statistics()
        assert (stats.requests, stats.retries, stats.failed) == (1, 0, 1)


class TestStreaming:
    async def test_a_streamed_answer_passes_through_untouched(self) -> None:
        endpoint = ScriptedEndpoint([refusal(), SSE])
        async with serve_asgi(endpoint) as url:
            transport = LimitedTransport(name="model")
            async with (
                httpx.AsyncClient(transport=transport) as client,
                client.stream("POST", f"{url}/v1/chat/completions", json=BODY) as answer,
            ):
                chunks = [chunk async for chunk in answer.aiter_raw()]
        assert answer.headers["content-type"] == "text/event-stream"
        assert b"".join(chunks) == b"".join(SSE_EVENTS)
        assert transport.statistics().retries == 1


class TestSyncTransport:
    async def test_requests_from_worker_threads(self) -> None:
        """A sync client called from anyio worker threads: its requests go through the
        limiter in the event loop, and a refusal is retried."""
        endpoint = ScriptedEndpoint([refusal(), OK])
        async with serve_asgi(endpoint) as url:
            transport = LimitedSyncTransport(name="model", max_concurrency=2)
            with httpx.Client(transport=transport) as client:
                statuses: list[int] = []

                def one() -> None:
                    statuses.append(client.post(f"{url}/v1/x", json=BODY).status_code)

                async with anyio.create_task_group() as group:
                    for _ in range(6):
                        group.start_soon(anyio.to_thread.run_sync, one)
        assert statuses == [200] * 6
        stats = transport.statistics()
        assert (stats.requests, stats.retries, stats.rate_limited) == (6, 1, 1)
        assert stats.peak_in_flight <= 2

    async def test_requests_from_a_thread_anyio_did_not_start(self) -> None:
        """Made inside the event loop, the transport finds its way back from a plain
        thread (a framework's own executor) while that loop runs."""
        endpoint = ScriptedEndpoint([OK])
        async with serve_asgi(endpoint) as url:
            transport = LimitedSyncTransport(name="model")
            with httpx.Client(transport=transport) as client:
                statuses: list[int] = []
                thread = threading.Thread(
                    target=lambda: statuses.append(client.get(f"{url}/v1/x").status_code)
                )
                thread.start()
                await anyio.to_thread.run_sync(thread.join)
        assert statuses == [200]
        assert transport.statistics().requests == 1

    async def test_a_request_on_the_event_loops_thread_is_refused(self) -> None:
        transport = LimitedSyncTransport(name="model")
        with (
            httpx.Client(transport=transport) as client,
            pytest.raises(RuntimeError, match="block the loop"),
        ):
            client.get("http://127.0.0.1:9/")  # noqa: ASYNC212 - the mistake under test

    def test_without_an_event_loop_it_says_how_to_call_it(self) -> None:
        transport = LimitedSyncTransport(name="model")
        with (
            httpx.Client(transport=transport) as client,
            pytest.raises(RuntimeError, match="no running event loop"),
        ):
            client.get("http://127.0.0.1:9/")


class TestArguments:
    def test_bad_arguments_name_the_option(self) -> None:
        with pytest.raises(TypeError, match="LimitedTransport: transport must be"):
            LimitedTransport("x", name="m")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="LimitedSyncTransport: transport must be"):
            LimitedSyncTransport(httpx.AsyncHTTPTransport(), name="m")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="LimitedTransport: name must be"):
            LimitedTransport(name="")
        with pytest.raises(ValueError, match="LimitedTransport: rate must be"):
            LimitedTransport(name="m", rate=0)
        with pytest.raises(ValueError, match="LimitedSyncTransport: retry_budget must be"):
            LimitedSyncTransport(name="m", retry_budget=-1)


class TestAutoConcurrency:
    """Under ``concurrency="auto"``: the 429s the transport's learned rate retried are
    its own business (the group is not cut for them); the ones it hands back to the
    SDK are the agent's, and the group backs off."""

    @staticmethod
    async def _group(server_url: str, transport: LimitedTransport, *, sdk_retries: bool) -> Any:
        client = httpx.AsyncClient(transport=transport)

        class ModelCall:  # one model call an agent makes, its SDK retrying a 429
            async def execute_async(self, *, adapter: object) -> Result:
                while True:
                    answer = await client.post(f"{server_url}/chat/completions", json=BODY)
                    if answer.status_code != 429 or not sdk_retries:
                        break
                    await anyio.sleep(0.01)
                answer.raise_for_status()
                return Result(status=SafetyStatus.SAFE, summary="ok", turns=[turn()])

        async with client:
            population = await execute_trials_async(
                execution_factory=ModelCall, adapter=object(), n=40, concurrency="auto"
            )
        assert population.status is SafetyStatus.SAFE
        return population.concurrency

    async def test_retried_refusals_do_not_cut_auto(self) -> None:
        async with serve(rate=40, burst=1) as server:
            # Starting at 100/s, 2.5 times the server's rate: refusals at once.
            transport = LimitedTransport(name="model", adaptive=True, rate=100.0)
            stats = await self._group(server.url, transport, sdk_retries=False)
            served = server.statistics()
        assert served.rate_limited > 0
        assert transport.statistics().retries == served.rate_limited
        assert (stats["throttles"], stats["throttle_cuts"]) == (0, 0)

    async def test_refusals_handed_back_to_the_sdk_cut_auto(self) -> None:
        async with serve(rate=40, burst=1) as server:
            transport = LimitedTransport(name="model", adaptive=True, rate=100.0, max_retries=0)
            stats = await self._group(server.url, transport, sdk_retries=True)
            served = server.statistics()
        assert served.rate_limited > 0
        assert transport.statistics().retries == 0
        assert stats["throttles"] == served.rate_limited
        assert stats["throttle_cuts"] >= 1
        assert stats["final"] < 10

    async def test_a_handed_back_refusal_that_ends_the_run_counts_once(self) -> None:
        """The SDK raises the handed-back 429 as its own error (here httpx's
        ``HTTPStatusError``, no link to the limiter's), the run ends as an ERROR, and
        both the transport's limiter and the error boundary report it: the group counts
        it once."""
        from rampart import Attacks
        from rampart.core.manifest import AppManifest
        from rampart.core.types import ObservabilityLevel, Request, Response
        from rampart.evaluators import ToolCalled

        async with serve(rate=40, burst=1) as server:
            transport = LimitedTransport(name="model", adaptive=True, rate=100.0, max_retries=0)
            client = httpx.AsyncClient(transport=transport)

            class Session:
                async def __aenter__(self) -> Session:
                    return self

                async def __aexit__(self, *args: object) -> None:
                    return None

                async def send_async(self, request: Request) -> Response:
                    answer = await client.post(f"{server.url}/chat/completions", json=BODY)
                    answer.raise_for_status()  # the SDK's error for the 429
                    return Response(text="ok")

            class Agent:
                manifest = AppManifest(name="model-caller")
                observability_profile = ObservabilityLevel.RESPONSE_ONLY

                async def create_session_async(self) -> Session:
                    return Session()

            async with client:
                population = await execute_trials_async(
                    execution_factory=lambda: Attacks.xpia(
                        trigger="hi", evaluator=ToolCalled("send_email")
                    ),
                    adapter=Agent(),
                    n=40,
                    concurrency="auto",
                )
            served = server.statistics()
        stats = population.concurrency
        assert stats is not None
        errors = [r for r in population.results if r.status is SafetyStatus.ERROR]
        assert served.rate_limited > 0
        assert len(errors) == served.rate_limited
        assert stats["throttles"] == served.rate_limited
        assert 1 <= stats["throttle_cuts"] <= stats["throttles"]
