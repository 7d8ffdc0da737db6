"""The HTTP transport under httpx's API: chosen by the running event loop, and every
failure classified alike on each (aiohttp on asyncio, sharded httpcore pools on trio)."""

from __future__ import annotations

import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import httpx
import pytest

from rampart import _http as transports
from rampart.adapters import ChatCompletionsAdapter
from rampart.adapters._aiohttp import AiohttpClient
from rampart.adapters._http import new_client
from rampart.adapters._sharded import DirectShardedClient
from rampart.core.errors import InfrastructureError
from rampart.core.types import Request
from rampart.testing.server import serve, serve_asgi
from tests._asgi import lifespan
from tests.adapters.test_chat import _send_one, canned

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from hypercorn.typing import ASGIReceiveCallable as Receive
    from hypercorn.typing import ASGISendCallable as Send
    from hypercorn.typing import Scope

pytestmark = pytest.mark.anyio

EXPECTED = {"asyncio": "aiohttp", "trio": "sharded"}


def _client(http2: bool = False, max_connections: int = 10) -> httpx.AsyncClient:
    return new_client(
        url="http://127.0.0.1:9/v1/chat/completions",
        headers={},
        timeout=5.0,
        max_connections=max_connections,
        trust_env=False,
        http2=http2,
    )


class TestChoice:
    async def test_by_running_backend(self, anyio_backend: str) -> None:
        """aiohttp on asyncio, sharded httpcore pools on trio; httpx's pool for HTTP/2."""
        assert transports.choose_transport(http2=False) == EXPECTED[anyio_backend]
        assert transports.choose_transport(http2=True) == "httpx"
        async with _client() as client, _client(http2=True) as h2:
            expected = AiohttpClient if anyio_backend == "asyncio" else DirectShardedClient
            assert type(client) is expected
            assert isinstance(client, httpx.AsyncClient)
            assert type(h2) is transports.JarlessClient

    @pytest.mark.parametrize("wanted", ["sharded", "httpx", " HTTPX "])
    async def test_environment_overrides(
        self, wanted: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(transports.TRANSPORT_ENV, wanted)
        assert transports.choose_transport(http2=False) == wanted.strip().lower()

    async def test_aiohttp_on_trio_falls_back(
        self, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(transports.TRANSPORT_ENV, "aiohttp")
        assert transports.choose_transport(http2=False) == EXPECTED[anyio_backend]

    async def test_bad_environment_value(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv(transports.TRANSPORT_ENV, "curl")
        with pytest.raises(ValueError, match=r"RAMPART_HTTP_TRANSPORT must be one of auto, "):
            transports.choose_transport(http2=False)

    def test_one_tls_context_per_setting(self) -> None:
        """Loading the CA bundle blocks the loop: it is done once, not per client or pool."""
        first = transports.default_ssl_context(True)
        assert transports.default_ssl_context(True) is first
        assert transports.default_ssl_context(False) is not first


def _held_app() -> tuple[Any, dict[str, Any]]:
    """An app that holds every request until ``state['release']`` is set, counting the
    connections (client ports) and requests it holds at once."""
    state: dict[str, Any] = {"release": anyio.Event(), "held": 0, "peak": 0, "ports": set()}

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        while (await receive()).get("more_body"):
            pass
        state["ports"].add(scope["client"][1])
        state["held"] += 1
        state["peak"] = max(state["peak"], state["held"])
        await state["release"].wait()
        state["held"] -= 1
        body = b'{"choices": [{"message": {"role": "assistant", "content": "ok"}}]}'
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})

    return app, state


def _cookie_app() -> tuple[Any, list[str]]:
    """An app that sets a cookie on every answer and notes each request's Cookie header
    (``""``: none)."""
    seen: list[str] = []
    body = b'{"choices": [{"message": {"role": "assistant", "content": "ok"}}]}'
    answer = canned(200, body, [(b"set-cookie", b"session=trial-a; Path=/")])

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            seen.append(dict(scope["headers"]).get(b"cookie", b"").decode())
        await answer(scope, receive, send)

    return app, seen


class TestNoCookies:
    """One client serves every session and trial of an adapter: a cookie one answer sets
    must not reach the next request (another trial's), on any transport."""

    @pytest.mark.parametrize("transport", ["auto", "sharded", "httpx"])
    async def test_answers_cookies_are_not_sent_back(
        self, transport: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(transports.TRANSPORT_ENV, transport)
        app, seen = _cookie_app()
        async with serve_asgi(app) as root:
            # A host name, not an address: aiohttp's own jar ignores cookies from an IP.
            url = root.replace("127.0.0.1", "localhost") + "/v1"
            adapter = ChatCompletionsAdapter(base_url=url, model="m")
            configured = ChatCompletionsAdapter(
                base_url=url, model="m", headers={"Cookie": "tenant=red-team"}
            )
            async with adapter, configured:
                for _ in range(2):
                    assert (await _send_one(adapter)).text
                for _ in range(2):
                    assert (await _send_one(configured)).text
        # The configured header goes out as given, and nothing is added to it.
        assert seen == ["", "", "tenant=red-team", "tenant=red-team"]

    async def test_the_clients_cookies_stay_empty(self) -> None:
        async with _client() as client:
            assert isinstance(client, transports.JarlessClient)
            client.cookies.set("a", "b")  # stores nothing
            assert not client.cookies
            with pytest.raises(AttributeError, match="keep no cookies"):
                client.cookies = {"a": "b"}


class TestShardedPools:
    async def test_pools_open_as_requests_fill_them(self) -> None:
        """10 connections in pools of 4: 3 pools (4, 4, 2); 12 requests, 10 at the server at
        once, 2 queued; every request answered; no more connections than allowed."""
        app, state = _held_app()
        transport = transports.ShardedTransport(max_connections=10, shard_size=4)
        async with serve_asgi(app) as root, httpx.AsyncClient(transport=transport) as client:
            replies: list[int] = []

            async def one() -> None:
                reply = await client.post(f"{root}/v1/chat/completions", json={})
                replies.append(reply.status_code)

            async with anyio.create_task_group() as group:
                for _ in range(12):
                    group.start_soon(one)
                with anyio.fail_after(30):
                    while state["held"] < 10:  # noqa: ASYNC110 - another party's counter
                        await anyio.sleep(0.01)
                await anyio.sleep(0.2)  # a queued request would have arrived by now
                assert (transport.shards, state["held"]) == (3, 10)
                state["release"].set()
            assert replies == [200] * 12
            assert state["peak"] == 10
            assert len(state["ports"]) == 10
            # All slots were given back: the next request reuses a pool.
            await client.post(f"{root}/v1/chat/completions", json={})
            assert transport.shards == 3
        assert transport.shards == 0

    async def test_a_callers_read_timeout_still_fires(self) -> None:
        """The pools' streams skip the cancel scope of an untimed read (the direct
        path's); a read given a timeout through httpx still gets one."""
        transport = transports.ShardedTransport(max_connections=2)
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        async with (
            serve(latency=3.0) as server,
            httpx.AsyncClient(transport=transport, timeout=0.3) as client,
        ):
            with anyio.fail_after(20), pytest.raises(httpx.ReadTimeout):
                await client.post(f"{server.url}/chat/completions", json=body)

    async def test_a_failed_request_gives_its_slot_back(self) -> None:
        transport = transports.ShardedTransport(max_connections=1, shard_size=1)
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(3):  # with a lost slot the second attempt would queue forever
                with anyio.fail_after(10), pytest.raises(httpx.ConnectError):
                    await client.post(f"http://127.0.0.1:{_closed_port()}/", json={})
            assert transport.shards == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def _raw_server(answer: bytes) -> AsyncIterator[str]:
    """A TCP server that reads a request and writes ``answer`` (maybe nothing), then
    closes: a server that breaks the protocol in a way hypercorn never would."""

    async def handle(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            try:
                await stream.receive()
                if answer:
                    await stream.send(answer)
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        yield f"http://127.0.0.1:{port}/v1"
        group.cancel_scope.cancel()


class TestFailuresReadAlike:
    """httpx-aiohttp maps a dropped connection to ConnectTimeout and leaves a bad status
    line unmapped; rampart reads aiohttp's own error, so both transports say the same."""

    @pytest.mark.parametrize(
        "answer",
        [
            pytest.param(b"", id="closed-without-answer"),
            pytest.param(b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n{", id="truncated-body"),
            pytest.param(b"NOT HTTP AT ALL\r\n\r\n", id="garbage-status-line"),
        ],
    )
    async def test_broken_server_is_a_transient_connection_failure(self, answer: bytes) -> None:
        async with (
            _raw_server(answer) as url,
            ChatCompletionsAdapter(base_url=url, model="m", timeout=20) as adapter,
        ):
            with pytest.raises(InfrastructureError, match="connection failed") as caught:
                await _send_one(adapter)
        assert caught.value.transient is True
        assert "timeout" not in str(caught.value)
        # The URL (whose query may hold a credential) is named once, by rampart, masked;
        # aiohttp's response errors would repeat it whole.
        assert str(caught.value).count("/chat/completions") == 1

    async def test_refused_connection_has_httpx_name_on_both(self) -> None:
        """httpx-aiohttp calls a refused connection ConnectTimeout; rampart says what
        httpx's own transport says."""
        url = f"http://127.0.0.1:{_closed_port()}/v1"
        async with ChatCompletionsAdapter(base_url=url, model="m") as adapter:
            with pytest.raises(InfrastructureError, match=r"connection failed \(ConnectError: "):
                await _send_one(adapter)

    async def test_cancellation_leaves_the_client_usable(self) -> None:
        """A request cancelled while waiting ends at once; the next one is answered."""
        async with (
            serve(latency=0.3) as server,
            ChatCompletionsAdapter(base_url=server.url, model="m") as adapter,
        ):
            async with await adapter.create_session_async() as session:
                with anyio.move_on_after(0.05) as scope:
                    await session.send_async(Request(prompt="hello"))
                assert scope.cancelled_caught
            reply = await _send_one(adapter)
            assert reply.text


class TestProxiesFromTheEnvironment:
    """httpx ignores the environment's proxies when a transport is passed in; rampart's
    clients choose theirs another way, so ``trust_env`` keeps its meaning."""

    @pytest.mark.parametrize("trust_env", [True, False])
    async def test_http_proxy_is_used_only_with_trust_env(
        self, trust_env: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{_closed_port()}")
        async with serve() as server:
            adapter = ChatCompletionsAdapter(base_url=server.url, model="m", trust_env=trust_env)
            async with adapter:
                if trust_env:  # through the (absent) proxy: refused
                    with pytest.raises(InfrastructureError, match="connection failed"):
                        await _send_one(adapter)
                else:
                    assert (await _send_one(adapter)).text
