from __future__ import annotations

import attrs
import pytest

from rampart import (
    EvalOutcome,
    EvalResult,
    HarmCategory,
    ObservabilityLevel,
    PopulationRef,
    Request,
    Response,
    Result,
    SafetyStatus,
    Turn,
)


class TestResultSafety:
    @pytest.mark.parametrize("status", list(SafetyStatus))
    def test_safe_is_derived_from_status(self, status: SafetyStatus) -> None:
        """safe, and bool(), are True exactly for SAFE."""
        result = Result(status=status, summary="s")
        assert result.safe is (status is SafetyStatus.SAFE)
        assert bool(result) is result.safe

    def test_documented_manual_constructor(self) -> None:
        """The spec's manual example works and defaults the observability level."""
        result = Result(safe=True, status=SafetyStatus.SAFE, summary="Agent passed manual check")
        assert result.safe
        assert result.observability_level is ObservabilityLevel.RESPONSE_ONLY

    @pytest.mark.parametrize(
        ("safe", "status"),
        [(True, SafetyStatus.UNSAFE), (False, SafetyStatus.SAFE), (True, SafetyStatus.ERROR)],
    )
    def test_inconsistent_safe_is_rejected(self, safe: bool, status: SafetyStatus) -> None:
        """safe= must agree with status; a contradiction is a ValueError naming both."""
        with pytest.raises(
            ValueError, match=rf"^Result: safe must be .*status={status.value!r}.*got {safe}$"
        ):
            Result(safe=safe, status=status, summary="s")

    def test_status_must_be_enum(self) -> None:
        """A string status is a type error, not silently accepted."""
        with pytest.raises(TypeError, match=r"^Result: status must be a SafetyStatus, got 'safe'$"):
            Result(status="safe", summary="s")  # type: ignore[arg-type]

    def test_observability_must_be_enum(self) -> None:
        """The observability level is a closed enum."""
        with pytest.raises(TypeError, match=r"^Result: observability_level must be an Observ"):
            Result(status=SafetyStatus.SAFE, summary="s", observability_level="tool_only")  # type: ignore[arg-type]


class TestResultFields:
    def test_defaults(self) -> None:
        """Unrecorded provenance is None; collections start empty and unshared."""
        a = Result(status=SafetyStatus.SAFE, summary="a")
        b = Result(status=SafetyStatus.SAFE, summary="b")
        assert a.final_trace_evaluation is None
        assert a.trace_end_reason is None
        assert a.population is None
        assert a.turns == []
        assert a.injections == []
        a.metadata["k"] = 1
        assert b.metadata == {}

    def test_metadata_update_is_the_receipt_pattern(self) -> None:
        """Users add curated keys to a result's metadata in place."""
        result = Result(status=SafetyStatus.SAFE, summary="s")
        result.metadata.update({"scenario_id": "xpia-1"})
        assert result.metadata == {"scenario_id": "xpia-1"}

    def test_turn_evaluations_are_online_only_and_fresh(self) -> None:
        """turn_evaluations excludes the final-trace evaluation and is a new list each call."""
        online = EvalResult(outcome=EvalOutcome.NOT_DETECTED)
        final = EvalResult(outcome=EvalOutcome.DETECTED)
        turns = [
            Turn(request=Request(prompt="a"), response=Response(text="x"), eval_result=online),
            Turn(request=Request(prompt="b"), response=Response(text="y"), turn_number=1),
        ]
        result = Result(
            status=SafetyStatus.UNSAFE, summary="s", turns=turns, final_trace_evaluation=final
        )
        evaluations = result.turn_evaluations
        assert evaluations == [online]
        evaluations.append(final)
        assert result.turn_evaluations == [online]

    def test_any_string_is_a_harm_category(self) -> None:
        """HarmCategory is a StrEnum, and custom strings are accepted."""
        assert HarmCategory.DATA_EXFILTRATION == "data_exfiltration"
        result = Result(status=SafetyStatus.SAFE, summary="s", harm_category="custom_risk")
        assert result.harm_category == "custom_risk"

    def test_evolve_keeps_validation(self) -> None:
        """Copies made with attrs.evolve go through the same constructor."""
        result = Result(status=SafetyStatus.SAFE, summary="s")
        stamped = attrs.evolve(
            result, population=PopulationRef(id="p", index=0, size=1, threshold=1.0)
        )
        assert stamped.population is not None
        assert stamped.safe
        with pytest.raises(TypeError):
            attrs.evolve(result, status="safe")

    def test_repr(self) -> None:
        """repr shows the verdict at a glance."""
        result = Result(status=SafetyStatus.UNSAFE, summary="boom")
        assert repr(result) == "Result(safe=False, status=unsafe, summary='boom')"

    def test_mutable_with_checks_on_assignment(self) -> None:
        """A result accepts assignment as RAMPART's does; ``safe`` follows ``status``, and
        the constructor's checks run on assignment too."""
        result = Result(status=SafetyStatus.SAFE, summary="s")
        result.summary = "t"
        result.status = SafetyStatus.UNSAFE
        assert (result.summary, result.safe, bool(result)) == ("t", False, False)
        with pytest.raises(TypeError, match="Result: status must be a SafetyStatus"):
            result.status = "safe"  # type: ignore[assignment]
        assert result.status is SafetyStatus.UNSAFE
