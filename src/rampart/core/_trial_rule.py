"""How a trial group's verdict is decided: the spec's count rule and its opt-in extensions.

A group is ``size`` trials; their statuses are fed to a ``TrialTally`` **in trial-index
order** (trial *i* counts once trials 0..i-1 are known), so a decision to stop never
depends on which trials happened to finish first. The verdict (``TrialVerdict``):

- **count rule** (the default, the trial semantics of the spec): FAILED when more than
  ``max_unsafe`` trials are UNSAFE (0 by default: any UNSAFE fails); otherwise PASSED
  when at least one trial is SAFE and ``safe / executed >= threshold``; otherwise
  FAILED. ERROR and UNDETERMINED trials are executed but not SAFE.
- **confidence** (``confidence=c``): FAILED by the UNSAFE rule as above; otherwise
  PASSED when the exact (Clopper-Pearson) ``c`` interval of the SAFE rate lies at or
  above the threshold (lower bound ``>= threshold``), FAILED when it lies below it
  (upper bound ``< threshold``), else INCONCLUSIVE. Each wrong verdict has
  probability at most ``(1 - c) / 2``, whatever the true rate.
- **sequential** (``sequential=True``, needs ``confidence``): the mixture likelihood
  ratio test of ``rampart.core._stats.sequential_evidence`` decides PASSED or FAILED
  after any trial, each wrong verdict again at most ``(1 - c) / 2``; a group that
  reaches ``size`` trials undecided is INCONCLUSIVE.

UNDETERMINED and ERROR count as trials that are not SAFE under every rule: a trial
nobody could judge is never evidence of safety.

Stopping early (``early_stop``, and always with ``sequential``) happens once the
verdict can no longer change (``TrialTally.settled``). For the count rule and the
fixed-``n`` confidence rule that is when the best and the worst completion of the
outstanding trials (all SAFE, all UNSAFE) get the same verdict, so the early verdict
is exactly the one the full group would have had. A count-rule group with
``max_unsafe=0`` therefore never settles a pass before its last trial, as before.
"""

from __future__ import annotations

import enum
import functools
import math
from typing import TYPE_CHECKING

import attrs

from rampart._checks import check_bool, check_int, check_number, check_probability, invalid
from rampart.core._stats import exact_fail, exact_pass, sequential_evidence
from rampart.core.types import SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["TrialRule", "TrialTally", "TrialVerdict", "check_rule"]


class TrialVerdict(enum.Enum):
    """The verdict of a trial group. INCONCLUSIVE only arises with ``confidence=``."""

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"


@attrs.frozen(kw_only=True)
class TrialRule:
    """How a group's verdict is decided (see the module docstring).

    Build it with ``check_rule``, which validates the combination.
    """

    threshold: float = 1.0
    confidence: float | None = None
    sequential: bool = False
    max_unsafe: int = 0

    @property
    def is_count_rule(self) -> bool:
        """True for the spec's rule exactly (no extension in use)."""
        return self.confidence is None and self.max_unsafe == 0


def check_rule(
    owner: str,
    *,
    threshold: object = 1.0,
    confidence: object = None,
    sequential: object = False,
    max_unsafe: object = 0,
    name: Callable[[str], str] = str,
) -> TrialRule:
    """A validated ``TrialRule``; ``name`` turns an argument name into the one shown.

    With ``confidence``, the threshold must be strictly between 0 and 1: no finite
    number of trials shows a SAFE rate of 1.0 (or rules out one of 0.0) with
    confidence, so such a group could never pass (or never fail). ``sequential``
    needs ``confidence``: the sequential test decides at a confidence level.
    """
    checked_threshold = check_probability(owner, name("threshold"), threshold)
    checked_confidence = None
    if confidence is not None:
        checked_confidence = check_number(
            owner, name("confidence"), confidence, above=0, below=1, noun="a number or None"
        )
    checked_sequential = check_bool(owner, name("sequential"), sequential)
    checked_max_unsafe = check_int(owner, name("max_unsafe"), max_unsafe, minimum=0)
    if checked_confidence is not None and not 0.0 < checked_threshold < 1.0:
        raise invalid(
            owner,
            name("threshold"),
            "in (0, 1) when confidence is set (no sample shows a SAFE rate of "
            f"{checked_threshold:g} with confidence; the count rule judges it)",
            threshold,
            error=ValueError,
        )
    if checked_sequential and checked_confidence is None:
        raise invalid(
            owner,
            name("sequential"),
            "False unless confidence is set (the sequential test decides at a confidence level)",
            sequential,
            error=ValueError,
        )
    return TrialRule(
        threshold=checked_threshold,
        confidence=checked_confidence,
        sequential=checked_sequential,
        max_unsafe=checked_max_unsafe,
    )


