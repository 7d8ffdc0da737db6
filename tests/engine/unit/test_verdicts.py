from __future__ import annotations

from typing import Any

import pytest

from rampart.core import resolve_attack_verdict, resolve_probe_verdict
from rampart.core.result import SafetyStatus
from rampart.core.types import (
    EvalOutcome,
    EvalResult,
    ObservabilityLevel,
    Response,
    TraceEndReason,
    Turn,
)
from rampart.strategies._probe import probe_summary
from rampart.strategies._shaping import adjust_for_observability, collect_response_metadata
from rampart.strategies._wording import BUDGET_SUFFIX, gap_suffix
from rampart.strategies._xpia import xpia_summary
from tests._builders import tool_response, turn

SAFE, UNSAFE, UND, ERROR = (
    SafetyStatus.SAFE,
    SafetyStatus.UNSAFE,
    SafetyStatus.UNDETERMINED,
    SafetyStatus.ERROR,
)


def _turn(number: int, response: Response | None = None) -> Turn:
    return turn("r", number=number, prompt="p", response=response)


class TestPolarity:
    @pytest.mark.parametrize(
        ("outcome", "attack", "probe"),
        [
            (EvalOutcome.DETECTED, UNSAFE, SAFE),
            (EvalOutcome.NOT_DETECTED, SAFE, UNSAFE),
            (EvalOutcome.UNDETERMINED, UND, UND),
        ],
    )
    def test_truth_table(
        self, outcome: EvalOutcome, attack: SafetyStatus, probe: SafetyStatus
    ) -> None:
        """Attack and probe give one evaluation opposite polarity; UNDETERMINED is kept."""
        evaluation = EvalResult(outcome=outcome)
        assert resolve_attack_verdict(evaluation=evaluation) is attack
        assert resolve_probe_verdict(evaluation=evaluation) is probe

    def test_unknown_outcome(self) -> None:
        """A value that is not an EvalOutcome is rejected."""
        with pytest.raises(ValueError, match="Unknown EvalOutcome"):
            resolve_attack_verdict(evaluation=EvalResult(outcome="detected"))  # type: ignore[arg-type]


class TestAdjustment:
    blind = ObservabilityLevel.RESPONSE_ONLY

    def test_downgrades_blind_safe(self) -> None:
        """SAFE + RESPONSE_ONLY + no tool call anywhere: UNDETERMINED."""
        turns = [_turn(0), _turn(1)]
        assert adjust_for_observability(SAFE, observability_level=self.blind, turns=turns) is UND

    def test_no_turns_downgrades_too(self) -> None:
        """The rule only asks whether any tool call was seen."""
        assert adjust_for_observability(SAFE, observability_level=self.blind, turns=[]) is UND

    @pytest.mark.parametrize("status", [UNSAFE, UND, ERROR])
    def test_other_statuses_unchanged(self, status: SafetyStatus) -> None:
        """Only SAFE is ever adjusted."""
        assert adjust_for_observability(status, observability_level=self.blind, turns=[]) is status

    def test_tool_call_on_any_turn_keeps_safe(self) -> None:
        """One observed tool call on any turn is enough to trust SAFE."""
        turns = [_turn(0), _turn(1, tool_response())]
        assert adjust_for_observability(SAFE, observability_level=self.blind, turns=turns) is SAFE


class TestMetadata:
    def test_copies_not_aliases(self) -> None:
        """Promoted metadata is a copy of the response's dict."""
        response = Response(text="x", metadata={"a": 1})
        promoted = collect_response_metadata([_turn(0, response)])
        assert promoted == {"a": 1}
        assert promoted is not response.metadata

    def test_keyed_per_turn(self) -> None:
        """Several turns with metadata are keyed by their turn number, each a copy."""
        first = Response(text="x", metadata={"a": 1})
        turns = [_turn(0, first), _turn(3, Response(text="y", metadata={"b": 2}))]
        collected = collect_response_metadata(turns)
        assert collected == {"turn_0": {"a": 1}, "turn_3": {"b": 2}}
        assert collected["turn_0"] is not first.metadata


MAX = TraceEndReason.MAX_TURNS_REACHED
DONE = TraceEndReason.DRIVER_EXHAUSTED
STOP = TraceEndReason.STOP_CONDITION_MET


class TestSummaries:
    def test_gap_suffix(self) -> None:
        """The gap suffix names the gaps; nothing when there are none."""
        gapped = EvalResult(outcome=EvalOutcome.NOT_DETECTED, undetermined_operands=["g1", "g1"])
        assert gap_suffix(gapped) == ", but part of the evaluation was undetermined: g1"
        assert gap_suffix(EvalResult(outcome=EvalOutcome.NOT_DETECTED)) == ""
        assert gap_suffix(None) == ""

    def test_budget_suffix_only_for_budget(self) -> None:
        """The budget suffix appears only when max_turns ended the trace."""
        evaluation = EvalResult(outcome=EvalOutcome.NOT_DETECTED)
        for reason, suffix in [(MAX, BUDGET_SUFFIX), (DONE, ""), (STOP, ""), (None, "")]:
            summary = xpia_summary(status=SAFE, evaluation=evaluation, trace_end_reason=reason)
            assert summary == "Agent defended successfully" + suffix

    @pytest.mark.parametrize(
        ("reason", "xpia", "probe"),
        [
            (DONE, "Execution error: Driver produced no turns", "ERROR: Driver produced no turns"),
            (
                MAX,
                "Execution error: Turn budget exhausted before agent exercise",
                "ERROR: Turn budget exhausted before the agent was exercised",
            ),
            (
                STOP,
                "Execution error: No evaluable trace",
                "ERROR: Probe produced no evaluable trace",
            ),
            (
                None,
                "Execution error: No evaluable trace",
                "ERROR: Probe produced no evaluable trace",
            ),
        ],
    )
    def test_error_summaries(self, reason: Any, xpia: str, probe: str) -> None:
        """Without an evaluation, the ERROR summary says why there was nothing to judge."""
        assert xpia_summary(status=ERROR, evaluation=None, trace_end_reason=reason) == xpia
        assert probe_summary(status=ERROR, evaluation=None, trace_end_reason=reason) == probe

    def test_probe_error_with_rationale(self) -> None:
        """A probe ERROR that has an evaluation explains itself through its rationale."""
        evaluation = EvalResult(outcome=EvalOutcome.UNDETERMINED, rationale=" judge failed ")
        summary = probe_summary(status=ERROR, evaluation=evaluation, trace_end_reason=MAX)
        assert summary == "ERROR: judge failed" + BUDGET_SUFFIX

    def test_odd_evidence_values_are_rendered(self) -> None:
        """Third-party evidence that is not text is still rendered (no crash)."""
        evaluation = EvalResult(outcome=EvalOutcome.DETECTED, evidence=[1, None, "x"])  # type: ignore[list-item]
        summary = xpia_summary(status=UNSAFE, evaluation=evaluation, trace_end_reason=DONE)
        assert summary == "Attack objective detected: 1; ; x"
