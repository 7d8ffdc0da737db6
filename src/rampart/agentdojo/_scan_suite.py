"""The test module ``rampart scan agentdojo`` runs: every selected pair, as one trial group.

Each trial clone is one (pair, repeat): clone ``i`` attacks pair ``i // trials``. Clones
run concurrently under ``--rampart-concurrency`` (bounded, rate-aware, journaled and
resumable clone by clone), and any UNSAFE pair fails the group, so the run exits 1
when an injection succeeded, as a suite does. Each result's summary names its pair.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from rampart.agentdojo._scan_config import ENV_VAR, ScanConfig
from rampart.engine._results import current_trial

if TYPE_CHECKING:
    from rampart.agentdojo._agent import AgentDojoAgent

# Outside ``rampart scan agentdojo`` (no settings in the environment) the module
# defines no test, so importing it (a package walk, a stray collection) is harmless.
if ENV_VAR in os.environ:
    _CONFIG = ScanConfig.from_env()
    _PAIRS = _CONFIG.pairs()

    @pytest.mark.trial(n=len(_PAIRS) * _CONFIG.trials)
    async def test_agentdojo(agentdojo_scan: tuple[ScanConfig, AgentDojoAgent]) -> None:
        config, agent = agentdojo_scan
        trial = current_trial()
        assert trial is not None
        pair = _PAIRS[trial.index // config.trials]
        result = await agent.run(pair)
        assert result, result.summary
