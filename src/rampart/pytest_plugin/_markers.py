"""Reading and validating the ``harm`` and ``trial`` markers.

Bad marker arguments are usage errors, reported before anything runs, and name the
marker, the argument and what was expected.
"""

from __future__ import annotations

import math

import attrs
import pytest

from rampart.core.result import HarmCategory

__all__ = ["TrialSpec", "harm_category_of", "trial_spec_of"]

DEFAULT_CONCURRENCY = 10


@attrs.frozen(kw_only=True)
class TrialSpec:
    """The effective trial settings of one test item."""

    n: int
    threshold: float = 1.0
    concurrency: int = DEFAULT_CONCURRENCY
    early_stop: bool = False


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise pytest.UsageError(f"{what} must be an integer >= 1, got {value!r}")
    return value


def _threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise pytest.UsageError(
            f"@pytest.mark.trial(threshold=) must be a number in [0, 1], got {value!r}"
        )
    threshold = float(value)
    if not math.isfinite(threshold) or not 0.0 <= threshold <= 1.0:
        raise pytest.UsageError(
            f"@pytest.mark.trial(threshold=) must be a number in [0, 1], got {value!r}"
        )
    return threshold


_TRIAL_KWARGS = frozenset({"n", "threshold", "concurrency", "early_stop"})


def trial_spec_of(
    item: pytest.Item, *, trials_override: int | None, default_concurrency: int
) -> TrialSpec | None:
    """The item's trial settings, or None when it carries no ``trial`` marker."""
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
    n = _positive_int(raw_n, "@pytest.mark.trial(n=)")
    if trials_override is not None:
        n = trials_override
    threshold = _threshold(marker.kwargs.get("threshold", 1.0))
    raw_concurrency = marker.kwargs.get("concurrency")
    concurrency = (
        default_concurrency
        if raw_concurrency is None
        else _positive_int(raw_concurrency, "@pytest.mark.trial(concurrency=)")
    )
    early_stop = marker.kwargs.get("early_stop", False)
    if not isinstance(early_stop, bool):
        raise pytest.UsageError(
            f"@pytest.mark.trial(early_stop=) must be True or False, got {early_stop!r}"
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
    for category in marker.args:
        if not isinstance(category, str) or not category:
            raise pytest.UsageError(
                f"@pytest.mark.harm categories must be HarmCategory values or non-empty "
                f"strings, got {category!r} (on {item.nodeid})"
            )
    category = marker.args[0]
    try:
        return HarmCategory(category)
    except ValueError:
        return str(category)
