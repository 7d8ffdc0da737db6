"""Tests for the gap helpers strategies use in summaries (``rampart.core._gaps``)."""

from __future__ import annotations

import pytest

from rampart.core._gaps import (
    NO_REASON_GIVEN,
    gaps_of,
    merge_undetermined,
    summarize_undetermined,
)
from rampart.core.types import EvalResult
from tests.evaluators._support import ND, D, U


class TestSummarizeUndetermined:
    @pytest.mark.parametrize(
        ("reasons", "expected"),
        [
            ([], ""),
            (["a"], "a"),
            (["a", "b"], "a; b"),
            (["a", "b", "c"], "a; b (and 1 more)"),
            (["gap a", "gap b", "gap c", "gap d"], "gap a; gap b (and 2 more)"),
            ([" a ", "a", "\tb\n", "", "   ", "b", "c"], "a; b (and 1 more)"),
            (("x", "y"), "x; y"),
        ],
    )
    def test_names_two_and_counts_the_rest(self, reasons: list[str], expected: str) -> None:
        """Reasons are stripped, blanks dropped, repeats collapsed, two named, rest counted."""
        assert summarize_undetermined(reasons) == expected

    def test_keeps_first_seen_order(self) -> None:
        """De-duplication keeps the first occurrence's position."""
        assert summarize_undetermined(["b", "a", "b"]) == "b; a"

    def test_rejects_a_bare_string(self) -> None:
        """A single string is not a list of reasons (it would be split into letters)."""
        with pytest.raises(
            TypeError, match=r"^summarize_undetermined: reasons must be a sequence of str"
        ):
            summarize_undetermined("a reason")


class TestGapsOf:
    def test_collects_carried_reasons_across_evaluations(self) -> None:
        """Reasons from every evaluation, in order, each once; None entries are skipped."""
        online = EvalResult(outcome=ND, undetermined_operands=["tools unseen", "effects unseen"])
        final = EvalResult(outcome=D, undetermined_operands=[" effects unseen ", "judge down"])

        assert gaps_of(online, None, final) == ["tools unseen", "effects unseen", "judge down"]

    def test_undetermined_leaf_contributes_its_rationale(self) -> None:
        """A lone UNDETERMINED evaluation without carried reasons names its rationale."""
        leaf = EvalResult(outcome=U, rationale="  Adapter observability is 'response_only' ")

        assert gaps_of(leaf) == ["Adapter observability is 'response_only'"]

    def test_carried_reasons_win_over_the_rationale(self) -> None:
        """A composite's own rationale is not a gap when it carries the operand reasons."""
        composite = EvalResult(
            outcome=U, rationale="Left operand undetermined: a", undetermined_operands=["a"]
        )

        assert gaps_of(composite) == ["a"]

    def test_settled_evaluation_rationale_is_not_a_gap(self) -> None:
        """A DETECTED or NOT_DETECTED rationale is never reported as a gap."""
        assert gaps_of(EvalResult(outcome=D, rationale="hit"), EvalResult(outcome=ND)) == []

    def test_silent_undetermined_evaluation_leaves_room_for_a_fallback(self) -> None:
        """No reasons and no rationale gives nothing, so the caller's fallback applies."""
        assert gaps_of(EvalResult(outcome=U, rationale="  ")) == []
        assert gaps_of() == []
        assert gaps_of(None) == []

    def test_feeds_the_summary(self) -> None:
        """gaps_of and summarize_undetermined together give the summary suffix text."""
        evaluations = [EvalResult(outcome=ND, undetermined_operands=[f"gap {i}"]) for i in range(4)]

        assert summarize_undetermined(gaps_of(*evaluations)) == "gap 0; gap 1 (and 2 more)"


class TestMergeUndetermined:
    def test_left_only_when_right_did_not_run(self) -> None:
        """Without a right operand only the left one is recorded."""
        assert merge_undetermined(left=EvalResult(outcome=U, rationale="why")) == ["why"]

    def test_settled_operand_without_reasons_adds_nothing(self) -> None:
        """A DETECTED / NOT_DETECTED operand with no carried reasons records nothing."""
        assert (
            merge_undetermined(
                left=EvalResult(outcome=D, rationale="x"), right=EvalResult(outcome=ND)
            )
            == []
        )

    def test_silent_undetermined_operand_gets_the_fixed_phrase(self) -> None:
        """An UNDETERMINED operand that gives no reason is still counted."""
        assert merge_undetermined(left=EvalResult(outcome=U)) == [NO_REASON_GIVEN]

    def test_returns_a_fresh_list(self) -> None:
        """The result never aliases an operand's list."""
        carried = ["a"]
        left = EvalResult(outcome=ND, undetermined_operands=carried)

        merged = merge_undetermined(left=left)
        merged.append("b")

        assert carried == ["a"]
