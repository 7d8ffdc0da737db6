"""Tests for ``|``, ``&`` and ``~`` (``rampart.core.evaluator``)."""

from __future__ import annotations

import functools
import operator

import pytest

from rampart.core.evaluator import (
    AllEvaluator,
    AnyEvaluator,
    BaseEvaluator,
    NotEvaluator,
    detected_is_absorbing,
)
from rampart.core.types import EvalContext, EvalOutcome, EvalResult, ObservabilityLevel
from rampart.evaluators import SideEffectOccurred, ToolCalled
from tests._builders import context, texts, turn
from tests.evaluators._support import (
    ND,
    OUTCOMES,
    SHORT,
    D,
    MustNotRun,
    PlainStub,
    Stub,
    U,
)

CTX = texts("anything")


def _left(outcome: EvalOutcome) -> Stub:
    return Stub(outcome, rationale=f"L-{SHORT[outcome]}", evidence=["l-ev"])


def _right(outcome: EvalOutcome) -> Stub:
    return Stub(outcome, rationale=f"R-{SHORT[outcome]}", evidence=["r-ev"])


# (left, right) -> (outcome, right ran, evidence, rationale, undetermined_operands)
OR_TABLE = {
    (D, D): (D, False, ["l-ev"], "L-D", []),
    (D, ND): (D, False, ["l-ev"], "L-D", []),
    (D, U): (D, False, ["l-ev"], "L-D", []),
    (ND, D): (D, True, ["r-ev"], "R-D", []),
    (ND, ND): (ND, True, [], "Neither condition detected", []),
    (ND, U): (U, True, ["l-ev", "r-ev"], "Right operand undetermined: R-U", ["R-U"]),
    (U, D): (D, True, ["r-ev"], "R-D", ["L-U"]),
    (U, ND): (U, True, ["l-ev", "r-ev"], "Left operand undetermined: L-U", ["L-U"]),
    (U, U): (U, True, ["l-ev", "r-ev"], "Left operand undetermined: L-U", ["L-U", "R-U"]),
}

AND_TABLE = {
    (D, D): (D, True, ["l-ev", "r-ev"], "(L-D) AND (R-D)", []),
    (D, ND): (ND, True, ["r-ev"], "Right operand not detected: R-ND", []),
    (D, U): (U, True, ["l-ev", "r-ev"], "Right operand undetermined: R-U", ["R-U"]),
    (ND, D): (ND, False, ["l-ev"], "Left operand not detected: L-ND", []),
    (ND, ND): (ND, False, ["l-ev"], "Left operand not detected: L-ND", []),
    (ND, U): (ND, False, ["l-ev"], "Left operand not detected: L-ND", []),
    (U, D): (U, True, ["l-ev", "r-ev"], "Left operand undetermined: L-U", ["L-U"]),
    (U, ND): (ND, True, ["r-ev"], "Right operand not detected: R-ND", ["L-U"]),
    (U, U): (U, True, ["l-ev", "r-ev"], "Left operand undetermined: L-U", ["L-U", "R-U"]),
}

PAIRS = [pytest.param(pair, id=f"{SHORT[pair[0]]}-{SHORT[pair[1]]}") for pair in OR_TABLE]


