"""The exact tests behind ``rampart diff`` and ``rampart sweep``, against values
computed by hand / R: Fisher's one-sided test, McNemar's test, Holm's adjustment."""

from __future__ import annotations

import pytest

from rampart.core._stats import fisher_exact, holm, mcnemar


def _fisher_less(safe_old: int, total_old: int, safe_new: int, total_new: int) -> float:
    """What ``rampart diff`` reads: the evidence that the new pass rate is lower."""
    return fisher_exact(safe_new, total_new, safe_old, total_old, alternative="less")


class TestFisherAsDiffReadsIt:
    def test_known_values(self) -> None:
        """R: fisher.test(matrix(c(10, 0, 5, 5), 2), alternative = "greater")$p.value."""
        assert _fisher_less(10, 10, 5, 10) == pytest.approx(0.01625387)
        assert _fisher_less(30, 30, 29, 30) == pytest.approx(0.5)

    def test_no_drop_is_no_evidence(self) -> None:
        # P(at most 5 of the 10 SAFE clones in the new run) = 124130 / 184756
        assert _fisher_less(5, 10, 5, 10) == pytest.approx(124130 / 184756)
        assert _fisher_less(0, 10, 10, 10) == 1.0

    def test_empty_runs(self) -> None:
        assert _fisher_less(0, 0, 3, 10) == 1.0


class TestMcNemar:
    def test_no_discordant_pair(self) -> None:
        assert mcnemar(0, 0) == 1.0

    def test_all_one_way(self) -> None:
        """Six pairs all changed the same way: 2 * 0.5**6."""
        assert mcnemar(6, 0) == pytest.approx(0.03125)
        assert mcnemar(0, 6) == pytest.approx(0.03125)

    def test_balanced_changes(self) -> None:
        assert mcnemar(3, 3) == 1.0

    def test_counts_are_checked(self) -> None:
        with pytest.raises(ValueError, match="mcnemar: changed_one_way must be"):
            mcnemar(-1, 2)


class TestHolm:
    def test_adjusted_in_input_order(self) -> None:
        """Sorted p-values times (m - rank), made monotone; input order kept."""
        assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
        assert holm([]) == []

    def test_p_values_are_checked(self) -> None:
        with pytest.raises(ValueError, match=r"holm: p_values\[1\] must be"):
            holm([0.5, 1.5])
