"""``LLMJudge``: an evaluator that asks a language model whether the objective was met.

One call per evaluation (stateless, reusable, safe to share across concurrent trials):
the system prompt carries the persona, the objective, the agent's declared
capabilities, the scoring rubric and the hardening section
(``rampart.evaluators._judge_prompt``); the user message is the transcript. The reply
must be a JSON verdict.

What can go wrong, and what it gives:

* the reply is empty, holds no JSON object or more than one, repeats a key, or is
  not a valid verdict (``parse_answer``, the one strict reply parser): asked again,
  up to ``max_attempts`` calls in all; then UNDETERMINED with confidence 0.0 and a
  rationale saying why;
* the judge endpoint is still rate limited after the limiter's retries
  (``RateLimitedError``): UNDETERMINED, confidence 0.0 (never SAFE, never a crash);
* any other failure of the judge's infrastructure (an HTTP error, a timeout, a
  malformed HTTP body, a missing credential): ``EvaluatorError``, which the execution
  boundary turns into an ERROR result.

Each UNDETERMINED-for-failure is logged on the ``rampart.llm`` logger (warning).

The verdict's rationale and evidence are redacted (``rampart.redact``) and made
terminal-safe before they reach the ``EvalResult``: they are model output, and they
end up in ``Result.summary``, which user assertions print.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from rampart._checks import check_instance, check_int, check_optional_instance, check_text
from rampart._redact import redact
from rampart._text import terminal_safe
from rampart.core.errors import EvaluatorError, InfrastructureError
from rampart.core.evaluator import BaseEvaluator
from rampart.core.persona import Persona
from rampart.core.types import EvalOutcome, EvalResult
from rampart.evaluators._judge_prompt import (
    InvalidAnswer,
    parse_answer,
    system_prompt,
    user_message,
)
from rampart.evaluators._scope import TranscriptScope
from rampart.evaluators.personas import NEUTRAL_EVALUATOR
from rampart.limits import RateLimitedError
from rampart.llm import LLMClient, as_client

if TYPE_CHECKING:
    from rampart.core.llm import LLMConfig
    from rampart.core.types import EvalContext

__all__ = ["LLMJudge"]

_LOGGER = logging.getLogger("rampart.llm")
_OWNER = "LLMJudge"


def _clean(text: str) -> str:
    """Judge-written text as a result may carry it: redacted and terminal-safe, so that
    ``assert result, result.summary`` can neither leak a key the model echoed nor let
    it write escape sequences or bidi overrides to a terminal."""
    return redact(terminal_safe(text))


def _undetermined(reason: str) -> EvalResult:
    reason = _clean(reason)  # it is logged and becomes the rationale
    _LOGGER.warning("LLMJudge: %s; the evaluation is UNDETERMINED", reason)
    return EvalResult(outcome=EvalOutcome.UNDETERMINED, confidence=0.0, rationale=reason)


class LLMJudge(BaseEvaluator):
    """Asks a model whether ``objective`` happened in the transcript (DETECTED or not).

    ``llm`` is an ``LLMConfig`` (its shared ``LLMClient``) or an ``LLMClient`` (to set
    rate limits, a budget shared with the agent, a cache). ``persona`` defaults to
    ``NEUTRAL_EVALUATOR``; ``scope`` to the full transcript
    (``TranscriptScope.CURRENT_TURN``: the latest turn only). ``max_attempts`` bounds
    the calls made to get a valid JSON verdict.

    Composes with ``|``, ``&``, ``~``; works as the verdict evaluator and as
    ``stop_when=``. Its detections are not treated as permanent, so
    ``stop_when="auto"`` never stops on it; pass it as ``stop_when=`` explicitly.
    """

    def __init__(
        self,
        *,
        objective: str,
        llm: LLMConfig | LLMClient,
        persona: Persona | None = None,
        scope: TranscriptScope = TranscriptScope.FULL,
        max_attempts: int = 3,
    ) -> None:
        self._objective = check_text(_OWNER, "objective", objective)
        self._client = as_client(llm, owner=_OWNER)
        persona = check_optional_instance(_OWNER, "persona", persona, Persona, expected="a Persona")
        self._persona = NEUTRAL_EVALUATOR if persona is None else persona
        self._scope = check_instance(
            _OWNER, "scope", scope, TranscriptScope, expected="a TranscriptScope"
        )
        self._max_attempts = check_int(_OWNER, "max_attempts", max_attempts, minimum=1)

    @property
    def objective(self) -> str:
        return self._objective

    @property
    def persona(self) -> Persona:
        return self._persona

    @property
    def scope(self) -> TranscriptScope:
        return self._scope

    @property
    def client(self) -> LLMClient:
        """The client every judge call goes through."""
        return self._client

    def __repr__(self) -> str:
        return (
            f"LLMJudge(objective={self._objective!r}, model={self._client.model!r}, "
            f"persona={self._persona.name!r}, scope={self._scope.value!r})"
        )

    def messages(self, context: EvalContext) -> list[dict[str, str]]:
        """The chat messages this judge sends for ``context`` (for inspection)."""
        return [
            {
                "role": "system",
                "content": system_prompt(
                    persona=self._persona, objective=self._objective, manifest=context.manifest
                ),
            },
            {"role": "user", "content": user_message(list(context.turns), self._scope)},
        ]

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        messages = self.messages(context)
        problem = ""
        for attempt in range(self._max_attempts):
            try:
                completion = await self._client.complete(
                    messages, json_object=True, tag=f"judge-attempt-{attempt}"
                )
            except RateLimitedError as error:
                return _undetermined(f"the judge model stayed rate limited ({error})")
            except (InfrastructureError, OSError, TimeoutError) as error:
                raise EvaluatorError(f"{_OWNER}: the judge model call failed: {error}") from error
            try:
                answer = parse_answer(completion.text)
            except InvalidAnswer as error:
                problem = str(error)
                continue
            return EvalResult(
                outcome=answer.outcome,
                confidence=answer.confidence,
                evidence=[_clean(item) for item in answer.evidence],
                rationale=_clean(answer.rationale),
            )
        return _undetermined(
            f"no valid verdict from the judge model after {self._max_attempts} "
            f"attempt{'s' if self._max_attempts != 1 else ''} ({problem})"
        )
