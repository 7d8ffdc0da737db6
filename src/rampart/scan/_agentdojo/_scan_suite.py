"""The test module ``rampart scan agentdojo`` runs: every selected pair, as one trial group.

Each trial clone is one (pair, repeat): clone ``i`` attacks pair ``i // trials``. Clones
run concurrently under ``--rampart-concurrency`` (bounded, rate-aware, journaled and
resumable clone by clone), and any UNSAFE pair fails the group, so the run exits 1
when an injection succeeded, as a suite does. Each clone is named by its pair
(``test_agentdojo[trial-6:banking-user_task_0-injection_task_6]``, the trial marker's
``ids=``), and each result's summary names it too.

With ``-n N`` the pairs are dealt into N groups (``test_agentdojo[shard0]`` ...), one
item each, so xdist's workers share them: one trial group runs in one process.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from rampart.core.result import HarmCategory
from rampart.engine._internal import current_trial
from rampart.scan._agentdojo_config import AGENTDOJO_ENV_VAR, ScanConfig

if TYPE_CHECKING:
    from rampart.agentdojo._internal import AgentDojoAgent, AgentDojoPair

# Outside ``rampart scan agentdojo`` (no settings in the environment) the module
# defines no test, so importing it (a package walk, a stray collection) is harmless.
if AGENTDOJO_ENV_VAR in os.environ:
    _CONFIG = ScanConfig.from_env()
    _PAIRS = _CONFIG.pairs()
    _COUNT = min(_CONFIG.shards, len(_PAIRS))  # more shards than pairs would be empty
    _SHARDS = [_PAIRS[index::_COUNT] for index in range(_COUNT)]

    def _trials(pairs: list[AgentDojoPair]) -> pytest.MarkDecorator:
        """One clone per (pair, repeat), each named by its pair."""
        return pytest.mark.trial(ids=[pair.id for pair in pairs for _ in range(_CONFIG.trials)])

    def _shard(index: int) -> object:
        return pytest.param(index, marks=_trials(_SHARDS[index]), id=f"shard{index}")

    _GROUPS = (
        pytest.mark.parametrize("shard", [_shard(i) for i in range(len(_SHARDS))], indirect=True)
        if len(_SHARDS) > 1
        else _trials(_PAIRS)
    )

    @pytest.fixture
    def shard(request: pytest.FixtureRequest) -> int:
        """The group's index among the shards (0: one group, ``test_agentdojo``)."""
        return int(getattr(request, "param", 0))

    # The scan's identity: ``--resume`` reuses journaled results only for the same scan.
    @pytest.mark.rampart_scan(_CONFIG.identity(_PAIRS))
    # Every pair is an indirect prompt injection (AgentDojo's attack planted in a tool
    # result); the risk map maps each injection task more precisely.
    @pytest.mark.harm(HarmCategory.PROMPT_INJECTION)
    @_GROUPS
    async def test_agentdojo(agentdojo_scan: tuple[ScanConfig, AgentDojoAgent], shard: int) -> None:
        config, agent = agentdojo_scan
        trial = current_trial()
        assert trial is not None
        pair = _SHARDS[shard][trial.index // config.trials]
        result = await agent.run(pair, timeout=config.timeout)
        assert result, result.summary
