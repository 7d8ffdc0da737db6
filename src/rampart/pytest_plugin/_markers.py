"""Reading and validating the ``harm`` and ``trial`` markers.

Bad marker arguments are usage errors, reported before anything runs, and name the
marker, the argument and what was expected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import attrs
import pytest

from rampart._checks import check_bool, check_int, check_probability, invalid
from rampart.core.result import HarmCategory

__all__ = ["TrialSpec", "harm_category_of", "trial_spec_of"]

DEFAULT_CONCURRENCY = 10
#: Default of ini ``rampart_max_trials``, the largest ``n`` a trial group may have.
DEFAULT_MAX_TRIALS = 10_000

T = TypeVar("T")

if TYPE_CHECKING:
    from collections.abc import Callable


@attrs.frozen(kw_only=True)
class TrialSpec:
    """The effective trial settings of one test item."""

    n: int
    threshold: float = 1.0
    concurrency: int = DEFAULT_CONCURRENCY
    early_stop: bool = False


def _usage(check: Callable[[], T]) -> T:
    """Run an argument check; its ``TypeError`` / ``ValueError`` becomes a usage error."""
    try:
        return check()
    except (TypeError, ValueError) as error:
        raise pytest.UsageError(str(error)) from None


_TRIAL_KWARGS = frozenset({"n", "threshold", "concurrency", "early_stop"})


def trial_spec_of(
    item: pytest.Item,
    *,
    trials_override: int | None,
    default_concurrency: int,
    max_trials: int = DEFAULT_MAX_TRIALS,
) -> TrialSpec | None:
    """The item's trial settings, or None when it carries no ``trial`` marker.

    ``n`` above ``max_trials`` (ini ``rampart_max_trials``) is a usage error: a trial
    group is bounded by design. ``trials_override`` was checked against it already.
    """
    marker = item.get_closest_marker("trial")
    if marker is None:
        return None
    unknown = set(marker.kwargs) - _TRIAL_KWARGS
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.trial got unexpected argument(s) {sorted(unknown)} on {item.nodeid}; "
            "expected n=, threshold=, concurrency=, early_stop="
        )
    if len(marker.args) > 1 or (marker.args and "n" in marker.kwargs):
        raise pytest.UsageError(
            f"@pytest.mark.trial takes n as its only positional argument (on {item.nodeid})"
        )
    if marker.args:
        raw_n = marker.args[0]
    elif "n" in marker.kwargs:
        raw_n = marker.kwargs["n"]
    else:
        raise pytest.UsageError(f"@pytest.mark.trial requires n= (on {item.nodeid})")
    owner = item.nodeid
    n = _usage(lambda: check_int(owner, "@pytest.mark.trial(n=)", raw_n, minimum=1))
    if trials_override is not None:
        n = trials_override
    elif n > max_trials:
        raise invalid(
            owner,
            "@pytest.mark.trial(n=)",
            f"<= {max_trials} (ini rampart_max_trials; raise it to run more clones)",
            raw_n,
            error=pytest.UsageError,
        )
    threshold = _usage(
        lambda: check_probability(
            owner, "@pytest.mark.trial(threshold=)", marker.kwargs.get("threshold", 1.0)
        )
    )
    raw_concurrency = marker.kwargs.get("concurrency")
    concurrency = (
        default_concurrency
        if raw_concurrency is None
        else _usage(
            lambda: check_int(owner, "@pytest.mark.trial(concurrency=)", raw_concurrency, minimum=1)
        )
    )
    early_stop = _usage(
        lambda: check_bool(
            owner, "@pytest.mark.trial(early_stop=)", marker.kwargs.get("early_stop", False)
        )
    )
    return TrialSpec(n=n, threshold=threshold, concurrency=concurrency, early_stop=early_stop)


def harm_category_of(item: pytest.Item) -> str | None:
    """The harm category from the closest ``harm`` marker (its first argument)."""
    marker = item.get_closest_marker("harm")
    if marker is None:
        return None
    if not marker.args:
        raise pytest.UsageError(
            f"@pytest.mark.harm needs at least one category (on {item.nodeid}), "
            'e.g. @pytest.mark.harm(HarmCategory.DATA_EXFILTRATION) or @pytest.mark.harm("my_risk")'
        )
    for index, category in enumerate(marker.args):
        if not isinstance(category, str) or not category.strip():
            raise invalid(
                item.nodeid,
                f"@pytest.mark.harm category {index}",
                "a HarmCategory or a non-empty string",
                category,
                error=pytest.UsageError,
            )
    category = marker.args[0]
    try:
        return HarmCategory(category)
    except ValueError:
        return str(category)
