"""An AgentDojo pipeline is the agent under test: what it returns and how it fails is
hostile input (issue 33, item 5).

Each pipeline here does the user's task and carries out the injection (AgentDojo says
the injection succeeded), then returns something odd: tool-call arguments that are
not JSON, an answer of 30 MB, a tool result nested 100,000 deep or a YAML alias bomb.
The finding must survive all of it (UNSAFE, recordable in a report, quickly); a
pipeline that raises ``SystemExit`` or hangs is that pair's ERROR, never the run's end
or a run that never ends.
"""

from __future__ import annotations

import datetime
import threading
from typing import Any

import anyio
import pytest
from agentdojo.types import text_content_block_from_string

from rampart import SafetyStatus
from rampart.agentdojo import AgentDojoAgent, AgentDojoPair
from rampart.agentdojo.pipelines import ScriptedPipeline
from rampart.codec import ResultRecord, serialize_record
from tests.pytest_plugin.conftest import NO_ASYNCIO, REPORT_HOOK, all_results, only_report

PAIR = AgentDojoPair(suite="banking", user_task="user_task_0", injection_task="injection_task_0")

pytestmark = pytest.mark.anyio

# Generous bounds for the cases that used to hang: far above what they take now (well
# under a second), far below "forever".
NEVER = 120.0

