"""Suites, versions, attacks and pairs: AgentDojo's counts, exact selection, clear errors."""

from __future__ import annotations

import pytest

from rampart.agentdojo import SUITE_NAMES, AgentDojoPair, load_attack, load_suite, pairs

from ._pipelines import SilentPipeline


def test_pair_counts_are_agentdojos() -> None:
    # AgentDojo v1.2.2 has 949 (user task, injection task) pairs; v1 has 629.
    counts = {suite: len(pairs(suite)) for suite in SUITE_NAMES}
    assert counts == {"workspace": 560, "travel": 140, "banking": 144, "slack": 105}
    assert sum(len(pairs(suite, version="v1")) for suite in SUITE_NAMES) == 629


def test_ids_are_readable_and_selection_is_exact() -> None:
    selected = pairs("banking", user_tasks=["user_task_1"])
    assert {pair.user_task for pair in selected} == {"user_task_1"}  # never user_task_10
    assert len(selected) == len(load_suite("banking").injection_tasks)
    assert selected[0].id == "banking-user_task_1-injection_task_0"
    assert str(selected[0]) == selected[0].id
    assert selected[0] == AgentDojoPair(
        suite="banking", user_task="user_task_1", injection_task="injection_task_0"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"suite": "bank"}, "suite: expected one of workspace, travel, banking, slack; got 'bank'"),
        ({"suite": "banking", "version": "v9"}, "version: expected one of v1, "),
        ({"suite": "banking", "attack": "nope"}, "attack: expected one of "),
        (
            {"suite": "banking", "user_tasks": ["user_task_99"]},
            "user_tasks: unknown task id(s) 'user_task_99'",
        ),
        ({"suite": "banking", "injection_tasks": ["x"]}, "injection_tasks: unknown task id(s) 'x'"),
    ],
)
def test_bad_selection_names_the_option(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        pairs(**kwargs)  # type: ignore[arg-type]


def test_a_single_task_id_string_is_refused() -> None:
    with pytest.raises(TypeError, match="user_tasks: expected a list of task ids"):
        pairs("banking", user_tasks="user_task_1")


def test_unnamed_pipeline_gets_a_clear_error() -> None:
    pipeline = SilentPipeline()
    pipeline.name = None
    for attack in ("important_instructions", "important_instructions_no_model_name"):
        with pytest.raises(ValueError, match=r"needs pipeline.name to contain a model id"):
            load_attack(attack, load_suite("banking"), pipeline)
    pipeline.name = "local"
    attack = load_attack("important_instructions_no_model_name", load_suite("banking"), pipeline)
    suite = load_suite("banking")
    texts = attack.attack(
        suite.user_tasks["user_task_0"], suite.injection_tasks["injection_task_0"]
    )
    assert texts
    assert all("Local model" not in text for text in texts.values())
