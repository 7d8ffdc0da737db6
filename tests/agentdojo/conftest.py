"""rampart.agentdojo's tests need the optional AgentDojo package (CI installs it)."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "agentdojo",
    reason="AgentDojo is not installed: pip install 'rampart[agentdojo]' (make test installs it)",
)
