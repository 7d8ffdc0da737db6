"""Parametrizing a test over AgentDojo pairs, with readable, exact ids."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from rampart.agentdojo._suites import DEFAULT_ATTACK, DEFAULT_VERSION, pairs

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["parametrize_pairs"]


def parametrize_pairs(
    suite: str,
    *,
    argname: str = "agentdojo_pair",
    version: str = DEFAULT_VERSION,
    attack: str = DEFAULT_ATTACK,
    user_tasks: Sequence[str] | None = None,
    injection_tasks: Sequence[str] | None = None,
) -> Any:
    """``@parametrize_pairs("banking")``: one test per pair of the suite.

    Ids read ``banking-user_task_0-injection_task_1``.

    Select with ``-k banking`` or ``-k "user_task_1-"`` (the trailing ``-`` keeps
    ``user_task_10`` out), or exactly with ``user_tasks=`` / ``injection_tasks=``.
    Stack ``@pytest.mark.trial(n=...)`` for repeats.
    """
    selected = pairs(
        suite,
        version=version,
        attack=attack,
        user_tasks=user_tasks,
        injection_tasks=injection_tasks,
    )
    return pytest.mark.parametrize(argname, selected, ids=[pair.id for pair in selected])
