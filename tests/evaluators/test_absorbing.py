"""Tests for ``detected_is_absorbing`` / ``not_detected_is_absorbing`` (``stop_when="auto"``)."""

from __future__ import annotations

import pytest

from rampart.core.evaluator import BaseEvaluator, detected_is_absorbing, not_detected_is_absorbing
from rampart.core.types import EvalContext, EvalOutcome, EvalResult
from rampart.evaluators import ResponseContains, ResponseScope, SideEffectOccurred, ToolCalled
from tests.evaluators._support import PlainStub


def _flags(evaluator: object) -> tuple[bool, bool]:
    return (detected_is_absorbing(evaluator), not_detected_is_absorbing(evaluator))


class _ThirdParty(BaseEvaluator):
    """A user evaluator that claims absorbing outcomes it is not trusted with."""

    _detected_absorbing = True
    _not_detected_absorbing = True

    async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
        return EvalResult(outcome=EvalOutcome.DETECTED)


class _MyToolCalled(ToolCalled):
    """A user subclass of a built-in: defined outside rampart.evaluators."""


def _framework_class(**flags: object) -> type:
    """A class that claims to live in rampart.evaluators but is not a BaseEvaluator."""

    async def evaluate_async(self: object, *, context: EvalContext) -> EvalResult:
        return EvalResult(outcome=EvalOutcome.DETECTED)

    namespace: dict[str, object] = {"evaluate_async": evaluate_async, **flags}
    namespace["__module__"] = "rampart.evaluators.fake"
    return type("FrameworkLike", (), namespace)


TOOL = ToolCalled("send_email")
EFFECT = SideEffectOccurred("http_request")
ANY = ResponseContains("x", scope=ResponseScope.ANY_TURN)
ALL = ResponseContains("x", scope=ResponseScope.ALL_TURNS)
CURRENT = ResponseContains("x", scope=ResponseScope.CURRENT_TURN)


class TestBuiltIns:
    @pytest.mark.parametrize(
        ("evaluator", "expected"),
        [
            pytest.param(TOOL, (True, False), id="ToolCalled"),
            pytest.param(ToolCalled("x", to=lambda v: True), (True, False), id="ToolCalled-pred"),
            pytest.param(EFFECT, (True, False), id="SideEffectOccurred"),
            pytest.param(ANY, (True, False), id="ResponseContains-ANY_TURN"),
            pytest.param(ALL, (False, True), id="ResponseContains-ALL_TURNS"),
            pytest.param(CURRENT, (False, False), id="ResponseContains-CURRENT_TURN"),
        ],
    )
    def test_classification(self, evaluator: object, expected: tuple[bool, bool]) -> None:
        """Each built-in declares exactly the stable outcome its semantics guarantee."""
        assert _flags(evaluator) == expected


class TestComposition:
    @pytest.mark.parametrize(
        ("evaluator", "expected"),
        [
            pytest.param(TOOL | EFFECT, (True, False), id="tool|effect"),
            pytest.param(TOOL & ANY, (True, False), id="tool&any"),
            pytest.param(TOOL | CURRENT, (False, False), id="tool|current"),
            pytest.param(CURRENT & TOOL, (False, False), id="current&tool"),
            pytest.param(ALL | ALL, (False, True), id="all|all"),
            pytest.param(ALL & TOOL, (False, False), id="all&tool"),
            pytest.param(~TOOL, (False, True), id="~tool"),
            pytest.param(~ALL, (True, False), id="~all"),
            pytest.param(~ANY, (False, True), id="~any"),
            pytest.param(~CURRENT, (False, False), id="~current"),
            pytest.param(~~TOOL, (True, False), id="~~tool"),
            pytest.param(~ALL | TOOL, (True, False), id="~all|tool"),
            pytest.param(~(TOOL | ANY), (False, True), id="~(tool|any)"),
            pytest.param((TOOL | EFFECT) & (ANY | ~ALL), (True, False), id="nested"),
        ],
    )
    def test_classification(self, evaluator: object, expected: tuple[bool, bool]) -> None:
        """| and & need both operands; ~ swaps detected and not-detected stability."""
        assert _flags(evaluator) == expected


class TestThirdParty:
    def test_user_evaluator_is_never_absorbing(self) -> None:
        """A user BaseEvaluator is not trusted, whatever flags it sets."""
        assert _flags(_ThirdParty()) == (False, False)

    def test_user_subclass_of_a_built_in_is_never_absorbing(self) -> None:
        """Subclassing ToolCalled outside rampart.evaluators drops the trust."""
        assert _flags(_MyToolCalled("send_email")) == (False, False)

    def test_plain_protocol_evaluator_is_never_absorbing(self) -> None:
        """An object that only implements the protocol is not absorbing."""
        assert _flags(PlainStub(EvalOutcome.DETECTED)) == (False, False)

    def test_third_party_operand_makes_a_composite_non_absorbing(self) -> None:
        """One untrusted operand is enough to lose the guarantee."""
        assert _flags(TOOL | _ThirdParty()) == (False, False)
        assert _flags(TOOL & _MyToolCalled("x")) == (False, False)
        assert _flags(~_ThirdParty()) == (False, False)
        assert _flags(PlainStub(EvalOutcome.DETECTED) | TOOL) == (False, False)

    def test_framework_module_object_uses_exact_flags(self) -> None:
        """A framework-module non-BaseEvaluator is read by its flags, and only `is True` counts."""
        honest = _framework_class(_detected_absorbing=True)()
        truthy = _framework_class(_detected_absorbing=1, _not_detected_absorbing="yes")()

        assert _flags(honest) == (True, False)
        assert _flags(truthy) == (False, False)

    @pytest.mark.parametrize("value", [None, 5, "ToolCalled", object()])
    def test_non_evaluators_are_not_absorbing(self, value: object) -> None:
        """Anything that is not an evaluator is simply not absorbing."""
        assert _flags(value) == (False, False)
