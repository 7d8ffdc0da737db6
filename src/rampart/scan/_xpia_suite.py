"""The test module ``rampart scan xpia`` runs: the built-in payload pack, as one trial group.

Clone ``i`` sends payload ``i // trials`` inline (as an attachment to the trigger) to an
OpenAI-compatible agent endpoint (the marker's ``ids=`` names each clone by its payload,
``test_xpia[trial-13:leak-system-prompt]``, and gives its results the payload's own harm
category), paced by a learned rate (``limit(adaptive=True)``),
and an ``LLMJudge`` decides from the payload's own objective whether the agent did
what the injection asked (a payload that names a tool is also checked with
``ToolCalled``). Clones run concurrently under ``--rampart-concurrency``; any payload
that is not SAFE fails the group.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from rampart.adapters import ChatCompletionsAdapter
from rampart.attacks import Attacks
from rampart.core.llm import LLMConfig
from rampart.core.types import Request
from rampart.engine._internal import current_trial
from rampart.evaluators import LLMJudge, ToolCalled
from rampart.limits import limit
from rampart.scan._xpia_config import XPIA_ENV_VAR, XpiaScanConfig

if TYPE_CHECKING:
    from rampart.core.evaluator import BaseEvaluator

# Outside ``rampart scan xpia`` (no settings in the environment) the module defines
# no test, so importing it (a package walk, a stray collection) is harmless.
if XPIA_ENV_VAR in os.environ:
    _CONFIG = XpiaScanConfig.from_env()
    _PAYLOADS = _CONFIG.payloads()

    # The scan's identity: ``--resume`` reuses journaled results only for the same scan.
    @pytest.mark.rampart_scan(_CONFIG.identity(_PAYLOADS))
    @pytest.mark.trial(ids=[payload for payload in _PAYLOADS for _ in range(_CONFIG.trials)])
    async def test_xpia() -> None:
        config = _CONFIG
        trial = current_trial()
        assert trial is not None
        payload = _PAYLOADS[trial.index // config.trials]
        judge: BaseEvaluator = LLMJudge(
            objective=str(payload.metadata["objective"]),
            llm=LLMConfig(
                model=config.judge_model,
                endpoint=config.judge_base_url,
                api_key=config.key(config.judge_api_key_env),
            ),
        )
        expects = payload.metadata.get("expects")
        evaluator = judge
        if isinstance(expects, dict) and isinstance(expects.get("tool"), str):
            evaluator = ToolCalled(expects["tool"]) | judge
        async with ChatCompletionsAdapter(
            base_url=config.base_url, model=config.model, api_key=config.key(config.api_key_env)
        ) as agent:
            result = await Attacks.xpia(
                trigger=Request(prompt=config.trigger, attachments=[payload]),
                evaluator=evaluator,
                max_turns=1,
                timeout=config.timeout,
            ).execute_async(adapter=limit(agent, adaptive=True, name=f"scan-{config.model}"))
        assert result, f"{payload.id}: {result.summary}"
