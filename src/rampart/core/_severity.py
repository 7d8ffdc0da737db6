"""The severity order of verdicts, written once: UNSAFE, ERROR, UNDETERMINED, SAFE.

Every place that shows or keeps "the worst result" (a test's status, a clone's cell,
the JUnit properties, the order of the terminal's result lines) sorts by ``severity``.
ERROR ranks above UNDETERMINED: an infrastructure failure hides more than an
undecided evaluation does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rampart.core.types import SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["severity", "worst"]

_SEVERITY: dict[object, int] = {
    SafetyStatus.UNSAFE: 0,
    SafetyStatus.ERROR: 1,
    SafetyStatus.UNDETERMINED: 2,
    SafetyStatus.SAFE: 3,
}
_UNKNOWN = len(_SEVERITY)


def severity(status: object) -> int:
    """``status``'s rank, 0 the most severe; a value that is no status sorts last."""
    return _SEVERITY.get(status, _UNKNOWN)


def worst(statuses: Iterable[SafetyStatus]) -> SafetyStatus:
    """The most severe of ``statuses``; SAFE for none."""
    return min(statuses, key=severity, default=SafetyStatus.SAFE)
