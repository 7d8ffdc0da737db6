"""``AgentDojoAgent``: an AgentDojo pipeline as a rampart agent, pair by pair."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel

from rampart._checks import check_instance, check_int
from rampart.agentdojo._evaluators import InjectionTaskSucceeded
from rampart.agentdojo._suites import AgentDojoPair, require_agentdojo
from rampart.agentdojo._target import PairTarget

if TYPE_CHECKING:
    from rampart.core.result import Result
    from rampart.core.types import Payload

__all__ = ["AgentDojoAgent"]


class AgentDojoAgent:
    """Runs AgentDojo pairs against ``pipeline``, any AgentDojo ``BasePipelineElement``.

    AgentDojo pipelines are synchronous: each pair runs in a worker thread, at most
    ``max_threads`` at once per event loop (the agent's own bound), so
    existing pipelines and defences work unchanged. ``run(pair)`` is one XPIA attack:
    the attack's injections planted, the user task's prompt as the trigger, AgentDojo's
    injection-task check as the evaluator.
    """

    def __init__(self, pipeline: Any, *, max_threads: int = 64) -> None:
        require_agentdojo()
        base = importlib.import_module("agentdojo.agent_pipeline.base_pipeline_element")
        check_instance(
            "AgentDojoAgent",
            "pipeline",
            pipeline,
            base.BasePipelineElement,
            expected="an AgentDojo BasePipelineElement",
        )
        max_threads = check_int("AgentDojoAgent", "max_threads", max_threads, minimum=1)
        self._pipeline, self._max_threads = pipeline, max_threads
        self._attacks: dict[AgentDojoPair, Any] = {}
        # The agent's own thread bound, one limiter per event loop it runs in (a
        # limiter belongs to one loop; a session-scoped agent serves many).
        self._threads: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = anyio.lowlevel.RunVar(
            f"rampart.agentdojo.threads.{id(self)}"
        )

    @property
    def pipeline(self) -> Any:
        return self._pipeline

    def target(self, pair: AgentDojoPair) -> PairTarget:
        """A fresh target for one execution of ``pair``."""
        check_instance(
            "AgentDojoAgent.target", "pair", pair, AgentDojoPair, expected="an AgentDojoPair"
        )
        return PairTarget(
            pair=pair,
            pipeline=self._pipeline,
            threads=self._threads,
            max_threads=self._max_threads,
            attacks=self._attacks,
        )

    async def run(
        self,
        pair: AgentDojoPair,
        *,
        payload: Payload | None = None,
        timeout: float | None = None,  # noqa: ASYNC109 - the execution's own timeout= option
    ) -> Result:
        """Attack ``pair``: its attack's injections (or ``payload`` in the same vectors)."""
        from rampart.attacks import Attacks

        target = self.target(pair)
        handle = (
            target.attack_injection() if payload is None else target.surface.inject(payload=payload)
        )
        execution = Attacks.xpia(
            inject=handle,
            trigger=target.prompt,
            evaluator=InjectionTaskSucceeded(),
            max_turns=1,
            timeout=timeout,
        )
        return await execution.execute_async(adapter=target.adapter)
