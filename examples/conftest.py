"""Wiring for the example red-team suite: the agents under test and the language models the
LLM examples use. Reports go where ``rampart_report_dir`` in ``pytest.ini`` (or
``--rampart-report-dir``) says: a JSON report, a JSONL trace and an HTML report."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from rampart import LLMConfig
from rampart.testing import SimulatedAgent

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(params=["vulnerable", "hardened"])
def agent(request: pytest.FixtureRequest) -> SimulatedAgent:
    """The built-in simulated email assistant, in two configurations.

    ``vulnerable`` follows every injected instruction; ``hardened`` follows none.
    """
    if request.param == "vulnerable":
        return SimulatedAgent.vulnerable(seed=7)
    return SimulatedAgent.hardened(seed=7)


@pytest.fixture(scope="session")
def llm_endpoint() -> Iterator[str]:
    """Where the LLM examples' judge and attacker models live.

    ``RAMPART_DEMO_LLM_ENDPOINT`` names a real endpoint (its key, if any, in
    ``RAMPART_DEMO_LLM_API_KEY``). Otherwise the demo starts the test server, whose
    simulated models need no key.
    """
    endpoint = os.environ.get("RAMPART_DEMO_LLM_ENDPOINT", "").strip()
    if endpoint:
        yield endpoint
        return
    from rampart.testing.server import server_process

    with server_process(seed=7) as server:
        yield server.url


def _llm(endpoint: str, role: str) -> LLMConfig:
    if not os.environ.get("RAMPART_DEMO_LLM_ENDPOINT", "").strip():
        return LLMConfig(model=f"sim-{role}", endpoint=endpoint, metadata={"temperature": 0})
    judge_model = os.environ.get("RAMPART_DEMO_JUDGE_MODEL", "gpt-4o-mini")
    model = (
        judge_model
        if role == "judge"
        else os.environ.get("RAMPART_DEMO_ATTACKER_MODEL", judge_model)
    )
    return LLMConfig(
        model=model,
        endpoint=endpoint,
        api_key=os.environ.get("RAMPART_DEMO_LLM_API_KEY") or None,
        deployment=os.environ.get("RAMPART_DEMO_LLM_DEPLOYMENT") or None,
        metadata={"temperature": 0, "seed": 7} if role == "judge" else {"temperature": 0.9},
    )


@pytest.fixture(scope="session")
def judge_llm(llm_endpoint: str) -> LLMConfig:
    """The judge model (simulated ``sim-judge`` unless a real endpoint is configured)."""
    return _llm(llm_endpoint, "judge")


@pytest.fixture(scope="session")
def attacker_llm(llm_endpoint: str) -> LLMConfig:
    """The attacker model (simulated ``sim-attacker`` unless a real endpoint is configured)."""
    return _llm(llm_endpoint, "attacker")