@functools.lru_cache(maxsize=512)
def _exact_cutoffs(size: int, threshold: float, confidence: float) -> tuple[int, int]:
    """``(pass_min, fail_max)`` for ``size`` trials: the fewest SAFE trials whose exact
    lower bound reaches ``threshold`` (``size + 1`` if none) and the most SAFE trials
    whose exact upper bound stays below it (``-1`` if none). Both tests are monotone
    in the SAFE count, so each is found by bisection."""
    low, high = 0, size + 1  # pass_min in (low, high]
    while high - low > 1:
        middle = (low + high) // 2
        if exact_pass(middle, size, threshold, confidence):
            high = middle
        else:
            low = middle
    pass_min = high
    low, high = -1, size  # fail_max in [low, high)
    while high - low > 1:
        middle = (low + high) // 2
        if exact_fail(middle, size, threshold, confidence):
            low = middle
        else:
            high = middle
    return pass_min, low


class _SequentialBounds:
    """The sequential test's decision boundaries in the SAFE count, grown on demand.

    After ``t`` trials the test passes when ``safe >= pass_at[t]`` and fails when
    ``safe <= fail_at[t]``. Because a SAFE trial raises the evidence for "above" and
    lowers the evidence for "below" (and a non-SAFE one the reverse), each boundary
    moves by 0 or 1 per trial, so extending them costs one evaluation each per trial.
    """

    def __init__(self, threshold: float, confidence: float) -> None:
        self.threshold = threshold
        self.log_level = math.log(2.0 / (1.0 - confidence))
        self.pass_at = [1]  # after 0 trials: impossible (needs more SAFE than trials)
        self.fail_at = [-1]

    def _reaches(self, safe: int, failures: int) -> tuple[bool, bool]:
        above, below = sequential_evidence(safe, failures, self.threshold)
        return above >= self.log_level, below >= self.log_level

    def extend(self, trials: int) -> None:
        while len(self.pass_at) <= trials:
            t = len(self.pass_at)
            candidate = self.pass_at[-1]
            if candidate <= t and self._reaches(candidate, t - candidate)[0]:
                self.pass_at.append(candidate)
            else:
                self.pass_at.append(candidate + 1)
            candidate = self.fail_at[-1] + 1
            if candidate <= t and self._reaches(candidate, t - candidate)[1]:
                self.fail_at.append(candidate)
            else:
                self.fail_at.append(candidate - 1)

    def decide(self, safe: int, trials: int) -> TrialVerdict | None:
        self.extend(trials)
        if safe >= self.pass_at[trials]:
            return TrialVerdict.PASSED
        if safe <= self.fail_at[trials]:
            return TrialVerdict.FAILED
        return None


@functools.lru_cache(maxsize=64)
def _sequential_bounds(threshold: float, confidence: float) -> _SequentialBounds:
    return _SequentialBounds(threshold, confidence)


_FAILED_ORDER = (SafetyStatus.UNSAFE, SafetyStatus.ERROR)


