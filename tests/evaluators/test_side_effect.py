"""Tests for ``rampart.evaluators.SideEffectOccurred``."""

from __future__ import annotations

import pytest

from rampart.core.types import EvalContext, EvalOutcome, EvalResult, ObservabilityLevel, SideEffect
from rampart.evaluators import SideEffectOccurred
from tests._builders import context, turn
from tests.evaluators._support import ND, D, U

FULL = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS


def _ctx(*effects: SideEffect, level: ObservabilityLevel = FULL) -> EvalContext:
    return context(turn(side_effects=effects), level=level)


class TestDetection:
    @pytest.mark.anyio
    @pytest.mark.parametrize("level", list(ObservabilityLevel))
    async def test_reported_effect_is_detected_at_every_level(
        self, level: ObservabilityLevel
    ) -> None:
        """A reported matching side effect counts whatever level the adapter declares."""
        ctx = _ctx(SideEffect(kind="http_request", details={"url": "https://evil"}), level=level)

        result = await SideEffectOccurred("http_request").evaluate_async(context=ctx)

        assert result == EvalResult(
            outcome=D,
            evidence=["Side effect 'http_request': {'url': 'https://evil'}"],
            rationale="Side effect 'http_request' detected",
        )

    @pytest.mark.anyio
    async def test_effect_on_an_earlier_turn_counts(self) -> None:
        """Every turn is scanned."""
        ctx = context(
            turn(number=0, side_effects=[SideEffect(kind="file_write")]),
            turn(number=1),
        )

        result = await SideEffectOccurred("file_write").evaluate_async(context=ctx)

        assert result.outcome is D

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("predicate", "expected"),
        [
            ("https://evil", D),
            ("https://good", ND),
            (lambda url: "evil" in url, D),
            (lambda url: url.startswith("ftp"), ND),
        ],
    )
    async def test_detail_predicates(self, predicate: object, expected: EvalOutcome) -> None:
        """Details are matched by equality or by a callable predicate."""
        ctx = _ctx(SideEffect(kind="http_request", details={"url": "https://evil"}))

        result = await SideEffectOccurred("http_request", url=predicate).evaluate_async(context=ctx)

        assert result.outcome is expected

    @pytest.mark.anyio
    async def test_missing_detail_is_none(self) -> None:
        """A predicate on an absent detail sees None."""
        ctx = _ctx(SideEffect(kind="http_request"))
        seen: list[object] = []

        await SideEffectOccurred("http_request", method=seen.append).evaluate_async(context=ctx)

        assert seen == [None]

    @pytest.mark.anyio
    async def test_kind_must_match_exactly(self) -> None:
        """Kinds are compared exactly; a different kind is NOT_DETECTED."""
        ctx = _ctx(SideEffect(kind="http_request"))

        result = await SideEffectOccurred("file_write").evaluate_async(context=ctx)

        assert result == EvalResult(outcome=ND, rationale="Side effect 'file_write' not detected")


class TestObservability:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        "level", [ObservabilityLevel.TOOL_ONLY, ObservabilityLevel.RESPONSE_ONLY]
    )
    async def test_unobserved_channel_is_undetermined(self, level: ObservabilityLevel) -> None:
        """Below TOOL_AND_SIDE_EFFECTS, no match means "could not see": UNDETERMINED."""
        result = await SideEffectOccurred("http_request").evaluate_async(context=_ctx(level=level))

        assert result == EvalResult(
            outcome=U,
            rationale=(
                f"Adapter observability is '{level.value}', which does not report side "
                "effects, so whether 'http_request' occurred cannot be determined"
            ),
        )

    @pytest.mark.anyio
    async def test_observed_channel_is_not_detected(self) -> None:
        """With side effects observed, no match is NOT_DETECTED."""
        result = await SideEffectOccurred("http_request").evaluate_async(context=_ctx())

        assert result.outcome is ND


class TestConstruction:
    @pytest.mark.parametrize("kind", [None, 1, b"x"])
    def test_non_string_kind_is_rejected(self, kind: object) -> None:
        """kind must be a str."""
        with pytest.raises(
            TypeError, match=r"^SideEffectOccurred: kind must be a non-empty string, got "
        ):
            SideEffectOccurred(kind)  # type: ignore[arg-type]

    @pytest.mark.parametrize("kind", ["", "  "])
    def test_blank_kind_is_rejected(self, kind: str) -> None:
        """kind must not be blank."""
        with pytest.raises(
            ValueError, match=r"^SideEffectOccurred: kind must be a non-empty string, got "
        ):
            SideEffectOccurred(kind)

    def test_kind_is_positional_only_so_it_can_be_a_detail(self) -> None:
        """A detail called kind is a predicate, not the constructor argument."""
        evaluator = SideEffectOccurred("http_request", kind="GET")

        assert evaluator.kind == "http_request"
        assert dict(evaluator.predicates) == {"kind": "GET"}

    def test_repr(self) -> None:
        """The repr shows kind and predicates."""
        assert repr(SideEffectOccurred("file_write", path="/etc/passwd")) == (
            "SideEffectOccurred('file_write', path='/etc/passwd')"
        )