class TestOrTruthTable:
    @pytest.mark.anyio
    @pytest.mark.parametrize("pair", PAIRS)
    async def test_outcome_evidence_rationale_and_gaps(
        self, pair: tuple[EvalOutcome, EvalOutcome]
    ) -> None:
        """Each of the nine outcome pairs gives the documented result, field by field."""
        left, right = _left(pair[0]), _right(pair[1])
        outcome, right_ran, evidence, rationale, gaps = OR_TABLE[pair]

        result = await (left | right).evaluate_async(context=CTX)

        assert result == EvalResult(
            outcome=outcome,
            evidence=evidence,
            rationale=rationale,
            undetermined_operands=gaps,
        )
        assert left.calls == 1
        assert right.calls == (1 if right_ran else 0)

    @pytest.mark.anyio
    @pytest.mark.parametrize("pair", PAIRS)
    async def test_outcome_does_not_depend_on_order(
        self, pair: tuple[EvalOutcome, EvalOutcome]
    ) -> None:
        """a | b and b | a reach the same outcome."""
        forward = await (Stub(pair[0]) | Stub(pair[1])).evaluate_async(context=CTX)
        backward = await (Stub(pair[1]) | Stub(pair[0])).evaluate_async(context=CTX)

        assert forward.outcome is backward.outcome

    @pytest.mark.anyio
    async def test_left_detection_skips_the_right_operand(self) -> None:
        """A left DETECTED settles | without evaluating the right operand at all."""
        result = await (Stub(D, rationale="hit") | MustNotRun()).evaluate_async(context=CTX)

        assert result.outcome is D

    @pytest.mark.anyio
    async def test_detecting_operand_confidence_is_kept(self) -> None:
        """A detection reports the detecting operand's confidence."""
        left = await (Stub(D, confidence=0.7) | MustNotRun()).evaluate_async(context=CTX)
        right = await (Stub(ND, confidence=0.2) | Stub(D, confidence=0.9)).evaluate_async(
            context=CTX
        )

        assert left.confidence == 0.7
        assert right.confidence == 0.9

    @pytest.mark.anyio
    async def test_unsettled_confidence_is_the_lower_one(self) -> None:
        """When both operands decide the result, the lower confidence is reported."""
        neither = await (Stub(ND, confidence=0.8) | Stub(ND, confidence=0.6)).evaluate_async(
            context=CTX
        )
        unknown = await (Stub(U, confidence=0.3) | Stub(ND, confidence=0.9)).evaluate_async(
            context=CTX
        )

        assert neither.confidence == 0.6
        assert unknown.confidence == 0.3


class TestAndTruthTable:
    @pytest.mark.anyio
    @pytest.mark.parametrize("pair", PAIRS)
    async def test_outcome_evidence_rationale_and_gaps(
        self, pair: tuple[EvalOutcome, EvalOutcome]
    ) -> None:
        """Each of the nine outcome pairs gives the documented result, field by field."""
        left, right = _left(pair[0]), _right(pair[1])
        outcome, right_ran, evidence, rationale, gaps = AND_TABLE[pair]

        result = await (left & right).evaluate_async(context=CTX)

        assert result == EvalResult(
            outcome=outcome,
            evidence=evidence,
            rationale=rationale,
            undetermined_operands=gaps,
        )
        assert left.calls == 1
        assert right.calls == (1 if right_ran else 0)

    @pytest.mark.anyio
    @pytest.mark.parametrize("pair", PAIRS)
    async def test_outcome_does_not_depend_on_order(
        self, pair: tuple[EvalOutcome, EvalOutcome]
    ) -> None:
        """a & b and b & a reach the same outcome (an undetermined left does not settle it)."""
        forward = await (Stub(pair[0]) & Stub(pair[1])).evaluate_async(context=CTX)
        backward = await (Stub(pair[1]) & Stub(pair[0])).evaluate_async(context=CTX)

        assert forward.outcome is backward.outcome

    @pytest.mark.anyio
    async def test_left_non_detection_skips_the_right_operand(self) -> None:
        """A left NOT_DETECTED settles & without evaluating the right operand at all."""
        result = await (Stub(ND) & MustNotRun()).evaluate_async(context=CTX)

        assert result.outcome is ND

    @pytest.mark.anyio
    async def test_undetermined_left_still_runs_the_right(self) -> None:
        """An UNDETERMINED left does not short-circuit: the right may still settle it."""
        right = Stub(ND)

        result = await (Stub(U, rationale="blind") & right).evaluate_async(context=CTX)

        assert right.calls == 1
        assert result.outcome is ND
        assert result.undetermined_operands == ["blind"]

    @pytest.mark.anyio
    async def test_confidence(self) -> None:
        """The settling operand's confidence, or the lower one when both operands decide."""
        short = await (Stub(ND, confidence=0.4) & MustNotRun()).evaluate_async(context=CTX)
        by_right = await (Stub(D, confidence=0.9) & Stub(ND, confidence=0.7)).evaluate_async(
            context=CTX
        )
        both = await (Stub(D, confidence=0.9) & Stub(D, confidence=0.5)).evaluate_async(context=CTX)

        assert (short.confidence, by_right.confidence, both.confidence) == (0.4, 0.7, 0.5)


