"""The test server's bounds per request, over real HTTP on 127.0.0.1 (issue 33 §4)."""

from __future__ import annotations

import json
import threading

import anyio
import httpx
import pytest

from rampart.evaluators._judge_prompt import OBJECTIVE_HEADING, TRANSCRIPT_CLOSE, TRANSCRIPT_OPEN
from rampart.testing.server import _models as models
from rampart.testing.server import serve
from rampart.testing.server._app import INLINE_BYTES

pytestmark = pytest.mark.anyio

SYSTEM = f'{OBJECTIVE_HEADING}\nThe agent e-mailed "x@y.example".'


def _judge(transcript: str) -> dict[str, object]:
    user = f"{TRANSCRIPT_OPEN}\n{transcript}\n{TRANSCRIPT_CLOSE}"
    return {
        "model": "sim-judge",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
    }


class TestJudgeTranscripts:
    async def test_a_line_nested_too_deep_is_a_400_that_says_why(self) -> None:
        """A transcript line of 200,000 ``[`` inside a turn object cannot be read: the
        judge answers 400 naming the line and the reason, never a 500."""
        transcript = '{"agent": "hi"}\n{"agent": ' + "[" * 200_000
        async with serve() as server, httpx.AsyncClient(base_url=server.url) as client:
            reply = await client.post("/chat/completions", json=_judge(transcript))
            statistics = server.statistics()
        assert reply.status_code == 400
        message = reply.json()["error"]["message"]
        assert message.startswith("sim-judge: transcript line 2 is not a JSON object it can read")
        assert "nesting is too deep" in message
        assert (statistics.bad_requests, statistics.errors) == (1, 0)

    async def test_lines_that_are_no_turn_are_ignored(self) -> None:
        """A line that does not open an object is text around the turns."""
        transcript = "[" * 200_000 + '\n{"agent": "sent to x@y.example"}'
        async with serve() as server, httpx.AsyncClient(base_url=server.url) as client:
            reply = await client.post("/chat/completions", json=_judge(transcript))
        assert reply.status_code == 200
        verdict = json.loads(reply.json()["choices"][0]["message"]["content"])
        assert verdict["outcome"] == "detected"
        assert verdict["evidence"] == ["Agent: sent to x@y.example"]


class TestOffTheLoop:
    async def test_a_large_request_does_not_stall_other_clients(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A request over ``INLINE_BYTES`` is answered in a worker thread: while its
        judge is still working, ``/stats`` and a small request are answered."""
        release = threading.Event()
        order: list[str] = []
        verdict = models.judge_verdict

        def slow(system: str, user: str) -> dict[str, object]:
            release.wait(30)
            order.append("large answered")
            return verdict(system, user)

        monkeypatch.setattr(models, "judge_verdict", slow)
        large = _judge('{"agent": "' + "x" * INLINE_BYTES + '"}')
        async with serve() as server, httpx.AsyncClient(base_url=server.url, timeout=60) as client:
            replies: list[httpx.Response] = []

            async def send_large() -> None:
                replies.append(await client.post("/chat/completions", json=large))

            async with anyio.create_task_group() as group:
                group.start_soon(send_large)
                with anyio.fail_after(30):
                    while server.statistics().in_flight == 0:  # noqa: ASYNC110
                        await anyio.sleep(0.005)
                stats = await client.get(f"{server.root_url}/stats")
                small = await client.post(
                    "/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                )
                order.append("others answered")
                release.set()
        assert (stats.status_code, small.status_code) == (200, 200)
        assert stats.json()["in_flight"] == 1
        assert order == ["others answered", "large answered"]
        assert replies[0].status_code == 200
