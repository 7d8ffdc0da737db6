"""The change-point test of ``rampart history`` (``_trend.change_point``): which split
it names, and that its p-value is the one-sided Fisher test of that split, times the
number of splits."""

from __future__ import annotations

import pytest

from rampart.cli._trend import change_point
from rampart.core._stats import fisher_exact


def test_a_drop_in_the_last_run_is_named_with_its_exact_p_value() -> None:
    observed = [(0, 50, 50), (1, 50, 50), (2, 50, 50), (3, 50, 50), (4, 38, 50)]
    change = change_point(observed)
    assert change is not None
    assert change["since_run"] == 5
    assert change["from_run"] == 1
    assert change["before"] == {"safe": 200, "executed": 200}
    assert change["after"] == {"safe": 38, "executed": 50}
    expected = fisher_exact(38, 50, 200, 200, alternative="less")
    assert change["p_value"] == pytest.approx(expected)
    assert change["splits"] == 4
    assert change["p_bonferroni"] == pytest.approx(4 * expected)
    assert change["p_bonferroni"] < 1e-6


def test_a_drop_that_persists_is_dated_where_it_began() -> None:
    observed = [(0, 30, 30), (1, 30, 30), (2, 20, 30), (3, 21, 30), (4, 19, 30)]
    change = change_point(observed)
    assert change is not None
    assert change["since_run"] == 3
    assert change["after"] == {"safe": 60, "executed": 90}


def test_one_failure_of_a_plain_test_is_never_significant() -> None:
    """One observation per run: a single UNSAFE after four SAFE has p = 1/5 before the
    adjustment (the failure could have fallen in any of the five runs)."""
    change = change_point([(0, 1, 1), (1, 1, 1), (2, 1, 1), (3, 1, 1), (4, 0, 1)])
    assert change is not None
    assert change["p_value"] == pytest.approx(0.2)
    assert change["p_bonferroni"] == pytest.approx(0.8)


def test_runs_where_a_test_is_absent_keep_their_numbers() -> None:
    change = change_point([(2, 10, 10), (5, 10, 10), (6, 0, 10)])
    assert change is not None
    assert (change["from_run"], change["since_run"], change["splits"]) == (3, 7, 2)


def test_one_run_has_no_change_point() -> None:
    assert change_point([(0, 5, 10)]) is None
    assert change_point([]) is None
