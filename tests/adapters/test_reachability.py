"""An endpoint that refuses every connection and never answered is cut off after a few
tries (no retries, no more connections); one that answered once never is."""

from __future__ import annotations

import pytest

from rampart.adapters import ChatCompletionsAdapter
from rampart.adapters._reachability import UNREACHABLE_AFTER
from rampart.core.errors import InfrastructureError
from rampart.core.types import Request
from rampart.testing.server import serve
from tests.adapters.test_chat import _free_port

pytestmark = pytest.mark.anyio


async def _failure(adapter: ChatCompletionsAdapter) -> InfrastructureError:
    async with await adapter.create_session_async() as session:
        with pytest.raises(InfrastructureError) as caught:
            await session.send_async(Request(prompt="hello"))
    return caught.value


async def test_a_refusing_origin_that_never_answered_is_cut_off() -> None:
    url = f"http://127.0.0.1:{_free_port()}/v1"
    async with ChatCompletionsAdapter(base_url=url, model="m") as adapter:
        for _ in range(UNREACHABLE_AFTER):
            error = await _failure(adapter)
            assert "connection failed" in str(error)
            assert error.transient is True  # a limiter retries these
        cut = await _failure(adapter)
    assert "unreachable" in str(cut)
    assert "is the server running" in str(cut)
    assert cut.transient is False  # so no limiter retries it
    assert cut.__cause__ is None  # failed at once: no connection was tried


async def test_an_origin_that_answered_once_is_never_cut_off() -> None:
    async with (
        serve() as server,
        ChatCompletionsAdapter(base_url=server.url, model="m") as adapter,
        await adapter.create_session_async() as session,
    ):
        await session.send_async(Request(prompt="hello"))
    # The server is gone now: its port refuses, but it answered in this run.
    async with ChatCompletionsAdapter(base_url=server.url, model="m") as adapter:
        for _ in range(UNREACHABLE_AFTER + 2):
            error = await _failure(adapter)
            assert "connection failed" in str(error)
            assert error.transient is True


async def test_a_cut_off_origin_is_still_tried_now_and_then(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every ``RETRY_SECONDS`` one request goes through (a server started late is found)."""
    from rampart.adapters import _reachability

    monkeypatch.setattr(_reachability, "RETRY_SECONDS", 0.0)
    url = f"http://127.0.0.1:{_free_port()}/v1"
    async with ChatCompletionsAdapter(base_url=url, model="m") as adapter:
        for _ in range(UNREACHABLE_AFTER + 2):
            error = await _failure(adapter)
            assert "connection failed" in str(error)  # tried each time: no wait configured
