"""Verdict benchmark: error rates and clones used by confidence-aware trial verdicts.

Simulated agents with a known SAFE probability p in {0.80, 0.85, 0.90, 0.95, 0.99}
(threshold 0.90, confidence 0.95), seeded, zero latency. A clone that is not SAFE is
UNDETERMINED (counts against the rate, never fires the UNSAFE rule), so the table
measures the statistics, not the zero-tolerance policy. Two designs, both meeting the
same targets, a wrong verdict at most 2.5% of the time at any p (guaranteed) and a
missed verdict at most 2.5% of the time at p = 0.80 and p = 0.99 (computed):

- **fixed n**: ``trial(n=N_FIXED, threshold=0.9, confidence=0.95)``, where N_FIXED is
  the smallest n whose exact-interval verdict meets the targets (one n for both p: the
  p of an agent is not known beforehand);
- **sequential**: ``trial(n=N_MAX, ..., sequential=True)``, where N_MAX is the smallest
  cap meeting the same targets.

Both sizes are computed exactly (dynamic programming over the SAFE count, with the
package's own decision boundaries), and so are each design's verdict probabilities and
mean clones at every p, printed next to the simulation.

(a) false-PASS rate for p < 0.9 and false-FAIL rate for p > 0.9, each with its Wilson
    interval; target <= 5 %.
(b) mean clones used by the sequential design against N_FIXED; target <= 50 % at
    p = 0.80 and p = 0.99.
(c) every sequential group runs through ``execute_trials_async`` at concurrency 1 and
    at 50, its non-SAFE answers 10x faster than its SAFE ones (1 scheduler turn against
    10); verdicts and counted clones must be identical on every seeded group. Printed
    beside it: how many verdicts would have differed had the decision read results in
    completion order, as the fan-out used to (a replay of the recorded finish order).

The fixed-n verdicts need no run: they do not depend on the order of the results, and
are computed from the same seeded outcomes with the same rule (``TrialTally``).

Usage: ``python benchmarks/bench_verdicts.py [--groups 2000] [--seed 14]
[--backend asyncio] [--chart PATH] [--quick]``; matplotlib (the ``bench`` extra) draws
the chart (``docs/trials-verdicts.png`` is this chart from a full run).
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import attrs

from rampart import Result, SafetyStatus, execute_trials_async
from rampart.core._stats import wilson_interval
from rampart.core._trial_rule import (
    TrialRule,
    TrialTally,
    TrialVerdict,
    _exact_cutoffs,
    _sequential_bounds,
)

RATES = (0.80, 0.85, 0.90, 0.95, 0.99)
THRESHOLD = 0.90
CONFIDENCE = 0.95
ALPHA_SIDE = (1 - CONFIDENCE) / 2  # each wrong verdict, guaranteed by both designs
MISSED = 0.025  # a missed verdict at the two named rates, the design target
LOW, HIGH = 0.80, 0.99  # the rates the designs are sized for
FALSE_TARGET = 0.05
CLONES_TARGET = 0.50
CONCURRENCIES = (1, 50)
TURNS = {SafetyStatus.SAFE: 10, SafetyStatus.UNDETERMINED: 1}
OUT_DIR = Path(__file__).parent / "out"

SEQUENTIAL = TrialRule(threshold=THRESHOLD, confidence=CONFIDENCE, sequential=True)
FIXED = TrialRule(threshold=THRESHOLD, confidence=CONFIDENCE)


# --------------------------------------------------------------------------- exact


@attrs.frozen
class Exact:
    """A design's exact verdict probabilities and mean clones at one rate."""

    passed: float
    failed: float
    mean_clones: float

    @property
    def inconclusive(self) -> float:
        return max(0.0, 1.0 - self.passed - self.failed)


def exact_sequential(rate: float, cap: int) -> Exact:
    """Sequential design: the probability mass of "still running with s SAFE" is pushed
    through the decision boundaries one trial at a time."""
    bounds = _sequential_bounds(THRESHOLD, CONFIDENCE)
    bounds.extend(cap)
    alive = [1.0]
    passed = failed = clones = 0.0
    for t in range(1, cap + 1):
        step = [0.0] * (t + 1)
        for safe, mass in enumerate(alive):
            if mass:
                step[safe + 1] += mass * rate
                step[safe] += mass * (1 - rate)
        for safe in range(t + 1):
            if safe >= bounds.pass_at[t]:
                passed += step[safe]
                clones += t * step[safe]
                step[safe] = 0.0
            elif safe <= bounds.fail_at[t]:
                failed += step[safe]
                clones += t * step[safe]
                step[safe] = 0.0
        alive = step
    clones += cap * math.fsum(alive)
    return Exact(passed, failed, clones)


