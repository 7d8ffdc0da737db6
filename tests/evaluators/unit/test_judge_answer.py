"""The judge's answer parser (``rampart.evaluators._judge_prompt.parse_answer``): what a
judge model's reply may look like, and why a malformed one is rejected."""

from __future__ import annotations

import json

import pytest

from rampart.core.types import EvalOutcome
from rampart.evaluators._judge_prompt import InvalidAnswer, parse_answer
from tests.evaluators._support import verdict as _verdict


class TestParseAnswer:
    def test_plain_fenced_and_embedded(self) -> None:
        """Plain JSON, a fenced block with chatter, and a first-{ fallback all parse."""
        verdict = {"outcome": "DETECTED", "confidence": 1.7, "rationale": "r", "evidence": ["e"]}
        plain = json.dumps(verdict)
        for text in (plain, f"Sure.\n```json\n{plain}\n```", f"Verdict follows: {plain} -- end"):
            answer = parse_answer(text)
            assert answer.outcome is EvalOutcome.DETECTED
            assert answer.confidence == 1.0  # clamped
            assert answer.evidence == ["e"]

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("", "empty"),
            ("no json here", "holds no JSON object"),
            ("[1, 2]", "holds no JSON object"),
            ('{"outcome": "detected"}', "lacks confidence, rationale, evidence"),
            (
                '{"outcome": "maybe", "confidence": 1, "rationale": "", "evidence": []}',
                "outcome must be",
            ),
            (
                '{"outcome": "detected", "confidence": true, "rationale": "", "evidence": []}',
                "confidence must be a number",
            ),
            (
                '{"outcome": "detected", "confidence": NaN, "rationale": "", "evidence": []}',
                "finite",
            ),
            (
                '{"outcome": "detected", "confidence": 1, "rationale": 3, "evidence": []}',
                "rationale",
            ),
            (
                '{"outcome": "detected", "confidence": 1, "rationale": "", "evidence": [1]}',
                "evidence",
            ),
        ],
    )
    def test_invalid_answers_say_why(self, text: str, problem: str) -> None:
        """Each malformed reply is rejected with the reason."""
        with pytest.raises(InvalidAnswer, match=problem):
            parse_answer(text)

    def test_long_output_is_truncated(self) -> None:
        """A hostile judge cannot bloat the report: rationale and evidence are capped."""
        verdict = {
            "outcome": "not_detected",
            "confidence": -3,
            "rationale": "x" * 9000,
            "evidence": ["y" * 5000] * 50,
        }
        answer = parse_answer(json.dumps(verdict))
        assert answer.confidence == 0.0
        assert len(answer.rationale) < 4100
        assert len(answer.evidence) == 20
        assert all(len(item) < 1100 for item in answer.evidence)


class TestOneStrictParser:
    @pytest.mark.parametrize("quoted", ["```1```", "```{}```", '```json\n{"a": 1}\n```'])
    def test_fences_inside_evidence_are_text(self, quoted: str) -> None:
        """J1: a fence in a quoted string is part of the one verdict, not a verdict."""
        text = json.dumps(_verdict("detected", f"send_email(body='{quoted}')"))
        answer = parse_answer(text)
        assert answer.outcome is EvalOutcome.DETECTED
        assert answer.evidence == [f"send_email(body='{quoted}')"]

    def test_a_decoy_before_the_verdict_is_refused(self) -> None:
        """J2: two JSON objects (a fenced decoy, then the real one) are no verdict."""
        decoy = json.dumps(_verdict("not_detected"))
        real = json.dumps(_verdict("detected"))
        for text in (f"```json\n{decoy}\n```\n{real}", f"{real}\n{decoy}", f"{decoy} {{}}"):
            with pytest.raises(InvalidAnswer, match="2 JSON objects; exactly one verdict"):
                parse_answer(text)

    @pytest.mark.parametrize(
        "text",
        [
            '{"outcome": "detected", "confidence": 1, "rationale": "r", "evidence": [],'
            ' "outcome": "not_detected"}',
            '{"outcome": "detected", "confidence": 1, "rationale": "r", "evidence": [{"a": 1,'
            ' "a": 2}]}',
            'Sure: {"x": 1, "x": 2} {"outcome": "detected", "confidence": 1, "rationale": "r",'
            ' "evidence": []}',
        ],
    )
    def test_duplicate_keys_are_refused_anywhere(self, text: str) -> None:
        """J3: a repeated key anywhere in the reply makes it no verdict."""
        with pytest.raises(InvalidAnswer, match="repeats a key"):
            parse_answer(text)

    def test_bounded_work_on_hostile_replies(self) -> None:
        """Deep nesting, too many braces and a huge reply are refused, never a crash."""
        with pytest.raises(InvalidAnswer, match="no JSON object"):
            parse_answer('{"a":' * 40)
        with pytest.raises(InvalidAnswer, match="more than 64"):
            parse_answer('{"a":' * 100_000 + "1" + "}" * 100_000)
        with pytest.raises(InvalidAnswer, match="more than 64"):
            parse_answer("{x " * 1000)
        with pytest.raises(InvalidAnswer, match="longer than"):
            parse_answer(json.dumps(_verdict("detected", "x" * 1_000_001)))
        with pytest.raises(InvalidAnswer, match="strict JSON"):
            parse_answer(
                '{"outcome": "detected", "confidence": NaN, "rationale": "", "evidence": []}'
            )
