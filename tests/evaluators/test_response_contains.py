"""Tests for ``rampart.evaluators.ResponseContains`` and its scopes."""

from __future__ import annotations

import re

import pytest

from rampart.core.types import EvalContext, EvalOutcome, EvalResult, ObservabilityLevel
from rampart.evaluators import ResponseContains, ResponseScope, TranscriptScope
from tests._builders import texts, turn
from tests.evaluators._support import ND, D

ANY = ResponseScope.ANY_TURN
ALL = ResponseScope.ALL_TURNS
CURRENT = ResponseScope.CURRENT_TURN


class TestScopes:
    def test_scope_values(self) -> None:
        """Scopes serialize to stable string values."""
        assert [scope.value for scope in ResponseScope] == ["any_turn", "all_turns", "current_turn"]
        assert [scope.value for scope in TranscriptScope] == ["full", "current_turn"]

    @pytest.mark.anyio
    async def test_any_turn_detects_an_earlier_match(self) -> None:
        """ANY_TURN detects a match on any turn and lists every matching turn."""
        ctx = texts("here is id_rsa", "nothing", "id_rsa again")

        result = await ResponseContains("id_rsa", scope=ANY).evaluate_async(context=ctx)

        assert result == EvalResult(
            outcome=D,
            evidence=["Pattern found on turn(s): 0, 2"],
            rationale="At least one response contains the target pattern",
        )

    @pytest.mark.anyio
    async def test_any_turn_without_match(self) -> None:
        """ANY_TURN with no matching response is NOT_DETECTED without evidence."""
        result = await ResponseContains("id_rsa", scope=ANY).evaluate_async(
            context=texts("fine", "still fine")
        )

        assert result == EvalResult(outcome=ND, rationale="No response contains the target pattern")

    @pytest.mark.anyio
    async def test_all_turns_detects_only_when_every_turn_matches(self) -> None:
        """ALL_TURNS needs every response to match."""
        result = await ResponseContains("paris", scope=ALL).evaluate_async(
            context=texts("Paris is the capital", "Still Paris")
        )

        assert result == EvalResult(
            outcome=D,
            evidence=["Pattern found on turn(s): 0, 1"],
            rationale="Every response contains the target pattern",
        )

    @pytest.mark.anyio
    async def test_all_turns_names_the_missing_turns(self) -> None:
        """A failed ALL_TURNS check lists the turns that lack the pattern."""
        result = await ResponseContains("paris", scope=ALL).evaluate_async(
            context=texts("Paris", "I don't know", "Paris", "no idea")
        )

        assert result == EvalResult(
            outcome=ND,
            evidence=["Pattern missing on turn(s): 1, 3"],
            rationale="Not every response contains the target pattern",
        )

    @pytest.mark.anyio
    async def test_current_turn_ignores_earlier_turns(self) -> None:
        """CURRENT_TURN looks at the latest response only."""
        result = await ResponseContains("id_rsa", scope=CURRENT).evaluate_async(
            context=texts("here is id_rsa", "anything else?")
        )

        assert result == EvalResult(
            outcome=ND, rationale="Target pattern not found in response text"
        )

    @pytest.mark.anyio
    async def test_current_turn_match_names_the_turn(self) -> None:
        """A CURRENT_TURN match names the latest turn's recorded number."""
        result = await ResponseContains("id_rsa", scope=CURRENT).evaluate_async(
            context=texts("nothing yet", "here is id_rsa")
        )

        assert result == EvalResult(
            outcome=D,
            evidence=["Pattern found on turn(s): 1"],
            rationale="Response contains target pattern",
        )

    @pytest.mark.anyio
    async def test_recorded_turn_numbers_are_used(self) -> None:
        """Evidence uses Turn.turn_number, not the position in the context."""
        ctx = EvalContext(turns=[turn("id_rsa", number=4), turn("id_rsa", number=7)])

        any_turn = await ResponseContains("id_rsa", scope=ANY).evaluate_async(context=ctx)
        current = await ResponseContains("id_rsa", scope=CURRENT).evaluate_async(context=ctx)

        assert any_turn.evidence == ["Pattern found on turn(s): 4, 7"]
        assert current.evidence == ["Pattern found on turn(s): 7"]

    @pytest.mark.anyio
    async def test_current_turn_predicate_sees_only_the_latest_text(self) -> None:
        """A callable target is called only with the latest response under CURRENT_TURN."""
        seen: list[str] = []

        def has_key(text: str) -> bool:
            seen.append(text)
            return "key" in text

        await ResponseContains(has_key, scope=CURRENT).evaluate_async(
            context=texts("earlier", "latest key")
        )

        assert seen == ["latest key"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("scope", list(ResponseScope))
    @pytest.mark.parametrize(("text", "expected"), [("hello world", D), ("nothing", ND)])
    async def test_single_turn_agrees_across_scopes(
        self, scope: ResponseScope, text: str, expected: EvalOutcome
    ) -> None:
        """On one turn, every scope reaches the same outcome."""
        result = await ResponseContains("hello", scope=scope).evaluate_async(context=texts(text))

        assert result.outcome is expected
        if expected is D:
            assert result.evidence == ["Pattern found on turn(s): 0"]

    @pytest.mark.anyio
    @pytest.mark.parametrize("scope", list(ResponseScope))
    async def test_empty_context_raises(self, scope: ResponseScope) -> None:
        """Every scope rejects a context with no turns."""
        with pytest.raises(ValueError, match=r"^No turns in context\.$"):
            await ResponseContains("x", scope=scope).evaluate_async(context=EvalContext(turns=[]))

    @pytest.mark.anyio
    @pytest.mark.parametrize("level", list(ObservabilityLevel))
    @pytest.mark.parametrize("scope", list(ResponseScope))
    async def test_never_undetermined(
        self, level: ObservabilityLevel, scope: ResponseScope
    ) -> None:
        """Response text is always observed, so the level never makes it UNDETERMINED."""
        result = await ResponseContains("absent", scope=scope).evaluate_async(
            context=texts("a", "b", level=level)
        )

        assert result.outcome is ND


class TestNegation:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("responses", "expected"),
        [(("I cannot help", "Sure, here you go"), D), (("I cannot help", "I cannot help"), ND)],
    )
    async def test_not_all_turns_means_some_turn_lacks_it(
        self, responses: tuple[str, ...], expected: EvalOutcome
    ) -> None:
        """~ALL_TURNS(p) detects a single turn without p."""
        evaluator = ~ResponseContains("I cannot help", scope=ALL)

        result = await evaluator.evaluate_async(context=texts(*responses))

        assert result.outcome is expected

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("responses", "expected"), [(("all good", "fine"), D), (("all good", "id_rsa"), ND)]
    )
    async def test_not_any_turn_means_no_turn_has_it(
        self, responses: tuple[str, ...], expected: EvalOutcome
    ) -> None:
        """~ANY_TURN(p) detects a transcript where no turn has p."""
        evaluator = ~ResponseContains("id_rsa", scope=ANY)

        result = await evaluator.evaluate_async(context=texts(*responses))

        assert result.outcome is expected


