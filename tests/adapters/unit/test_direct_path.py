"""The clients' direct paths (``AiohttpClient.post_bytes`` on asyncio,
``DirectShardedClient.post_bytes`` on trio): rampart's chat requests go through aiohttp
or straight to an httpcore pool without httpx's models, and must send and read exactly
what the httpx path does; what httpx must route itself (proxies) still goes through
httpx."""

from __future__ import annotations

import gzip
import json
import secrets
from typing import TYPE_CHECKING, Any

import pytest
from httpx_aiohttp.transport import AiohttpTransport

from rampart import _http as transports
from rampart.adapters import ChatCompletionsAdapter
from rampart.adapters._aiohttp import AiohttpClient
from rampart.adapters._http import new_client
from rampart.adapters._parse import MalformedResponseError
from rampart.adapters._sharded import DirectShardedClient
from rampart.core.errors import InfrastructureError
from rampart.testing.server import serve, serve_asgi
from tests.adapters.test_chat import _send_one, echo

if TYPE_CHECKING:
    import httpx

pytestmark = pytest.mark.anyio

COMPLETION = json.dumps(
    {"choices": [{"message": {"role": "assistant", "content": "héllo ✓"}}]}
).encode()
#: What the answer carries: a compressed body, a repeated header, mixed-case names.
ANSWER_HEADERS = [
    (b"Content-Type", b"application/json"),
    (b"Content-Encoding", b"gzip"),
    (b"X-RateLimit-Remaining-Requests", b"7"),
    (b"x-note", b"a"),
    (b"X-Note", b"b"),
]
#: Each backend's client, with its direct path.
DIRECT = {"asyncio": AiohttpClient, "trio": DirectShardedClient}
#: Request headers both paths must send alike (Accept-Encoding is each client's own).
COMPARED = ("authorization", "content-type", "user-agent", "accept", "x-team")


def _recording_app() -> tuple[Any, list[dict[str, Any]]]:
    return echo(answer=gzip.compress(COMPLETION), answer_headers=ANSWER_HEADERS)


def _client(url: str, *, trust_env: bool = False) -> httpx.AsyncClient:
    return new_client(
        url=url,
        headers={"X-Team": "red"},
        timeout=5.0,
        max_connections=4,
        trust_env=trust_env,
        http2=False,
        auth=("alice", "s3cret"),
    )