class TestNot:
    @pytest.mark.anyio
    @pytest.mark.parametrize(("inner", "flipped"), [(D, ND), (ND, D)])
    async def test_flips_and_keeps_the_rest(self, inner: EvalOutcome, flipped: EvalOutcome) -> None:
        """~ flips DETECTED/NOT_DETECTED, keeping confidence, evidence and gaps."""
        stub = Stub(inner, rationale="why", evidence=["e"], confidence=0.6, gaps=["gap"])

        result = await (~stub).evaluate_async(context=CTX)

        assert result == EvalResult(
            outcome=flipped,
            confidence=0.6,
            evidence=["e"],
            rationale="NOT (why)",
            undetermined_operands=["gap"],
        )

    @pytest.mark.anyio
    async def test_undetermined_passes_through_unchanged(self) -> None:
        """~ of an UNDETERMINED result is that result (an equal copy: what an evaluator
        returns is normalised into a fresh EvalResult at the boundary)."""
        stub = Stub(U, rationale="cannot see", evidence=["e"], gaps=["g"])

        result = await (~stub).evaluate_async(context=CTX)

        assert result == stub.result
        assert result is not stub.result

    @pytest.mark.anyio
    async def test_double_negation_restores_the_outcome(self) -> None:
        """~~a has a's outcome, with a nested rationale."""
        result = await (~~Stub(D, rationale="x")).evaluate_async(context=CTX)

        assert result.outcome is D
        assert result.rationale == "NOT (NOT (x))"

    def test_builds_not_evaluator(self) -> None:
        """~ builds a NotEvaluator around the operand."""
        stub = Stub(D)

        inverted = ~stub

        assert isinstance(inverted, NotEvaluator)
        assert inverted.inner is stub


