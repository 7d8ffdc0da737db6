"""A limited adapter whose agent fails the way an SDK does: a foreign 429 (the OpenAI
SDK's ``RateLimitError``, or one Agent Framework wrapped) is a refusal, retried no
sooner than its ``Retry-After``; a foreign 5xx is retried as an outage; a foreign 400
propagates at once. Timing under trio's virtual clock (exact, machine-independent)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing

from rampart.core.types import Request

# The one private seam, as in test_limiter.py: _build injects the jitter source.
from rampart.limits._limiter import _build
from tests._foreign import (
    BadRequestError,
    HTTPResponse,
    InternalServerError,
    rate_limit_error,
    wrapped,
)
from tests.limits._server import NoJitter, recording_agent

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from rampart.limits import LimitedAdapter


def run_virtual(main: Callable[[], Awaitable[None]]) -> None:
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


async def _send(limited: LimitedAdapter, prompt: str) -> str:
    async with await limited.create_session_async() as session:
        return (await session.send_async(Request(prompt=prompt))).text


def _openai_429(retry_after: str) -> Exception:
    """The real OpenAI SDK's ``RateLimitError``, as its client raises it."""
    import openai

    exceptions = importlib.import_module("openai._exceptions")
    http: Any = getattr(exceptions, "httpx", None) or exceptions.httpx2
    request = http.Request("POST", "https://api.openai.com/v1/chat/completions")
    response = http.Response(429, headers={"retry-after": retry_after}, request=request)
    return openai.RateLimitError("Error code: 429", response=response, body=None)


@pytest.mark.parametrize(
    "refusal",
    [
        lambda: _openai_429("3"),
        lambda: wrapped(rate_limit_error(retry_after="3")),
    ],
    ids=["openai", "wrapped-by-agent-framework"],
)
def test_a_foreign_429_waits_for_its_retry_after(refusal: Callable[[], Exception]) -> None:
    """Retry-After: 3 holds the retry, and pauses a request that arrives meanwhile."""
    error = refusal()
    agent, server = recording_agent(failures=[error])
    limited = _build(agent, rng=NoJitter(), name=f"foreign-429-{id(error)}")

    async def main() -> None:
        start = trio.current_time()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_send, limited, "first")
            await trio.sleep(1.0)
            nursery.start_soon(_send, limited, "second")
        offsets = [t - start for t in server.starts]
        assert offsets == pytest.approx([0.0, 3.0, 3.0])
        assert server.outcomes == [type(error).__name__, "ok", "ok"]

    run_virtual(main)
    stats = limited.statistics()
    assert (stats.rate_limited, stats.retries, stats.failed) == (1, 1, 0)


def test_a_foreign_429_cuts_the_learned_rate() -> None:
    """``adaptive=True``: the learned rate takes the refusal (a cut), as for rampart's own."""
    agent, server = recording_agent(failures=[wrapped(rate_limit_error())])
    limited = _build(agent, adaptive=True, rng=NoJitter(), name="foreign-learned")

    async def main() -> None:
        assert await _send(limited, "a") == "echo: a"

    run_virtual(main)
    stats = limited.statistics()
    assert stats.rate_limited == 1
    assert stats.learned is not None
    assert stats.learned.cuts == 1
    assert server.outcomes == ["ChatClientException", "ok"]


def test_a_foreign_outage_is_retried() -> None:
    agent, _server = recording_agent(
        failures=[wrapped(InternalServerError("overloaded", response=HTTPResponse(529)))]
    )
    limited = _build(agent, rng=NoJitter(), name="foreign-outage")

    async def main() -> None:
        assert await _send(limited, "a") == "echo: a"

    run_virtual(main)
    stats = limited.statistics()
    assert (stats.transient_failures, stats.rate_limited, stats.retries) == (1, 0, 1)


def test_a_foreign_client_error_is_not_retried() -> None:
    agent, server = recording_agent(
        failures=[wrapped(BadRequestError("bad", response=HTTPResponse(400)))]
    )
    limited = _build(agent, rng=NoJitter(), name="foreign-400")

    async def main() -> None:
        with pytest.raises(Exception, match="service failed") as caught:
            await _send(limited, "a")
        assert type(caught.value).__name__ == "ChatClientException"

    run_virtual(main)
    assert len(server.starts) == 1
    assert limited.statistics().failed == 1


@pytest.mark.anyio
async def test_an_execution_through_the_limiter_outlives_a_foreign_429() -> None:
    """On both backends: the refusal is retried inside ``send_async``, so the run gets
    its verdict instead of an ERROR."""
    from rampart import Probes
    from rampart.evaluators import ResponseContains

    agent, server = recording_agent(failures=[wrapped(rate_limit_error(retry_after="0"))])
    limited = _build(agent, rng=NoJitter(), name="foreign-429-execution")
    result = await Probes.behavior(
        prompt="hello", evaluator=ResponseContains("echo: hello")
    ).execute_async(adapter=limited)
    assert result.status.value == "safe"
    assert server.outcomes == ["ChatClientException", "ok"]
    assert limited.statistics().rate_limited == 1