def oracle_clones(rate: float, cap: int) -> float:
    """Mean clones of the same test with its mixing distribution replaced by a point mass
    at the true rate (a Wald SPRT that knows the answer): a reference no test that does
    not know the rate can beat by much, printed beside (b)."""
    level = math.log(2.0 / (1.0 - CONFIDENCE))
    above = rate if rate > THRESHOLD else HIGH
    below = rate if rate < THRESHOLD else LOW

    def evidence(safe: int, failures: int, alternative: float) -> float:
        return safe * math.log(alternative / THRESHOLD) + failures * math.log(
            (1 - alternative) / (1 - THRESHOLD)
        )

    alive = [1.0]
    clones = 0.0
    for t in range(1, cap + 1):
        step = [0.0] * (t + 1)
        for safe, mass in enumerate(alive):
            if mass:
                step[safe + 1] += mass * rate
                step[safe] += mass * (1 - rate)
        for safe in range(t + 1):
            if step[safe] and (
                evidence(safe, t - safe, above) >= level or evidence(safe, t - safe, below) >= level
            ):
                clones += t * step[safe]
                step[safe] = 0.0
        alive = step
    return clones + cap * math.fsum(alive)


def exact_fixed(rate: float, n: int) -> Exact:
    pass_min, fail_max = _exact_cutoffs(n, THRESHOLD, CONFIDENCE)
    pmf = [math.comb(n, k) * rate**k * (1 - rate) ** (n - k) for k in range(n + 1)]
    return Exact(math.fsum(pmf[pass_min:]), math.fsum(pmf[: fail_max + 1]), float(n))


def meets_targets(design: Any, n: int) -> bool:
    return design(LOW, n).failed >= 1 - MISSED and design(HIGH, n).passed >= 1 - MISSED


def smallest_fixed(stop: int = 2000) -> int:
    """The smallest n meeting the targets, by a scan: the exact verdict's missed rates
    are not monotone in n (the saw-tooth of a discrete test), so n + 1 can miss where n
    meets them."""
    return next(n for n in range(1, stop) if meets_targets(exact_fixed, n))


def smallest_cap(start: int, stop: int) -> int:
    """The smallest sequential cap meeting the targets, by bisection: a larger cap only
    adds chances to decide, so meeting them is monotone in the cap."""
    low, high = start, stop
    while low < high:
        middle = (low + high) // 2
        if meets_targets(exact_sequential, middle):
            high = middle
        else:
            low = middle + 1
    return low


# --------------------------------------------------------------------------- simulation


def outcomes_of(rate: float, group: int, size: int, seed: int) -> list[SafetyStatus]:
    rng = random.Random(f"{seed}:{rate}:{group}")
    return [
        SafetyStatus.SAFE if rng.random() < rate else SafetyStatus.UNDETERMINED for _ in range(size)
    ]


class _Agent:
    """Executions answering the seeded outcomes, non-SAFE 10x faster (scheduler turns)."""

    def __init__(self, outcomes: list[SafetyStatus]) -> None:
        self.outcomes = outcomes
        self.created = 0
        self.finished: list[int] = []

    def factory(self) -> Any:
        index = self.created
        self.created += 1
        return _Execution(self, index)


class _Execution:
    def __init__(self, agent: _Agent, index: int) -> None:
        self.agent = agent
        self.index = index

    async def execute_async(self, *, adapter: object) -> Result:
        status = self.agent.outcomes[self.index]
        for _ in range(TURNS[status]):
            await anyio.lowlevel.checkpoint()
        self.agent.finished.append(self.index)
        return Result(status=status, summary="simulated")


def replay(outcomes: list[SafetyStatus], order: list[int], rule: TrialRule) -> TrialVerdict:
    """The verdict a decision reading results in ``order`` would have given."""
    tally = TrialTally(size=len(outcomes), rule=rule)
    for index in order:
        tally.add(outcomes[index])
        if tally.settled():
            break
    return tally.verdict()


@attrs.define
class Tally:
    """What one design did on one rate's groups."""

    groups: int = 0
    passed: int = 0
    failed: int = 0
    clones: int = 0
    mismatched: int = 0  # concurrency 1 and 50 disagree (must stay 0)
    by_completion: int = 0  # completion-order replay disagrees
    completion_failed: int = 0

    def add(self, verdict: TrialVerdict, clones: int) -> None:
        self.groups += 1
        self.passed += verdict is TrialVerdict.PASSED
        self.failed += verdict is TrialVerdict.FAILED
        self.clones += clones


