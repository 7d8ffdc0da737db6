"""The strategies' room: each strategy declares its name, polarity, summary and shaping."""

from __future__ import annotations

from typing import Any

from rampart.attacks._xpia import XPIAExecution
from rampart.core._verdicts import Polarity
from rampart.core.types import EvalOutcome, EvalResult, ObservabilityLevel, SafetyStatus
from rampart.probes._single_turn import SingleTurnExecution
from rampart.strategies import PROBE, STRATEGIES, XPIA, Strategy, strategy_for, strategy_named


def _evaluation(outcome: EvalOutcome) -> EvalResult:
    return EvalResult(outcome=outcome, rationale="found it", evidence=["turn 1"])


def test_the_built_in_strategies_are_listed_once_by_name() -> None:
    assert [strategy.name for strategy in STRATEGIES] == ["xpia", "probe"]
    assert strategy_named("xpia") is XPIA
    assert strategy_named("probe") is PROBE
    assert strategy_named("crescendo") is None


def test_each_polarity_has_a_default_strategy() -> None:
    assert strategy_for(Polarity.ATTACK) is XPIA
    assert strategy_for(Polarity.PROBE) is PROBE


def test_the_polarities_read_detected_oppositely() -> None:
    detected = _evaluation(EvalOutcome.DETECTED)
    common: dict[str, Any] = {
        "observability_level": ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        "turns": [],
    }
    assert XPIA.verdict(detected, metadata={}, **common) is SafetyStatus.UNSAFE
    assert PROBE.verdict(detected, metadata={}, **common) is SafetyStatus.SAFE
    assert XPIA.verdict(None, metadata={}, **common) is SafetyStatus.ERROR


def test_a_reason_withholds_a_safe_verdict_and_is_recorded() -> None:
    metadata: dict[str, Any] = {}
    status = PROBE.verdict(
        _evaluation(EvalOutcome.DETECTED),
        observability_level=ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        turns=[],
        reasons=["turn 1: filtered"],
        metadata=metadata,
    )
    assert status is SafetyStatus.UNDETERMINED
    assert metadata == {"undetermined_reason": "turn 1: filtered"}


def test_xpia_withholds_a_safe_nobody_could_check() -> None:
    metadata: dict[str, Any] = {}
    status = XPIA.verdict(
        _evaluation(EvalOutcome.NOT_DETECTED),
        observability_level=ObservabilityLevel.RESPONSE_ONLY,
        turns=[],
        metadata=metadata,
    )
    assert status is SafetyStatus.UNDETERMINED
    assert metadata == {"observability_adjusted": True}


def test_a_new_strategy_is_one_declaration() -> None:
    """A third strategy needs nothing but its own declaration to read its verdicts."""

    def summary(**kwargs: Any) -> str:
        return f"crescendo: {kwargs['status'].value}"

    def shaping(status: SafetyStatus, **_: Any) -> SafetyStatus:
        return status

    crescendo = Strategy(
        name="crescendo", polarity=Polarity.ATTACK, summary=summary, shaping=shaping
    )
    status = crescendo.verdict(
        _evaluation(EvalOutcome.DETECTED),
        observability_level=ObservabilityLevel.RESPONSE_ONLY,
        turns=[],
        metadata={},
    )
    assert status is SafetyStatus.UNSAFE
    assert crescendo.summary(status=status, evaluation=None, trace_end_reason=None) == (
        "crescendo: unsafe"
    )


def test_the_executions_record_their_declared_names() -> None:
    from rampart.drivers import StaticDriver
    from rampart.evaluators import ResponseContains, ResponseScope

    driver = StaticDriver(prompts=["hi"])
    evaluator = ResponseContains("x", scope=ResponseScope.ANY_TURN)
    assert XPIAExecution(driver=driver, evaluator=evaluator).strategy_name == XPIA.name
    assert SingleTurnExecution(driver=driver, evaluator=evaluator).strategy_name == PROBE.name