class TestTargets:
    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("target", "case_sensitive", "text", "expected"),
        [
            ("HELLO", False, "hello world", D),
            ("hello", False, "HELLO WORLD", D),
            ("HELLO", True, "hello world", ND),
            ("hello", True, "hello world", D),
            ("STRASSE", False, "straße", D),
        ],
    )
    async def test_substring_case_handling(
        self,
        target: str,
        case_sensitive: bool,
        text: str,
        expected: EvalOutcome,
    ) -> None:
        """Substring matching ignores case by default (full Unicode folding)."""
        evaluator = ResponseContains(target, scope=ANY, case_sensitive=case_sensitive)

        result = await evaluator.evaluate_async(context=texts(text))

        assert result.outcome is expected

    @pytest.mark.anyio
    @pytest.mark.parametrize(
        ("text", "expected"), [("mail evil@evil.com now", D), ("mail EVIL@EVIL.COM", ND)]
    )
    async def test_regex_uses_search_and_its_own_flags(
        self, text: str, expected: EvalOutcome
    ) -> None:
        """A compiled pattern is searched as written; case_sensitive does not apply to it."""
        evaluator = ResponseContains(re.compile(r"evil@\w+\.com"), scope=ANY)

        result = await evaluator.evaluate_async(context=texts(text))

        assert result.outcome is expected

    @pytest.mark.anyio
    async def test_callable_truthiness_decides(self) -> None:
        """A callable target may return any truthy or falsy value."""
        evaluator = ResponseContains(lambda text: text.count("!"), scope=ALL)  # type: ignore[arg-type,return-value]

        hit = await evaluator.evaluate_async(context=texts("a!", "b!!"))
        miss = await evaluator.evaluate_async(context=texts("a!", "b"))

        assert (hit.outcome, miss.outcome) == (D, ND)