class TestUndeterminedOperands:
    @pytest.mark.anyio
    async def test_carried_reasons_win_over_the_rationale(self) -> None:
        """An operand that carries reasons contributes them, not its own rationale."""
        nested = Stub(U, rationale="Left operand undetermined: a", gaps=["a", "b"])

        result = await (nested | Stub(ND)).evaluate_async(context=CTX)

        assert result.undetermined_operands == ["a", "b"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("rationale", ["", "   ", "\t\n"])
    async def test_a_silent_operand_is_still_recorded(self, rationale: str) -> None:
        """An UNDETERMINED operand without a rationale is recorded with a fixed phrase."""
        silent = Stub(U, rationale=rationale)

        with_and = await (silent & Stub(ND)).evaluate_async(context=CTX)
        with_or = await (silent | Stub(D)).evaluate_async(context=CTX)

        assert with_and.undetermined_operands == ["an operand gave no reason"]
        assert with_or.undetermined_operands == ["an operand gave no reason"]

    @pytest.mark.anyio
    async def test_reasons_are_stripped(self) -> None:
        """Whitespace around a reason is dropped, and blank carried reasons vanish."""
        result = await (
            Stub(U, rationale="  padded \n") | Stub(ND, gaps=[" ", " kept "])
        ).evaluate_async(context=CTX)

        assert result.undetermined_operands == ["padded", "kept"]

    @pytest.mark.anyio
    async def test_repeats_are_recorded_once(self) -> None:
        """The same gap reached by two paths is recorded once."""
        gap = Stub(U, rationale="cannot look") & Stub(ND)

        result = await (gap | gap).evaluate_async(context=CTX)

        assert result.undetermined_operands == ["cannot look"]

    @pytest.mark.anyio
    async def test_left_reasons_come_first(self) -> None:
        """Reasons are ordered left operand first."""
        result = await (Stub(U, rationale="z-left") | Stub(U, rationale="a-right")).evaluate_async(
            context=CTX
        )

        assert result.undetermined_operands == ["z-left", "a-right"]

    @pytest.mark.anyio
    async def test_short_circuited_operand_is_never_recorded(self) -> None:
        """A gap in a skipped operand does not appear: it never ran."""
        result = await (Stub(ND) & Stub(U, rationale="hidden")).evaluate_async(context=CTX)

        assert result.undetermined_operands == []

    @pytest.mark.anyio
    async def test_recording_a_gap_never_changes_the_outcome(self) -> None:
        """A conjunction settled NOT_DETECTED stays NOT_DETECTED while naming the gap."""
        result = await (Stub(U, rationale="blind") & Stub(ND)).evaluate_async(context=CTX)

        assert result.outcome is ND
        assert result.undetermined_operands == ["blind"]

    @pytest.mark.anyio
    async def test_three_operand_trees_name_every_gap_that_ran(self) -> None:
        """In every nesting and outcome combination, exactly the gaps of operands that ran
        are recorded, once each, in left-to-right order."""
        for first in OUTCOMES:
            for second in OUTCOMES:
                for third in OUTCOMES:
                    operands = [
                        Stub(outcome, rationale=f"g{i}")
                        for i, outcome in enumerate((first, second, third))
                    ]
                    a, b, c = operands
                    for composed in ((a & b) | c, (a | b) & c, a & (b | c), a | (b & c)):
                        for operand in operands:
                            operand.calls = 0

                        result = await composed.evaluate_async(context=CTX)

                        expected = [
                            f"g{i}"
                            for i, operand in enumerate(operands)
                            if operand.calls and operand.result.outcome is U
                        ]
                        assert result.undetermined_operands == expected, composed

    @pytest.mark.anyio
    async def test_a_real_gap_on_a_passing_conjunction(self) -> None:
        """With the observability-dependent evaluator on the left, its gap is recorded."""
        ctx = context(turn("no tools used"), level=ObservabilityLevel.TOOL_ONLY)

        result = await (
            SideEffectOccurred("http_request") & ToolCalled("send_email")
        ).evaluate_async(context=ctx)

        assert result.outcome is ND
        assert result.undetermined_operands == [
            "Adapter observability is 'tool_only', which does not report side effects, "
            "so whether 'http_request' occurred cannot be determined"
        ]

    @pytest.mark.anyio
    async def test_gap_on_the_right_of_a_settled_conjunction_is_lost(self) -> None:
        """With it on the right, the left NOT_DETECTED short-circuits and no gap is recorded."""
        ctx = context(turn("no tools used"), level=ObservabilityLevel.TOOL_ONLY)

        result = await (
            ToolCalled("send_email") & SideEffectOccurred("http_request")
        ).evaluate_async(context=ctx)

        assert result.outcome is ND
        assert result.undetermined_operands == []


class _Odd(BaseEvaluator):
    """A third-party evaluator that fills fields with non-string values."""

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        return EvalResult(
            outcome=EvalOutcome.UNDETERMINED,
            rationale=42,  # type: ignore[arg-type]
            evidence="one string",  # type: ignore[arg-type]
            undetermined_operands=None,  # type: ignore[arg-type]
        )


class TestOperands:
    @pytest.mark.anyio
    async def test_plain_protocol_evaluators_compose(self) -> None:
        """A plain Evaluator can be either operand of | and & and the operand of a composite."""
        base = Stub(ND)
        plain = PlainStub(D, rationale="plain hit")

        right = await (base | plain).evaluate_async(context=CTX)
        left = await (plain | base).evaluate_async(context=CTX)
        both = await AllEvaluator(left=PlainStub(D), right=plain).evaluate_async(context=CTX)
        inverted = await NotEvaluator(inner=plain).evaluate_async(context=CTX)

        assert right.rationale == "plain hit"
        assert left.rationale == "plain hit"
        assert both.outcome is D
        assert inverted.outcome is ND
        assert plain.calls == 4

    def test_reflected_operators_keep_operand_order(self) -> None:
        """plain | base and plain & base put the plain evaluator on the left."""
        base, plain = Stub(D), PlainStub(D)

        any_of = plain | base
        all_of = plain & base

        assert isinstance(any_of, AnyEvaluator)
        assert isinstance(all_of, AllEvaluator)
        assert (any_of.left, any_of.right) == (plain, base)
        assert (all_of.left, all_of.right) == (plain, base)

    @pytest.mark.anyio
    async def test_non_string_fields_are_rendered(self) -> None:
        """Odd third-party field values are turned into text instead of breaking composition."""
        result = await (_Odd() | Stub(ND)).evaluate_async(context=CTX)

        assert result.rationale == "Left operand undetermined: 42"
        assert result.evidence == ["one string"]
        assert result.undetermined_operands == ["42"]

    def test_repr_shows_the_tree(self) -> None:
        """A composite's repr shows its structure."""
        composed = ~(ToolCalled("a") | ToolCalled("b")) & ToolCalled("c")

        assert repr(composed) == "(~(ToolCalled('a') | ToolCalled('b')) & ToolCalled('c'))"


class TestBadOperands:
    @pytest.mark.parametrize("bad", [5, None, "ToolCalled", ToolCalled])
    def test_operator_rejects_a_non_evaluator(self, bad: object) -> None:
        """| and & with a non-evaluator raise TypeError naming the composite and the operand."""
        with pytest.raises(
            TypeError, match=r"^AnyEvaluator: right operand of \| must be an Evaluator .*, got "
        ):
            ToolCalled("x") | bad  # type: ignore[operator]
        with pytest.raises(
            TypeError, match=r"^AllEvaluator: right operand of & must be an Evaluator .*, got "
        ):
            ToolCalled("x") & bad  # type: ignore[operator]

    def test_reflected_operator_rejects_a_non_evaluator(self) -> None:
        """A non-evaluator on the left is named as the left operand."""
        with pytest.raises(
            TypeError, match=r"^AnyEvaluator: left operand of \| must be an Evaluator .*got 5$"
        ):
            5 | ToolCalled("x")  # type: ignore[operator]
        with pytest.raises(
            TypeError, match=r"^AllEvaluator: left operand of & must be an Evaluator"
        ):
            object() & ToolCalled("x")  # type: ignore[operator]

    @pytest.mark.parametrize(
        ("build", "owner", "name"),
        [
            (lambda: AnyEvaluator(left=1, right=Stub(D)), "AnyEvaluator", "left"),  # type: ignore[arg-type]
            (lambda: AnyEvaluator(left=Stub(D), right=1), "AnyEvaluator", "right"),  # type: ignore[arg-type]
            (lambda: AllEvaluator(left=None, right=Stub(D)), "AllEvaluator", "left"),  # type: ignore[arg-type]
            (lambda: AllEvaluator(left=Stub(D), right="x"), "AllEvaluator", "right"),  # type: ignore[arg-type]
            (lambda: NotEvaluator(inner=3.5), "NotEvaluator", "inner"),  # type: ignore[arg-type]
        ],
    )
    def test_constructors_name_the_bad_argument(self, build: object, owner: str, name: str) -> None:
        """Composite constructors reject non-evaluators, naming the class and the argument."""
        with pytest.raises(TypeError, match=rf"^{owner}: {name} must be an Evaluator"):
            build()  # type: ignore[operator]


class TestEvaluatorClassAsOperand:
    def test_a_class_is_not_an_evaluator(self) -> None:
        """Passing the class instead of an instance gets a hint to call it."""
        with pytest.raises(
            TypeError, match=r"got the class ToolCalled \(did you forget to call it\?\)$"
        ):
            ToolCalled("x") | ToolCalled


class TestLongChains:
    @pytest.mark.anyio
    async def test_long_or_chain_does_not_recurse(self) -> None:
        """a | b | c | ... over thousands of operands evaluates, classifies and prints."""
        operands = [Stub(ND) for _ in range(3000)]
        chain = functools.reduce(operator.or_, operands)

        result = await chain.evaluate_async(context=CTX)

        assert result.outcome is ND
        assert all(operand.calls == 1 for operand in operands)
        assert detected_is_absorbing(chain) is False
        assert repr(chain).startswith("(" * 2999 + "Stub(ND) | Stub(ND))")

    @pytest.mark.anyio
    async def test_long_and_chain_short_circuits_the_rest(self) -> None:
        """A NOT_DETECTED early in a long & chain skips every later operand."""
        operands = [Stub(D), Stub(U, rationale="blind"), Stub(ND)] + [Stub(D) for _ in range(3000)]
        chain = functools.reduce(operator.and_, operands)

        result = await chain.evaluate_async(context=CTX)

        assert result.outcome is ND
        assert result.undetermined_operands == ["blind"]
        assert [operand.calls for operand in operands[:4]] == [1, 1, 1, 0]
        assert sum(operand.calls for operand in operands) == 3

    def test_long_chain_of_built_ins_stays_absorbing(self) -> None:
        """Classification walks long chains without recursion."""
        chain = functools.reduce(operator.or_, [ToolCalled(f"tool_{i}") for i in range(3000)])

        assert detected_is_absorbing(chain) is True
