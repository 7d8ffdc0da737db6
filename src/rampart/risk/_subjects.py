"""What a result tested, as the subjects a risk map maps (``strategy:xpia``, ...).

Read from the result alone, so a live run, a saved report and a saved trace give the
same subjects: its strategy, its harm category and the other tags of its test's
``harm`` marker, the payloads it used (its row's and those its injection records
name) and, for an AgentDojo pair, the suite and injection task
(``Result.metadata["agentdojo"]``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core._internal import harm_labels, payload_ids

if TYPE_CHECKING:
    from rampart.core.result import Result

__all__ = ["risk_subjects"]


def risk_subjects(result: Result) -> tuple[str, ...]:
    """The subjects ``result`` tested, each once, in a fixed order."""
    found: dict[str, None] = {}
    if isinstance(result.strategy, str) and result.strategy:
        found[f"strategy:{result.strategy}"] = None
    for label in harm_labels(result):
        found[f"harm_category:{label}"] = None
    for payload in payload_ids(result):
        found[f"payload:{payload}"] = None
    facts = result.metadata.get("agentdojo")
    if isinstance(facts, dict):
        suite, task = facts.get("suite"), facts.get("injection_task")
        if isinstance(suite, str) and isinstance(task, str) and suite and task:
            found[f"agentdojo:{suite}/{task}"] = None
    return tuple(found)