async def run_rate(
    rate: float, groups: int, n_max: int, n_fixed: int, seed: int
) -> tuple[Tally, Tally]:
    sequential, fixed = Tally(), Tally()
    for group in range(groups):
        outcomes = outcomes_of(rate, group, max(n_max, n_fixed), seed)
        tally = TrialTally(size=n_fixed, rule=FIXED)
        for status in outcomes[:n_fixed]:
            tally.add(status)
        fixed.add(tally.verdict(), n_fixed)
        seen = []
        for concurrency in CONCURRENCIES:
            agent = _Agent(outcomes[:n_max])
            population = await execute_trials_async(
                execution_factory=agent.factory,
                adapter=object(),
                n=n_max,
                threshold=THRESHOLD,
                confidence=CONFIDENCE,
                sequential=True,
                concurrency=concurrency,
            )
            counted = [r.population.index for r in population.results if r.population]
            seen.append((population.verdict, counted, agent.finished))
        (verdict, counted, _), (wide_verdict, wide_counted, wide_order) = seen
        sequential.add(verdict, len(counted))
        sequential.mismatched += (verdict, counted) != (wide_verdict, wide_counted)
        by_completion = replay(outcomes[:n_max], wide_order, SEQUENTIAL)
        sequential.by_completion += by_completion is not wide_verdict
        sequential.completion_failed += by_completion is TrialVerdict.FAILED
    return sequential, fixed


# --------------------------------------------------------------------------- report


def rate_with_interval(count: int, total: int) -> str:
    low, high = wilson_interval(count, total)
    return f"{count / total:6.2%} [{low:.2%}, {high:.2%}]"


def false_rate(rate: float, tally: Tally) -> tuple[str, int, str]:
    if rate < THRESHOLD:
        return "false PASS", tally.passed, rate_with_interval(tally.passed, tally.groups)
    if rate > THRESHOLD:
        return "false FAIL", tally.failed, rate_with_interval(tally.failed, tally.groups)
    return "-", 0, "- (p = threshold)"


