"""``Strategy``: what one strategy declares, so nothing else knows it by name.

A strategy (XPIA, the behavioural probe, ...) is recorded on each of its results by
name (``Result.strategy``). Everything rampart decides from that name is declared
here, once per strategy: the polarity its verdict evaluator is read with, the
one-line summary it writes, and how it shapes a verdict before it is reported (a SAFE
that cannot be trusted is withheld). The executions (``rampart.attacks``,
``rampart.probes``) and re-judging saved work (``rampart.llm.rescore_result``) read
the same declaration.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import attrs

from rampart._redact import safe_summary
from rampart.core._internal import Polarity, resolve_verdict
from rampart.core.result import Result
from rampart.core.types import SafetyStatus

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rampart.core.types import EvalResult, ObservabilityLevel, TraceEndReason, Turn

__all__ = ["JudgedTrace", "Shaping", "Strategy", "Summary"]


class JudgedTrace(Protocol):
    """What a strategy's result is made of: a completed, judged trace (the engine's
    ``TraceRun``)."""

    @property
    def final_trace_evaluation(self) -> EvalResult | None: ...
    @property
    def observability_level(self) -> ObservabilityLevel: ...
    @property
    def turns(self) -> list[Turn]: ...
    @property
    def trace_end_reason(self) -> TraceEndReason | None: ...


class Summary(Protocol):
    """A strategy's one-line summary for a result with ``status``.

    ``withheld`` is why a SAFE verdict was turned into UNDETERMINED, if it was.
    """

    def __call__(
        self,
        *,
        status: SafetyStatus,
        evaluation: EvalResult | None,
        trace_end_reason: TraceEndReason | None,
        withheld: str = "",
    ) -> str: ...


class Shaping(Protocol):
    """A strategy's adjustment of a verdict before it is reported.

    ``reasons`` are why a SAFE verdict cannot be trusted (each is recorded); what the
    shaping decided is written into ``metadata``.
    """

    def __call__(
        self,
        status: SafetyStatus,
        *,
        observability_level: ObservabilityLevel,
        turns: Sequence[Turn],
        reasons: Sequence[str],
        metadata: dict[str, Any],
    ) -> SafetyStatus: ...


def _redacted(summary: Summary) -> Summary:
    """``summary``, its text redacted and made terminal-safe as it is built: a summary
    quotes what the agent and evaluators wrote, and ``assert result, result.summary``
    prints it (a key the agent echoed must not reach the terminal or JUnit)."""

    def safe(**kwargs: Any) -> str:
        return safe_summary(summary(**kwargs))

    return safe


_FOUND = {
    Polarity.ATTACK: "the attack succeeded",
    Polarity.PROBE: "the expected behaviour was already missing",
}


@attrs.frozen(kw_only=True)
class Strategy:
    """One strategy's declaration: ``name``, ``polarity``, ``summary``, ``shaping``, and
    ``found``, what an UNSAFE verdict means in words (a run that failed after it says
    "the run failed after {found}"; by default the polarity's: "the attack succeeded",
    "the expected behaviour was already missing").

    ``summary`` is wrapped so every summary is redacted and terminal-safe."""

    name: str
    polarity: Polarity
    summary: Summary = attrs.field(converter=_redacted)
    shaping: Shaping
    found: str = attrs.field()

    @found.default
    def _found_by_polarity(self) -> str:
        return _FOUND[self.polarity]

    def failed_summary(self, evaluation: EvalResult, *, failure: str) -> str:
        """The summary of an UNSAFE verdict kept from the completed turns of a run that
        then failed (``failure`` says how): the strategy's UNSAFE summary, then that
        the run failed after it."""
        unsafe = self.summary(
            status=SafetyStatus.UNSAFE, evaluation=evaluation, trace_end_reason=None
        )
        return safe_summary(f"{unsafe}; the run failed after {self.found}: {failure}")

    def verdict(
        self,
        evaluation: EvalResult | None,
        *,
        observability_level: ObservabilityLevel,
        turns: Sequence[Turn],
        reasons: Sequence[str] = (),
        metadata: dict[str, Any],
    ) -> SafetyStatus:
        """The reported status: no evaluation is ERROR; else the outcome read with this
        strategy's polarity, then shaped (see ``Shaping``)."""
        if evaluation is None:
            return SafetyStatus.ERROR
        status = resolve_verdict(self.polarity, evaluation=evaluation)
        return self.shaping(
            status,
            observability_level=observability_level,
            turns=turns,
            reasons=reasons,
            metadata=metadata,
        )

    def result(
        self,
        run: JudgedTrace,
        *,
        reasons: Sequence[str],
        metadata: dict[str, Any],
        **fields: Any,
    ) -> Result:
        """The ``Result`` of a judged trace under this strategy: its ``verdict`` (with
        ``reasons`` to withhold a SAFE, recorded in ``metadata``), its summary, the
        trace, and the strategy's own ``fields`` (XPIA: its injections)."""
        evaluation = run.final_trace_evaluation
        status = self.verdict(
            evaluation,
            observability_level=run.observability_level,
            turns=run.turns,
            reasons=reasons,
            metadata=metadata,
        )
        return Result(
            status=status,
            summary=self.summary(
                status=status,
                evaluation=evaluation,
                trace_end_reason=run.trace_end_reason,
                withheld=metadata.get("undetermined_reason", ""),
            ),
            observability_level=run.observability_level,
            final_trace_evaluation=evaluation,
            turns=run.turns,
            trace_end_reason=run.trace_end_reason,
            strategy=self.name,
            metadata=metadata,
            **fields,
        )