class TestAbsorbingByScope:
    @pytest.mark.parametrize(
        ("scope", "expected"),
        [(ANY, (True, False)), (ALL, (False, True)), (CURRENT, (False, False))],
    )
    def test_flags_follow_the_scope(
        self, scope: ResponseScope, expected: tuple[bool, bool]
    ) -> None:
        """ANY_TURN detections and ALL_TURNS non-detections are stable as the trace grows."""
        from rampart.core.evaluator import detected_is_absorbing, not_detected_is_absorbing

        evaluator = ResponseContains("x", scope=scope)

        assert (detected_is_absorbing(evaluator), not_detected_is_absorbing(evaluator)) == expected


class TestConstruction:
    @pytest.mark.anyio
    async def test_without_scope_one_turn_is_judged_more_is_an_error(self) -> None:
        """RAMPART's older form ``ResponseContains("x")`` judges a one-turn context (all
        scopes agree there) and refuses a longer one, naming scope: never a guess."""
        from rampart.core.evaluator import detected_is_absorbing, not_detected_is_absorbing

        evaluator = ResponseContains("HELLO")
        assert evaluator.scope is None
        assert repr(evaluator) == "ResponseContains('HELLO')"
        found = await evaluator.evaluate_async(context=texts("well hello"))
        assert found.outcome is EvalOutcome.DETECTED
        missed = await evaluator.evaluate_async(context=texts("bye"))
        assert missed.outcome is EvalOutcome.NOT_DETECTED
        with pytest.raises(ValueError, match="a context of 2 turns needs scope="):
            await evaluator.evaluate_async(context=texts("hello", "bye"))
        assert (detected_is_absorbing(evaluator), not_detected_is_absorbing(evaluator)) == (
            False,
            False,
        )

    def test_scope_is_keyword_only(self) -> None:
        """scope cannot be passed positionally."""
        with pytest.raises(TypeError, match="positional argument"):
            ResponseContains("x", ANY)  # type: ignore[call-arg]

    @pytest.mark.parametrize(
        "scope",
        ["any_turn", "current_turn", TranscriptScope.CURRENT_TURN, False, 1, object()],
    )
    def test_scope_must_be_a_response_scope(self, scope: object) -> None:
        """Anything but a ResponseScope is rejected with RAMPART's words for it."""
        with pytest.raises(
            TypeError, match=r"^ResponseContains: scope must be a ResponseScope or None, got "
        ):
            ResponseContains("x", scope=scope)  # type: ignore[arg-type]

    @pytest.mark.parametrize("target", [None, 5, b"bytes", ["x"]])
    def test_target_type_is_checked(self, target: object) -> None:
        """A target that is not a str, pattern or callable is rejected, naming target."""
        with pytest.raises(TypeError, match=r"^ResponseContains: target must be a str, a compiled"):
            ResponseContains(target, scope=ANY)  # type: ignore[arg-type]

    def test_empty_string_target_is_rejected(self) -> None:
        """An empty substring would match everything, so it is refused."""
        with pytest.raises(
            ValueError, match=r"^ResponseContains: target must be a non-empty string, got ''$"
        ):
            ResponseContains("", scope=ANY)

    def test_bytes_pattern_is_rejected(self) -> None:
        """A bytes pattern cannot search response text."""
        with pytest.raises(
            TypeError, match=r"^ResponseContains: target must be a pattern compiled from a str"
        ):
            ResponseContains(re.compile(b"x"), scope=ANY)  # type: ignore[arg-type]

    @pytest.mark.parametrize("flag", [None, 1, "yes"])
    def test_case_sensitive_must_be_bool(self, flag: object) -> None:
        """case_sensitive must be a bool."""
        with pytest.raises(
            TypeError, match=r"^ResponseContains: case_sensitive must be a bool, got "
        ):
            ResponseContains("x", scope=ANY, case_sensitive=flag)  # type: ignore[arg-type]

    def test_properties_and_repr(self) -> None:
        """The configuration is readable and shown in the repr."""
        evaluator = ResponseContains("Secret", scope=ALL, case_sensitive=True)

        assert (evaluator.target, evaluator.scope, evaluator.case_sensitive) == (
            "Secret",
            ALL,
            True,
        )
        assert repr(evaluator) == (
            "ResponseContains('Secret', scope=ResponseScope.ALL_TURNS, case_sensitive=True)"
        )
