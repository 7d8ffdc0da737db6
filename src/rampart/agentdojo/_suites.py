"""AgentDojo's suites, versions, attacks and (user task, injection task) pairs.

Everything here goes through AgentDojo's package (``pip install 'rampart[agentdojo]'``);
nothing of it is copied. The checks turn AgentDojo's silent failure modes (an unknown
version is an empty suite map; an attack that needs a model name in the pipeline's
name raises deep inside it) into errors that name the option and what was expected.
"""

from __future__ import annotations

import functools
import importlib
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

__all__ = [
    "DEFAULT_ATTACK",
    "DEFAULT_VERSION",
    "SUITE_NAMES",
    "VERSIONS",
    "AgentDojoPair",
    "load_attack",
    "load_suite",
    "pairs",
    "require_agentdojo",
]

SUITE_NAMES = ("workspace", "travel", "banking", "slack")
"""AgentDojo's four default suites."""

DEFAULT_VERSION = "v1.2.2"
"""The benchmark version used when none is named (AgentDojo's newest in 0.1.35)."""

DEFAULT_ATTACK = "important_instructions"
"""AgentDojo's reference attack."""

# AgentDojo's benchmark versions, oldest first. ``get_suites`` answers an unknown
# version with an empty map, so the known ones are listed to name them in errors.
VERSIONS = ("v1", "v1.1", "v1.1.1", "v1.1.2", "v1.2", "v1.2.1", "v1.2.2")


def require_agentdojo() -> Any:
    """Import AgentDojo's suite loader, or say how to install it."""
    try:
        return importlib.import_module("agentdojo.task_suite.load_suites")
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "rampart.agentdojo needs the AgentDojo package: pip install 'rampart[agentdojo]'"
        ) from error


def _check_choice(option: str, value: object, choices: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{option}: expected one of {', '.join(choices)}; got {value!r}")
    return value


@functools.cache
def load_suite(suite: str, version: str = DEFAULT_VERSION) -> Any:
    """AgentDojo's ``TaskSuite`` named ``suite`` at benchmark ``version``."""
    loader = require_agentdojo()
    _check_choice("version", version, VERSIONS)
    _check_choice("suite", suite, SUITE_NAMES)
    suites = loader.get_suites(version)
    if suite not in suites:  # pragma: no cover - a future AgentDojo without the suite
        raise ValueError(f"suite: AgentDojo {version} has no suite {suite!r}")
    return suites[suite]


def load_attack(attack: str, suite: Any, pipeline: Any) -> Any:
    """AgentDojo's attack ``attack`` against ``pipeline`` on ``suite``.

    The ``important_instructions`` family reads the victim model's name from
    ``pipeline.name`` (every variant, even ``important_instructions_no_model_name``,
    which then leaves it out of the injection's text); a pipeline whose name holds no
    model id from ``agentdojo.models.MODEL_NAMES`` gets an error that says so.
    """
    registry = importlib.import_module("agentdojo.attacks.attack_registry")
    importlib.import_module("agentdojo.attacks")  # registers the built-in attacks
    _check_choice("attack", attack, sorted(registry.ATTACKS))
    try:
        return registry.load_attack(attack, suite, pipeline)
    except ValueError as error:
        if "model" not in str(error).lower() and "name" not in str(error).lower():
            raise
        raise ValueError(
            f"attack: {attack!r} needs pipeline.name to contain a model id from "
            "agentdojo.models.MODEL_NAMES (for example 'local'); got "
            f"{getattr(pipeline, 'name', None)!r}. Set pipeline.name; with "
            "attack='important_instructions_no_model_name' the name is not written into "
            "the injection"
        ) from error


@attrs.frozen(kw_only=True)
class AgentDojoPair:
    """One (user task, injection task) pair of a suite, under one attack.

    ``id`` reads ``banking-user_task_1-injection_task_0``: the separators make
    ``-k "user_task_1-"`` select user task 1 only (a bare ``user_task_1`` also matches
    ``user_task_10``, as every pytest ``-k`` substring does).
    """

    suite: str
    version: str = DEFAULT_VERSION
    user_task: str
    injection_task: str
    attack: str = DEFAULT_ATTACK

    @property
    def id(self) -> str:
        return f"{self.suite}-{self.user_task}-{self.injection_task}"

    def __str__(self) -> str:
        return self.id


def _task_order(tasks: Iterable[str], wanted: Sequence[str] | None, option: str) -> list[str]:
    known = list(tasks)  # AgentDojo's registration order
    if wanted is None:
        return known
    if isinstance(wanted, str):
        raise TypeError(f"{option}: expected a list of task ids, got the string {wanted!r}")
    missing = [task for task in wanted if task not in known]
    if missing:
        raise ValueError(
            f"{option}: unknown task id(s) {', '.join(map(repr, missing))}; "
            f"the suite has {', '.join(known)}"
        )
    return [task for task in known if task in set(wanted)]


def pairs(
    suite: str,
    *,
    version: str = DEFAULT_VERSION,
    attack: str = DEFAULT_ATTACK,
    user_tasks: Sequence[str] | None = None,
    injection_tasks: Sequence[str] | None = None,
) -> list[AgentDojoPair]:
    """Every (user task, injection task) pair of ``suite``, in AgentDojo's order.

    ``user_tasks`` / ``injection_tasks`` select exact task ids (``"user_task_1"`` is
    user task 1, never 10).
    """
    loaded = load_suite(suite, version)
    _check_choice("attack", attack, _attack_names())
    users = _task_order(loaded.user_tasks, user_tasks, "user_tasks")
    injections = _task_order(loaded.injection_tasks, injection_tasks, "injection_tasks")
    return [
        AgentDojoPair(
            suite=suite, version=version, user_task=user, injection_task=injection, attack=attack
        )
        for user in users
        for injection in injections
    ]


def _attack_names() -> list[str]:
    registry = importlib.import_module("agentdojo.attacks.attack_registry")
    importlib.import_module("agentdojo.attacks")
    return sorted(registry.ATTACKS)