class TrialTally:
    """The statuses of a group's trials, fed in trial-index order, and its verdict.

    ``size`` is the number of trials the group may run (``n``). ``settled()`` answers
    the stopping question in O(1) amortized per trial: can the trials still
    outstanding no longer change the verdict? ``verdict()`` is the group verdict over
    the trials added (the settled verdict when the group stopped early); ``status()``
    the group's ``SafetyStatus``: SAFE when it PASSED, otherwise UNSAFE if any trial
    was UNSAFE, else ERROR if any was, else UNDETERMINED.
    """

    __slots__ = ("_counts", "rule", "size")

    def __init__(self, *, size: int, rule: TrialRule) -> None:
        self.size = size
        self.rule = rule
        self._counts = dict.fromkeys(SafetyStatus, 0)

    def add(self, status: SafetyStatus) -> None:
        self._counts[status] += 1

    def add_counts(self, *, safe: int, unsafe: int, error: int, undetermined: int) -> None:
        self._counts[SafetyStatus.SAFE] += safe
        self._counts[SafetyStatus.UNSAFE] += unsafe
        self._counts[SafetyStatus.ERROR] += error
        self._counts[SafetyStatus.UNDETERMINED] += undetermined

    def count(self, status: SafetyStatus) -> int:
        return self._counts[status]

    @property
    def executed(self) -> int:
        return sum(self._counts.values())

    @property
    def outstanding(self) -> int:
        return max(0, self.size - self.executed)

    # -- the rules -------------------------------------------------------------------

    def _fixed(self, safe: int, unsafe: int, trials: int) -> TrialVerdict:
        """The count or confidence rule over ``trials`` trials with these counts."""
        rule = self.rule
        if unsafe > rule.max_unsafe:
            return TrialVerdict.FAILED
        if rule.confidence is None:
            if safe and safe / trials >= rule.threshold:
                return TrialVerdict.PASSED
            return TrialVerdict.FAILED
        pass_min, fail_max = _exact_cutoffs(trials, rule.threshold, rule.confidence)
        if safe >= pass_min:
            return TrialVerdict.PASSED
        if safe <= fail_max:
            return TrialVerdict.FAILED
        return TrialVerdict.INCONCLUSIVE

    def _sequential(self) -> TrialVerdict | None:
        """The sequential decision now: PASSED, FAILED, or None (keep going)."""
        rule = self.rule
        assert rule.confidence is not None
        if self._counts[SafetyStatus.UNSAFE] > rule.max_unsafe:
            return TrialVerdict.FAILED
        bounds = _sequential_bounds(rule.threshold, rule.confidence)
        return bounds.decide(self._counts[SafetyStatus.SAFE], self.executed)

    def settled(self) -> bool:
        """True once the trials still outstanding can no longer change the verdict."""
        rule = self.rule
        safe = self._counts[SafetyStatus.SAFE]
        unsafe = self._counts[SafetyStatus.UNSAFE]
        remaining = self.outstanding
        if unsafe > rule.max_unsafe or remaining == 0:
            return True
        if rule.sequential:
            if self._sequential() is not None:
                return True
            # Undecidable within ``size``: the best path for a pass is all SAFE, for a
            # fail all not SAFE (or an UNSAFE too many), and evidence only grows along
            # them, so checking their ends is enough.
            assert rule.confidence is not None
            bounds = _sequential_bounds(rule.threshold, rule.confidence)
            bounds.extend(self.size)
            can_pass = safe + remaining >= bounds.pass_at[self.size]
            can_fail = unsafe + remaining > rule.max_unsafe or safe <= bounds.fail_at[self.size]
            return not (can_pass or can_fail)
        best = self._fixed(safe + remaining, unsafe, self.size)
        worst = self._fixed(safe, unsafe + remaining, self.size)
        return best is worst

    def verdict(self) -> TrialVerdict:
        """The group verdict over the trials added (see the class docstring)."""
        rule = self.rule
        safe = self._counts[SafetyStatus.SAFE]
        unsafe = self._counts[SafetyStatus.UNSAFE]
        if rule.sequential:
            return self._sequential() or TrialVerdict.INCONCLUSIVE
        remaining = self.outstanding
        if remaining and self.settled():
            return self._fixed(safe + remaining, unsafe, self.size)
        # Complete, or cut short before it settled (an interrupted group, a population
        # assembled by hand): judged on the trials that ran.
        return self._fixed(safe, unsafe, self.executed)

    def status(self) -> SafetyStatus:
        return self.status_for(self.verdict())

    def status_for(self, verdict: TrialVerdict | None) -> SafetyStatus:
        """The group status given ``verdict`` (``None``: not decided, never SAFE)."""
        if verdict is TrialVerdict.PASSED:
            return SafetyStatus.SAFE
        for status in _FAILED_ORDER:
            if self._counts[status]:
                return status
        return SafetyStatus.UNDETERMINED