class TestSameExchangeAsHttpx:
    @pytest.mark.parametrize("transport", ["auto", "httpx"])
    async def test_adapter_sends_the_same_request(
        self, transport: str, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """URL credentials, configured headers, the JSON body and a gzip answer: the
        same on the direct path (asyncio, auto) as through httpx."""
        app, seen = _recording_app()
        reference_app, reference = _recording_app()
        async with serve_asgi(app) as root, serve_asgi(reference_app) as reference_root:
            for where, base in ((transport, root), ("httpx", reference_root)):
                monkeypatch.setenv(transports.TRANSPORT_ENV, where)
                url = base.replace("http://", "http://alice:s3cret@") + "/v1"
                adapter = ChatCompletionsAdapter(base_url=url, model="m", headers={"X-Team": "red"})
                async with adapter:
                    assert (await _send_one(adapter)).text == "héllo ✓"
        (got,), (expected,) = seen, reference
        assert got["path"] == expected["path"] == "/v1/chat/completions"
        assert got["body"] == expected["body"]
        assert {k: got["headers"].get(k) for k in COMPARED} == {
            k: expected["headers"].get(k) for k in COMPARED
        }
        assert got["headers"]["authorization"].startswith("Basic ")
        assert got["headers"]["x-team"] == "red"
        if anyio_backend == "trio":  # httpcore on both paths: every header, in order
            assert next(iter(got["headers"])) == "host"
            sent, reference_sent = (
                [(k, v) for k, v in headers.items() if k != "host"]  # the ports differ
                for headers in (got["headers"], expected["headers"])
            )
            assert sent == reference_sent

    async def test_answer_reads_as_httpx_reads_it(self, anyio_backend: str) -> None:
        """Status, lower-case header names with repeats joined, the decoded body."""
        app, _ = _recording_app()
        async with serve_asgi(app) as root, _client(root) as client:
            assert isinstance(client, DIRECT[anyio_backend])
            url = f"{root}/v1/chat/completions"
            direct = await client.post_bytes(
                url,
                {"q": 1},
                None,
                limit=10_000,
            )
            async with client.stream("POST", url, json={"q": 1}) as reply:
                via_httpx = (reply.status_code, dict(reply.headers.items()), await reply.aread())
        assert direct is not None
        assert direct[0] == via_httpx[0] == 200
        assert direct[2] == via_httpx[2] == COMPLETION
        assert direct[1]["x-note"] == via_httpx[1]["x-note"] == "a, b"
        shared = set(direct[1]) & set(via_httpx[1])
        assert {"x-ratelimit-remaining-requests", "content-type", "x-note"} <= shared
        assert {k: direct[1][k] for k in shared} == {k: via_httpx[1][k] for k in shared}

    async def test_oversized_answer_is_refused(self, anyio_backend: str) -> None:
        app, _ = _recording_app()
        async with serve_asgi(app) as root:
            adapter = ChatCompletionsAdapter(
                base_url=f"{root}/v1", model="m", max_response_bytes=10
            )
            async with adapter:
                with pytest.raises(MalformedResponseError, match="max_response_bytes"):
                    await _send_one(adapter)


class TestTakenOnlyWhereItMay:
    async def test_adapter_requests_skip_httpx(
        self, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With httpx's transports broken (httpx-aiohttp's, the sharded pools' httpx
        side), requests still succeed on both backends: they never reach them."""

        async def broken(*args: object, **kwargs: object) -> httpx.Response:
            raise AssertionError("went through httpx's transport")

        monkeypatch.setattr(AiohttpTransport, "handle_async_request", broken)
        monkeypatch.setattr(transports.ShardedTransport, "handle_async_request", broken)
        app, seen = _recording_app()
        async with serve_asgi(app) as root:
            adapter = ChatCompletionsAdapter(base_url=f"{root}/v1", model="m")
            async with adapter:
                assert (await _send_one(adapter)).text == "héllo ✓"
        assert len(seen) == 1

    async def test_environment_proxy_goes_through_httpx(
        self, anyio_backend: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
        async with _client("http://127.0.0.1:9/v1", trust_env=True) as client:
            assert isinstance(client, DIRECT[anyio_backend])
            answer = await client.post_bytes(
                "http://127.0.0.1:9/v1/chat/completions",
                {},
                None,
                limit=10,
            )
        assert answer is None

    async def test_refused_connection_is_classified(self, anyio_backend: str) -> None:
        """A dead port on the direct path reads as on every transport."""
        adapter = ChatCompletionsAdapter(base_url="http://127.0.0.1:9/v1", model="m")
        async with adapter:
            with pytest.raises(InfrastructureError, match="connection failed") as caught:
                await _send_one(adapter)
        assert caught.value.transient


class TestSecretsStayOutOfTracebacks:
    """pytest ``--showlocals`` prints every frame's locals, the direct path's and
    aiohttp's: the request's credentials must not be among them."""

    @pytest.mark.parametrize("time_limit", [0.2, None])
    async def test_timeout_and_oversized_body(
        self, anyio_backend: str, time_limit: float | None
    ) -> None:
        key = "sk-" + secrets.token_hex(12)
        app, _ = _recording_app()
        async with serve(latency=2.0) as slow, serve_asgi(app) as fast:
            adapter = ChatCompletionsAdapter(
                base_url=slow.url if time_limit else f"{fast}/v1",
                model="m",
                api_key=key,
                timeout=time_limit or 5.0,
                max_response_bytes=10,
            )
            async with adapter:
                with pytest.raises((InfrastructureError, MalformedResponseError)) as caught:
                    await _send_one(adapter)
        caught.traceback = caught.traceback[1:]  # this test's own frame holds the key
        shown = str(caught.getrepr(showlocals=True, chain=True, style="long"))
        assert "post_json" in shown
        assert key not in shown
