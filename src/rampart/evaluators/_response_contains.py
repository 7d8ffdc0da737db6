"""``ResponseContains``: does the agent's response text contain a pattern?"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rampart._checks import check_bool, check_optional_instance, invalid
from rampart.core.evaluator import BaseEvaluator
from rampart.core.types import EvalOutcome, EvalResult
from rampart.evaluators._scope import ResponseScope

if TYPE_CHECKING:
    from rampart.core.types import EvalContext, Turn

__all__ = ["ResponseContains"]

Target = str | re.Pattern[str] | Callable[[str], bool]

_OWNER = "ResponseContains"


def _matcher(target: object, *, case_sensitive: bool) -> Callable[[str], bool]:
    """A one-response match function for ``target``, after checking it."""
    if isinstance(target, str):
        if not target:
            raise invalid(_OWNER, "target", "a non-empty string", target, error=ValueError)
        if case_sensitive:
            return lambda text: target in text
        folded = target.casefold()
        return lambda text: folded in text.casefold()
    if isinstance(target, re.Pattern):
        if not isinstance(target.pattern, str):
            raise invalid(_OWNER, "target", "a pattern compiled from a str", target)
        return lambda text: target.search(text) is not None
    if callable(target):
        return lambda text: bool(target(text))
    raise invalid(
        _OWNER,
        "target",
        "a str, a compiled re.Pattern or a callable taking the response text",
        target,
    )


def _turn_numbers(turns: list[Turn], matches: list[bool], *, wanted: bool) -> str:
    return ", ".join(
        str(turn.turn_number)
        for turn, matched in zip(turns, matches, strict=True)
        if matched is wanted
    )


class ResponseContains(BaseEvaluator):
    """Detects ``target`` in the response text of the turns ``scope`` selects.

    ``target`` is a substring (case-insensitive unless ``case_sensitive=True``), a
    compiled regular expression (``search``; ``case_sensitive`` does not apply, use
    ``re.IGNORECASE``), or a callable that takes the text and returns a truth value.
    ``scope`` says which turns: ``ResponseScope.ANY_TURN`` (some response matches),
    ``ALL_TURNS`` (every response matches) or ``CURRENT_TURN`` (the latest one does).
    Without it (RAMPART's older form ``ResponseContains("x")``), a context of one turn
    is judged (there the three scopes agree) and a longer one raises ``ValueError``
    naming ``scope``: which quantifier was meant is never guessed.

    Response text is always observed, so the result is never UNDETERMINED. Evidence
    names the recorded turn numbers (``"Pattern found on turn(s): 0, 2"``; a failed
    ``ALL_TURNS`` check lists ``"Pattern missing on turn(s): ..."``). An empty context
    raises ``ValueError("No turns in context.")``. ``ANY_TURN`` detections stay true as
    the trace grows (so ``stop_when="auto"`` may stop on them); ``ALL_TURNS``
    non-detections do.
    """

    def __init__(
        self,
        target: Target,
        /,
        *,
        scope: ResponseScope | None = None,
        case_sensitive: bool = False,
    ) -> None:
        check_bool(_OWNER, "case_sensitive", case_sensitive)
        self._matches = _matcher(target, case_sensitive=case_sensitive)
        # RAMPART's words for this mistake are "scope must be a ResponseScope".
        check_optional_instance(_OWNER, "scope", scope, ResponseScope, expected="a ResponseScope")
        self._target = target
        self._scope = scope
        self._case_sensitive = case_sensitive

    @property
    def target(self) -> Target:
        return self._target

    @property
    def scope(self) -> ResponseScope | None:
        return self._scope

    @property
    def case_sensitive(self) -> bool:
        return self._case_sensitive

    def __repr__(self) -> str:
        flag = ", case_sensitive=True" if self._case_sensitive else ""
        scope = "" if self._scope is None else f", scope={self._scope}"
        return f"ResponseContains({self._target!r}{scope}{flag})"

    def _absorbing(self) -> tuple[bool, bool]:
        return (self._scope is ResponseScope.ANY_TURN, self._scope is ResponseScope.ALL_TURNS)

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        turns = context.turns
        if not turns:
            raise ValueError("No turns in context.")
        if self._scope is None and len(turns) > 1:
            raise ValueError(
                f"{_OWNER}: a context of {len(turns)} turns needs scope=: "
                "ResponseScope.ANY_TURN, ALL_TURNS or CURRENT_TURN (without it only a "
                "one-turn context is judged)"
            )
        if self._scope is None or self._scope is ResponseScope.CURRENT_TURN:
            return self._current_turn(turns[-1])

        matches = [self._matches(turn.response.text) for turn in turns]
        if self._scope is ResponseScope.ANY_TURN:
            if any(matches):
                return EvalResult(
                    outcome=EvalOutcome.DETECTED,
                    evidence=[
                        f"Pattern found on turn(s): {_turn_numbers(turns, matches, wanted=True)}"
                    ],
                    rationale="At least one response contains the target pattern",
                )
            return EvalResult(
                outcome=EvalOutcome.NOT_DETECTED,
                rationale="No response contains the target pattern",
            )
        if all(matches):
            return EvalResult(
                outcome=EvalOutcome.DETECTED,
                evidence=[
                    f"Pattern found on turn(s): {_turn_numbers(turns, matches, wanted=True)}"
                ],
                rationale="Every response contains the target pattern",
            )
        return EvalResult(
            outcome=EvalOutcome.NOT_DETECTED,
            evidence=[f"Pattern missing on turn(s): {_turn_numbers(turns, matches, wanted=False)}"],
            rationale="Not every response contains the target pattern",
        )

    def _current_turn(self, turn: Turn) -> EvalResult:
        if self._matches(turn.response.text):
            return EvalResult(
                outcome=EvalOutcome.DETECTED,
                evidence=[f"Pattern found on turn(s): {turn.turn_number}"],
                rationale="Response contains target pattern",
            )
        return EvalResult(
            outcome=EvalOutcome.NOT_DETECTED,
            rationale="Target pattern not found in response text",
        )