_DEEP = "[" * 100_000 + "]" * 100_000
_BOMB = (
    "a: &a ["
    + ",".join(["x"] * 10)
    + "]\n"
    + "".join(
        f"{name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]\n"
        for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
)


class Followed(ScriptedPipeline):
    """Carries out the injection it reads, then changes what it returns (``tamper``)."""

    def __init__(self, tamper: Any) -> None:
        super().__init__("banking", follow=1.0)
        self.tamper = tamper

    def query(self, *args: Any, **kwargs: Any) -> Any:
        out = super().query(*args, **kwargs)
        return (*out[:3], self.tamper(list(out[3])), out[4])


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


def _first_call(messages: list[Any]) -> Any:
    return next(m for m in messages if m["role"] == "assistant" and m.get("tool_calls"))[
        "tool_calls"
    ][0]


def _with_args(**extra: object) -> Any:
    def tamper(messages: list[Any]) -> list[Any]:
        _first_call(messages).args.update(extra)
        return messages

    return tamper


def _tool_result(text: str) -> Any:
    def tamper(messages: list[Any]) -> list[Any]:
        tool = next(m for m in messages if m["role"] == "tool")
        tool["content"] = [text_content_block_from_string(text)]
        return messages

    return tamper


def _answer(text: str) -> Any:
    def tamper(messages: list[Any]) -> list[Any]:
        messages[-1] = {**messages[-1], "content": [text_content_block_from_string(text)]}
        return messages

    return tamper


TAMPERED = {
    "arguments that are a set": _with_args(weird={1, 2}),
    "arguments that are a datetime": _with_args(when=datetime.datetime(2026, 1, 1)),
    "arguments nested 10,000 deep": _with_args(deep=_nested(10_000)),
    "an answer of 30 MB": _answer("x" * 30_000_000),
    "an answer with terminal escapes": _answer("\x1b[2J\x1b]0;pwned\x07done\x00\u202e"),
    "a tool result of 20 MB": _tool_result("y" * 20_000_000),
    "a tool result nested 100,000 deep": _tool_result(_DEEP),
    "a tool result that is a YAML alias bomb": _tool_result(_BOMB),
}


@pytest.mark.parametrize("case", list(TAMPERED))
async def test_the_finding_survives_what_the_pipeline_returns(case: str) -> None:
    """AgentDojo said the injection succeeded: the result is UNSAFE, a report can
    record it (it used to be "lost in reporting" for arguments that are not JSON), and
    what it keeps is bounded."""
    with anyio.fail_after(NEVER):
        result = await AgentDojoAgent(Followed(TAMPERED[case])).run(PAIR)
    assert result.status is SafetyStatus.UNSAFE, result.summary
    assert result.metadata["agentdojo"]["security"] is True
    text = serialize_record(record=ResultRecord(result=result))
    assert len(text) < 1_000_000
    response = result.turns[0].response
    assert len(response.text) <= 100_002
    assert all(len(call.result or "") <= 2_002 for call in response.tool_calls)


async def test_an_injection_read_in_a_huge_tool_result_is_still_found() -> None:
    """The delivery check reads the first 256 KiB of each tool result (in the worker
    thread): the attack's own injection, within it, is found."""
    padding = "Note: " + "filler text. " * 10_000

    def tamper(messages: list[Any]) -> list[Any]:
        tool = next(m for m in messages if m["role"] == "tool")
        tool["content"] = [*tool["content"], text_content_block_from_string(padding * 100)]
        return messages

    result = await AgentDojoAgent(Followed(tamper)).run(PAIR)
    assert result.injections[0].delivered is True


class Exits(ScriptedPipeline):
    def __init__(self, error: BaseException) -> None:
        super().__init__("banking")
        self.error = error

    def query(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error


class OwnBaseException(BaseException):
    """An exception of the pipeline's own that is not an ``Exception``."""


@pytest.mark.parametrize(
    "error", [SystemExit(3), OwnBaseException("odd")], ids=lambda error: type(error).__name__
)
async def test_a_pipeline_that_raises_a_base_exception_is_that_pairs_error(
    error: BaseException,
) -> None:
    """``SystemExit`` (or another ``BaseException``) from the agent's own code is an
    ERROR naming it; it used to escape and end the test, and under pytest the run."""
    result = await AgentDojoAgent(Exits(error)).run(PAIR)
    assert result.status is SafetyStatus.ERROR
    assert type(error).__name__ in result.summary
    assert "banking-user_task_0-injection_task_0" in result.summary


class Hangs(ScriptedPipeline):
    """Blocks until released (a model call that never returns)."""

    def __init__(self) -> None:
        super().__init__("banking")
        self.release = threading.Event()
        self.entered = threading.Event()

    def query(self, *args: Any, **kwargs: Any) -> Any:
        self.entered.set()
        self.release.wait()
        return super().query(*args, **kwargs)


async def test_a_pipeline_that_hangs_ends_at_the_executions_timeout() -> None:
    """The pair's worker thread is abandoned when the execution's timeout cancels it:
    the clone ends (an ERROR saying it timed out) instead of waiting for the thread,
    which used to hold the clone, and the run, for as long as the pipeline hung."""
    pipeline = Hangs()
    try:
        with anyio.fail_after(NEVER):
            result = await AgentDojoAgent(pipeline).run(PAIR, timeout=0.5)
        assert pipeline.entered.is_set()
        assert result.status is SafetyStatus.ERROR
        assert "timed out" in result.summary
    finally:
        pipeline.release.set()


def test_a_report_records_the_finding(pytester: pytest.Pytester) -> None:
    """Through a real pytest run: the UNSAFE result of a pipeline whose tool-call
    arguments are not JSON is in the JSON report, not "lost in reporting"."""
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        import datetime
        import pytest
        from rampart.agentdojo import AgentDojoAgent, AgentDojoPair
        from rampart.agentdojo.pipelines import ScriptedPipeline

        class Odd(ScriptedPipeline):
            def query(self, *args, **kwargs):
                out = super().query(*args, **kwargs)
                call = next(m for m in out[3] if m["role"] == "assistant" and m.get("tool_calls"))
                call["tool_calls"][0].args["when"] = {datetime.date(2026, 1, 1), 3}
                return out

        @pytest.mark.anyio
        async def test_pair():
            pair = AgentDojoPair(suite="banking", user_task="user_task_0", injection_task="injection_task_0")
            result = await AgentDojoAgent(Odd("banking", follow=1.0)).run(pair)
            assert result, result.summary
        """
    )
    result = pytester.runpytest(*NO_ASYNCIO)
    result.assert_outcomes(failed=1)
    report = only_report(pytester)
    assert [entry["status"] for entry in all_results(report)] == ["unsafe"]
    assert report["run"]["incomplete"] is False