def write_chart(path: Path, n_max: int, n_fixed: int, simulated: dict[float, Tally]) -> str:
    try:
        matplotlib: Any = importlib.import_module("matplotlib")
        matplotlib.use("Agg")
        plt: Any = importlib.import_module("matplotlib.pyplot")
    except ImportError:
        return "chart skipped: matplotlib is not installed (pip install 'rampart[bench]')"
    grid = [0.70 + 0.3 * k / 120 for k in range(121)]
    sequential = [exact_sequential(p, n_max) for p in grid]
    fixed = [exact_fixed(p, n_fixed) for p in grid]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained")
    for series, style, label in ((sequential, "-", "sequential"), (fixed, "--", "fixed n")):
        left.plot(
            grid, [e.passed for e in series], style, color="tab:green", label=f"PASS, {label}"
        )
        left.plot(grid, [e.failed for e in series], style, color="tab:red", label=f"FAIL, {label}")
        left.plot(
            grid,
            [e.inconclusive for e in series],
            style,
            color="tab:gray",
            label=f"INCONCLUSIVE, {label}",
        )
    rates = sorted(simulated)
    left.plot(
        rates, [simulated[p].passed / simulated[p].groups for p in rates], "o", color="tab:green"
    )
    left.plot(
        rates, [simulated[p].failed / simulated[p].groups for p in rates], "o", color="tab:red"
    )
    left.axvline(THRESHOLD, color="black", linewidth=0.8)
    left.set_xlabel("true SAFE rate p")
    left.set_ylabel("probability of the verdict")
    left.set_title("verdicts (lines exact, dots simulated)")
    left.legend(fontsize="x-small", loc="center left")
    right.plot(grid, [e.mean_clones for e in sequential], "-", color="tab:blue", label="sequential")
    right.plot(
        rates,
        [simulated[p].clones / simulated[p].groups for p in rates],
        "o",
        color="tab:blue",
        label="sequential, simulated",
    )
    right.axhline(n_fixed, color="tab:orange", linestyle="--", label=f"fixed n = {n_fixed}")
    right.axhline(n_max, color="tab:gray", linestyle=":", label=f"sequential cap n = {n_max}")
    right.axvline(THRESHOLD, color="black", linewidth=0.8)
    right.set_xlabel("true SAFE rate p")
    right.set_ylabel("mean clones run")
    right.set_title("agent calls")
    right.legend(fontsize="small")
    figure.suptitle(
        f"threshold {THRESHOLD:.0%}, confidence {CONFIDENCE:.0%}: both designs are wrong <= "
        f"{ALPHA_SIDE:.1%} of the time and miss <= {MISSED:.1%} at p = {LOW} and {HIGH}"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return f"chart written to {path}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=2000, help="seeded groups per rate")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    parser.add_argument("--chart", type=Path, default=OUT_DIR / "bench_verdicts.png")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 50 groups per rate")
    args = parser.parse_args()
    if args.quick:
        args.groups = 50

    n_fixed = smallest_fixed()
    n_max = smallest_cap(n_fixed // 2, 4 * n_fixed)
    print(
        f"threshold {THRESHOLD}, confidence {CONFIDENCE}; designs meeting: wrong verdict <= "
        f"{ALPHA_SIDE:.1%} (any p), missed verdict <= {MISSED:.1%} at p = {LOW} and {HIGH}"
    )
    print(f"  fixed n:    n = {n_fixed} (exact interval)")
    print(f"  sequential: n = {n_max} at most (mixture likelihood-ratio test, anytime-valid)")
    print(
        f"{args.groups} seeded groups per rate; sequential groups run through "
        f"execute_trials_async at concurrency {CONCURRENCIES} on {args.backend}, non-SAFE "
        f"answers {TURNS[SafetyStatus.SAFE]}x faster"
    )
    print()

    simulated: dict[float, Tally] = {}
    fixed_runs: dict[float, Tally] = {}
    started = time.perf_counter()
    for rate in RATES:
        sequential, fixed = anyio.run(
            run_rate, rate, args.groups, n_max, n_fixed, args.seed, backend=args.backend
        )
        simulated[rate], fixed_runs[rate] = sequential, fixed
    elapsed = time.perf_counter() - started

    header = (
        f"{'p':>5} {'design':<11} {'PASS':>7} {'FAIL':>7} {'INCONCL':>8}  "
        f"{'exact P/F/I':<20} {'kind':<10} {'observed [95% CI]':<26} {'clones':>7} "
        f"{'exact':>6} {'vs fixed':>8}"
    )
    print(header)
    print("-" * len(header))
    worst_false = 0.0
    ratios: dict[float, float] = {}
    for rate in RATES:
        for name, tally, exact in (
            (f"fixed {n_fixed}", fixed_runs[rate], exact_fixed(rate, n_fixed)),
            ("sequential", simulated[rate], exact_sequential(rate, n_max)),
        ):
            g = tally.groups
            kind, count, observed = false_rate(rate, tally)
            if kind != "-":
                worst_false = max(worst_false, count / g)
            mean = tally.clones / g
            ratio = mean / n_fixed
            if name == "sequential":
                ratios[rate] = ratio
            shown = f"{exact.passed:.3f}/{exact.failed:.3f}/{exact.inconclusive:.3f}"
            print(
                f"{rate:>5.2f} {name:<11} {tally.passed / g:>7.2%} {tally.failed / g:>7.2%} "
                f"{(g - tally.passed - tally.failed) / g:>8.2%}  {shown:<20} {kind:<10} "
                f"{observed:<26} {mean:>7.1f} {exact.mean_clones:>6.1f} {ratio:>8.0%}"
            )
    print()
    verdict_a = "PASS" if worst_false <= FALSE_TARGET else "MISS"
    print(
        f"(a) worst false-verdict rate {worst_false:.2%} "
        f"(target <= {FALSE_TARGET:.0%}): {verdict_a}"
    )
    for rate in (LOW, HIGH):
        result = "PASS" if ratios[rate] <= CLONES_TARGET else "MISS"
        oracle = oracle_clones(rate, n_max) / n_fixed
        print(
            f"(b) p = {rate}: sequential uses {ratios[rate]:.0%} of the fixed design's clones "
            f"(target <= {CLONES_TARGET:.0%}): {result}; a Wald SPRT that knew p would use "
            f"{oracle:.0%}"
        )
    mismatched = sum(t.mismatched for t in simulated.values())
    total = sum(t.groups for t in simulated.values())
    result = "PASS" if mismatched == 0 else "MISS"
    print(
        f"(c) concurrency 1 vs 50: verdict and counted clones identical on "
        f"{total - mismatched}/{total} groups: {result}"
    )
    by_completion = sum(t.by_completion for t in simulated.values())
    print(
        f"    read in completion order instead, {by_completion}/{total} verdicts would have "
        "differed; false-FAIL rate at p = 0.95 / 0.99 would have been "
        + " / ".join(
            rate_with_interval(simulated[p].completion_failed, simulated[p].groups)
            for p in (0.95, 0.99)
        )
    )
    runs = 2 * sum(t.clones for t in simulated.values())
    print(f"    ({elapsed:.0f} s, about {runs:,} simulated trials through the engine)")
    print(write_chart(args.chart, n_max, n_fixed, simulated))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
