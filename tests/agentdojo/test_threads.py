"""AgentDojo's checks run one pair at a time while the pipelines run concurrently.

The checks compare environments with DeepDiff, which parses Python with
``ast.literal_eval``; CPython 3.11's AST constructor is not thread-safe (gh-106905:
"AST constructor recursion depth mismatch"), so two checks at once can turn a pair
into an ERROR. Counting the parses in flight shows that they never overlap.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

import anyio
import pytest

from rampart import SafetyStatus
from rampart.agentdojo import AgentDojoAgent, load_suite, pairs
from rampart.agentdojo.pipelines import ScriptedPipeline


class _Overlap:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = self.most = self.calls = 0


@pytest.mark.anyio
async def test_checks_never_parse_in_two_threads_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    overlap = _Overlap()
    parse = ast.parse

    def counted(*args: Any, **kwargs: Any) -> Any:
        with overlap.lock:
            overlap.inside += 1
            overlap.calls += 1
            overlap.most = max(overlap.most, overlap.inside)
        try:
            # Hand the GIL over mid-parse, as a busy machine would.
            threading.Event().wait(0.0005)
            return parse(*args, **kwargs)
        finally:
            with overlap.lock:
                overlap.inside -= 1

    # ``ast.literal_eval`` (which DeepDiff imported by name) parses through ``ast.parse``.
    monkeypatch.setattr(ast, "parse", counted)
    suite = load_suite("travel")
    selected = pairs(
        "travel",
        user_tasks=list(suite.user_tasks)[:2],
        injection_tasks=list(suite.injection_tasks)[:4],
    )
    agent = AgentDojoAgent(ScriptedPipeline("travel", follow=0.5, seed=7), max_threads=8)
    statuses: list[SafetyStatus] = []

    async def one(index: int) -> None:
        statuses.append((await agent.run(selected[index])).status)

    async with anyio.create_task_group() as group:
        for index in range(len(selected)):
            group.start_soon(one, index)
    assert overlap.calls > 0  # the checks did parse
    assert overlap.most == 1
    assert SafetyStatus.ERROR not in statuses
