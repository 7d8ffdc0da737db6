"""``--junitxml``: each test case carries rampart's verdict as JUnit properties.

CI systems that read JUnit XML show a test case's ``<properties>``; pytest's junitxml
plugin writes the ``user_properties`` of a test's reports there. After teardown (when
every result of the item is known) this adds, for a test that recorded results:

- ``rampart_status`` (the worst result's status, or a trial group's population status),
  ``rampart_harm_category``, ``rampart_results`` (how many) and ``rampart_summary`` (the
  worst result's summary, on one line);
- for a trial group: ``rampart_verdict`` (``passed`` / ``failed``, or ``inconclusive``
  for a group judged with a confidence), ``rampart_pass_rate``, ``rampart_ci95`` (the
  95% Wilson interval, ``low-high``), ``rampart_threshold``, ``rampart_counts`` and,
  when it did not pass, ``rampart_reason``; a group judged with a confidence adds
  ``rampart_confidence`` and ``rampart_exact_interval`` (the interval its verdict reads).

Loaded only when ``--junitxml`` is given; the item hooks add ``properties(state)`` to
the teardown report (``_items``, where the per-item hooks are implemented).
``user_properties`` travel with the test report, so under xdist the controller's JUnit
file has them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart._redact import redact
from rampart._text import one_line
from rampart.core._internal import severity, wilson_interval
from rampart.pytest_plugin._groups import describe

if TYPE_CHECKING:
    from rampart.core.result import Result
    from rampart.pytest_plugin._items import ItemState

__all__ = ["properties"]


def _results(state: ItemState) -> list[Result]:
    """The results still held by the item's collectors, and the worst of those it
    handed over earlier (finished trial clones are let go as they finish)."""
    results: list[Result] = []
    if state.run is not None:
        for clone in [*state.run.clones, *state.run.partial]:
            results.extend(clone.collector.results)
    results.extend(state.fixtures.results)
    if state.released_worst is not None:
        results.append(state.released_worst)
    return results


def properties(state: ItemState) -> list[tuple[str, str]]:
    """The rampart properties of one finished item (none when it recorded nothing)."""
    results = _results(state)
    count = len(results) - (state.released_worst is not None) + state.released_count
    outcome = None if state.run is None else state.run.outcome
    if not results and outcome is None:
        return []
    found: list[tuple[str, str]] = []
    if results:
        worst = min(results, key=lambda result: severity(result.status))
        status = worst.status.value
        category = worst.harm_category if worst.harm_category is not None else state.harm
    else:
        worst, status, category = None, "", state.harm
    if outcome is not None:
        status = outcome.status.value
    found.append(("rampart_status", status))
    if category is not None:
        found.append(("rampart_harm_category", str(category)))
    found.append(("rampart_results", str(count)))
    if worst is not None:
        found.append(("rampart_summary", redact(one_line(worst.summary))))
    if outcome is not None and outcome.verdict is not None:
        low, high = wilson_interval(outcome.counts.safe, outcome.executed)
        description, reason = describe(outcome)
        found.extend(
            [
                ("rampart_verdict", outcome.verdict.value),
                ("rampart_pass_rate", f"{outcome.pass_rate:.4f}"),
                ("rampart_ci95", f"{low:.4f}-{high:.4f}"),
                ("rampart_threshold", f"{outcome.rule.threshold:g}"),
                ("rampart_counts", description),
            ]
        )
        if outcome.rule.confidence is not None:
            exact = outcome.interval
            found.append(("rampart_confidence", f"{outcome.rule.confidence:g}"))
            found.append(("rampart_exact_interval", f"{exact.low:.4f}-{exact.high:.4f}"))
        if reason is not None:
            found.append(("rampart_reason", reason))
    return found
