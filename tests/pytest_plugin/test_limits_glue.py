"""Rate limiters inside pytest: one budget for the whole ``-n 2`` run, statistics reported."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from tests.pytest_plugin.conftest import (
    NO_ASYNCIO,
    REPORT_HOOK,
    all_results,
    only_report,
    write_ini,
)

if TYPE_CHECKING:
    import pytest

RATE = 20.0
PER_WORKER = 10

SHARED_SUITE = f"""
import json, os, time
from pathlib import Path

import pytest
from rampart import Response
from rampart.attacks import Attacks
from rampart.evaluators import ToolCalled
from rampart.limits import limit
from rampart.testing import ScriptedAgent

SENT = []

def answer(request, index):
    SENT.append(time.monotonic())
    return Response(text="ok")

AGENT = limit(ScriptedAgent(answer), rate={RATE}, burst=1, name="shared-agent")

@pytest.mark.parametrize("worker_slot", [0, 1])
async def test_paced(worker_slot):
    for _ in range({PER_WORKER}):
        await Attacks.xpia(trigger="hi", evaluator=ToolCalled("x")).execute_async(adapter=AGENT)
    out = Path(os.environ["SEND_LOG_DIR"]) / f"{{os.environ.get('PYTEST_XDIST_WORKER', 'main')}}-{{worker_slot}}.json"
    out.write_text(json.dumps({{"dir": os.environ.get("RAMPART_LIMITS_DIR"), "sent": SENT[-{PER_WORKER}:]}}))
"""


def test_xdist_workers_share_one_budget(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two workers together stay within one rate: the run takes as long as one bucket allows."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(SHARED_SUITE)
    logs = pytester.mkdir("sends")
    monkeypatch.setenv("SEND_LOG_DIR", str(logs))
    monkeypatch.delenv("RAMPART_LIMITS_DIR", raising=False)
    monkeypatch.delenv("RAMPART_LIMITS_REDIS_URL", raising=False)
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "-n", "2", "--dist", "load")
    result.assert_outcomes(passed=2)
    entries = [json.loads(path.read_text()) for path in sorted(logs.iterdir())]
    assert len(entries) == 2
    directories = {entry["dir"] for entry in entries}
    assert len(directories) == 1, "workers did not share a bucket"
    assert None not in directories
    sent = sorted(t for entry in entries for t in entry["sent"])
    assert len(sent) == 2 * PER_WORKER
    # One shared bucket of `RATE` (burst 1) needs at least (n - 1) / RATE seconds for n
    # sends; two private buckets would need only half that. Delays only lengthen the span.
    span = sent[-1] - sent[0]
    assert span >= (len(sent) - 1) / RATE - 0.1
    limits = only_report(pytester)["metadata"]["limits"]["shared-agent"]
    assert limits["processes"] == 2
    assert limits["requests"] == 2 * PER_WORKER
    assert limits["backend"].startswith("file")


def test_single_process_statistics_in_report(pytester: pytest.Pytester) -> None:
    """Every limiter's statistics end up in the report, even one built inside a test."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(
        """
        from rampart.attacks import Attacks
        from rampart.evaluators import ToolCalled
        from rampart.limits import limit
        from rampart.testing import ScriptedAgent

        async def test_local_limiter():
            agent = limit(ScriptedAgent(["a", "b", "c"]), max_concurrency=2, name="local")
            for _ in range(3):
                await Attacks.xpia(trigger="hi", evaluator=ToolCalled("x")).execute_async(
                    adapter=agent
                )
        """
    )
    pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
    limits = only_report(pytester)["metadata"]["limits"]
    assert limits["local"]["requests"] == 3
    assert limits["local"]["processes"] == 1
    assert limits["local"]["max_concurrency"] == 2


def _docs_fixture_suite() -> str:
    """The pytest suite docs/limits.md shows under "One limiter per name", as it is there."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text()
    section = text.split("## One limiter per name", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    suites = [block for block in blocks if "yield limit(http, adaptive=True" in block]
    assert len(suites) == 1
    return suites[0]


def test_the_docs_fixture_per_clone_is_one_limiter(pytester: pytest.Pytester) -> None:
    """docs/limits.md's suite (a function-scoped fixture calling limit() for each of 30
    clones, all at once, against the rate-limited test server): one limiter, one
    process, every request answered, no ERROR."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_docs_suite=_docs_fixture_suite())
    result = pytester.runpytest_subprocess(*NO_ASYNCIO, "--rampart-concurrency", "30")
    result.assert_outcomes(passed=1)
    report = only_report(pytester)
    statuses = [result["status"] for result in all_results(report)]
    assert len(statuses) == 30
    assert "ERROR" not in statuses
    limits = report["metadata"]["limits"]
    assert list(limits) == ["agent"]
    assert limits["agent"]["processes"] == 1
    assert limits["agent"]["requests"] == 30
    assert limits["agent"]["failed"] == 0


TRANSPORT_SUITE = """
import httpx
from rampart.limits import LimitedTransport
from rampart.testing.server import serve

async def test_model_calls():
    async with serve(rate=50, burst=1) as server:
        transport = LimitedTransport(name="model-api", adaptive=True)
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(4):
                answer = await client.post(
                    f"{server.url}/chat/completions",
                    json={"model": "simulated-agent", "messages": [{"role": "user", "content": "hi"}]},
                )
                assert answer.status_code == 200
"""


def test_each_session_reports_its_own_limiters_transports_included(
    pytester: pytest.Pytester,
) -> None:
    """Two in-process runs of one suite: each report has the transport's limiter with
    that run's requests only (a session is a run; nothing carries into the next)."""
    write_ini(pytester)
    pytester.makeconftest(REPORT_HOOK)
    pytester.makepyfile(test_transport_suite=TRANSPORT_SUITE)
    for run in range(2):
        pytester.runpytest(*NO_ASYNCIO).assert_outcomes(passed=1)
        limits = only_report(pytester)["metadata"]["limits"]
        assert list(limits) == ["model-api"], run
        assert (limits["model-api"]["requests"], limits["model-api"]["processes"]) == (4, 1)
        for path in (pytester.path / "reports").iterdir():
            path.unlink()
