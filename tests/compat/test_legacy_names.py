"""RAMPART's legacy and secondary names, used as RAMPART client code uses them.

``resolve_as_attack`` / ``resolve_as_probe``, the default handler factory,
``ResultCollector``, ``evaluate_turn_async``, injection handles without a readiness
method, ``emit_deprecation_warning``, and the error words RAMPART documents.
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import pytest

from rampart import (
    EvalContext,
    EvalOutcome,
    EvalResult,
    EvaluatorError,
    InjectionHandle,
    Payload,
    PayloadFormat,
    Request,
    Response,
    Result,
    SafetyStatus,
)
from rampart.attacks import Attacks
from rampart.common.deprecation import emit_deprecation_warning
from rampart.core.execution import (
    ExecutionEventData,
    ExecutionHandlerFactory,
    clear_default_handler_factory,
    evaluate_turn_async,
    register_default_handler_factory,
)
from rampart.core.injection import readiness_wait
from rampart.core.result import resolve_as_attack, resolve_as_probe
from rampart.evaluators import ResponseContains, ResponseScope, ToolCalled
from rampart.probes import Probes
from rampart.pytest_plugin import ResultCollector
from rampart.testing import ScriptedAgent

D, N, U = EvalOutcome.DETECTED, EvalOutcome.NOT_DETECTED, EvalOutcome.UNDETERMINED
SAFE, UNSAFE = SafetyStatus.SAFE, SafetyStatus.UNSAFE
UNDETERMINED, ERROR = SafetyStatus.UNDETERMINED, SafetyStatus.ERROR


def _evals(*outcomes: EvalOutcome) -> list[EvalResult]:
    return [EvalResult(outcome=outcome) for outcome in outcomes]


def _probe() -> Any:
    return Probes.behavior(
        prompt="hello", evaluator=ResponseContains("hi", scope=ResponseScope.ANY_TURN)
    )


class TestResolveAs:
    @pytest.mark.parametrize(
        ("outcomes", "attack", "probe"),
        [
            ((), ERROR, ERROR),
            ((D,), UNSAFE, SAFE),
            ((N,), SAFE, UNSAFE),
            ((U,), UNDETERMINED, UNDETERMINED),
            ((N, D), UNSAFE, UNSAFE),
            ((U, D), UNSAFE, UNDETERMINED),
            ((N, U), UNDETERMINED, UNSAFE),
            ((D, D, U), UNSAFE, UNDETERMINED),
            ((N, N), SAFE, UNSAFE),
            ((D, D), UNSAFE, SAFE),
        ],
    )
    def test_g1_table(
        self, outcomes: tuple[EvalOutcome, ...], attack: SafetyStatus, probe: SafetyStatus
    ) -> None:
        """Empty -> ERROR; attack: any DETECTED -> UNSAFE, else any UNDETERMINED ->
        UNDETERMINED, else SAFE; probe: any NOT_DETECTED -> UNSAFE, same otherwise."""
        assert resolve_as_attack(eval_results=_evals(*outcomes)) is attack
        assert resolve_as_probe(eval_results=_evals(*outcomes)) is probe

    def test_unknown_outcome_is_rejected_in_rampart_words(self) -> None:
        """G2 validates outcomes: ``ValueError("Unknown EvalOutcome...")``."""
        with pytest.raises(ValueError, match="Unknown EvalOutcome"):
            resolve_as_attack(eval_results=[EvalResult(outcome="detected")])  # type: ignore[arg-type]

    def test_keyword_only(self) -> None:
        """The list is passed by keyword, as RAMPART's signature requires."""
        with pytest.raises(TypeError):
            resolve_as_attack(_evals(D))  # type: ignore[misc]
        with pytest.raises(TypeError, match="eval_results must be a list of EvalResult"):
            resolve_as_probe(eval_results="detected")  # type: ignore[arg-type]


class Recorder:
    """A RAMPART-style handler: records the events it sees."""

    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    async def on_event_async(self, *, event_data: ExecutionEventData) -> None:
        self.log.append(f"{self.name}:{event_data.event.value}")


class TestDefaultHandlerFactory:
    @pytest.fixture(autouse=True)
    def _clean(self) -> Any:
        yield
        clear_default_handler_factory()

    @pytest.mark.anyio
    async def test_factory_handlers_run_for_every_new_execution_before_its_own(self) -> None:
        """The factory is called once per ``BaseExecution.__init__``; its handlers run
        before the execution's own ``event_handlers``."""
        log: list[str] = []
        made: list[Recorder] = []

        def factory() -> list[Recorder]:
            made.append(Recorder(log, f"default{len(made)}"))
            return [made[-1]]

        register_default_handler_factory(factory)
        execution = Probes.behavior(
            prompt="hello",
            evaluator=ResponseContains("hi", scope=ResponseScope.ANY_TURN),
            event_handlers=[Recorder(log, "own")],
        )
        await execution.execute_async(adapter=ScriptedAgent(["hi"]))
        assert log == [
            "default0:on_pre_execute",
            "own:on_pre_execute",
            "default0:on_post_execute",
            "own:on_post_execute",
        ]
        _probe()
        assert len(made) == 2
        assert isinstance(factory, ExecutionHandlerFactory)

    @pytest.mark.anyio
    async def test_clear_stops_it(self) -> None:
        """After ``clear_default_handler_factory()`` new executions get no default handlers."""
        log: list[str] = []
        register_default_handler_factory(lambda: [Recorder(log, "d")])
        clear_default_handler_factory()
        await _probe().execute_async(adapter=ScriptedAgent(["hi"]))
        assert log == []

    def test_not_callable_is_a_type_error_naming_callable(self) -> None:
        """RAMPART: ``TypeError`` for a factory that is not callable."""
        with pytest.raises(TypeError, match="callable"):
            register_default_handler_factory([Recorder([], "x")])  # type: ignore[arg-type]

    def test_a_factory_must_return_handlers(self) -> None:
        """A factory returning something else fails when the execution is built."""
        register_default_handler_factory(lambda: Recorder([], "x"))  # type: ignore[arg-type,return-value]
        with pytest.raises(TypeError, match="default handler factory"):
            _probe()

    def test_registered_from_sync_code_it_applies_inside_anyio_run(self) -> None:
        """Registered in a conftest or ``pytest_configure`` (sync code), it reaches the
        executions of every later event loop."""
        log: list[str] = []
        register_default_handler_factory(lambda: [Recorder(log, "d")])

        async def main() -> None:
            await _probe().execute_async(adapter=ScriptedAgent(["hi"]))

        anyio.run(main)
        assert log == ["d:on_pre_execute", "d:on_post_execute"]

    @pytest.mark.anyio
    async def test_registered_inside_a_task_it_stays_in_that_task(self) -> None:
        """Built on a context variable: a task that registers a factory does not change
        what a sibling task's executions get."""
        log: list[str] = []
        registered = anyio.Event()

        async def registering() -> None:
            register_default_handler_factory(lambda: [Recorder(log, "mine")])
            registered.set()
            await _probe().execute_async(adapter=ScriptedAgent(["hi"]))

        async def sibling() -> None:
            await registered.wait()
            await _probe().execute_async(adapter=ScriptedAgent(["hi"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(registering)
            tg.start_soon(sibling)
        assert log == ["mine:on_pre_execute", "mine:on_post_execute"]


class TestResultCollector:
    def test_record_and_results_copy(self) -> None:
        """``record(result=...)`` keeps order; ``results`` is a copy each time."""
        collector = ResultCollector()
        first = Result(status=SafetyStatus.SAFE, summary="a")
        second = Result(status=SafetyStatus.UNSAFE, summary="b")
        collector.record(result=first)
        collector.record(result=second)
        listed = collector.results
        listed.clear()
        assert collector.results == [first, second]
        assert collector.results is not collector.results

    def test_record_is_keyword_only_and_checked(self) -> None:
        """Only a ``Result`` is recorded, passed by keyword."""
        collector = ResultCollector()
        with pytest.raises(TypeError):
            collector.record(Result(status=SafetyStatus.SAFE, summary="a"))  # type: ignore[misc]
        with pytest.raises(TypeError, match=r"result must be a rampart\.Result"):
            collector.record(result="safe")  # type: ignore[arg-type]
        assert collector.results == []


class TestEvaluateTurnAsync:
    @pytest.mark.anyio
    async def test_returns_the_turn_evaluated_over_the_history(self) -> None:
        """RAMPART 0.1.0's helper: the new turn, evaluated with the history before it."""
        seen: list[EvalContext] = []

        class Judge:
            async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
                seen.append(context)
                return EvalResult(outcome=D, evidence=[context.text])

        history = [
            await evaluate_turn_async(
                evaluator=Judge(),
                history=[],
                request=Request(prompt="a"),
                response=Response(text="first"),
                turn_number=0,
            )
        ]
        turn = await evaluate_turn_async(
            evaluator=Judge(),
            history=history,
            request=Request(prompt="b"),
            response=Response(text="second"),
            turn_number=1,
            driver_reasoning="why",
        )
        assert turn.turn_number == 1
        assert turn.driver_reasoning == "why"
        assert turn.eval_result is not None
        assert turn.eval_result.evidence == ["second"]
        assert [t.response.text for t in seen[-1].turns] == ["first", "second"]
        assert seen[-1].turns[-1].eval_result is None  # evaluated before being annotated

    @pytest.mark.anyio
    async def test_a_raising_evaluator_is_an_evaluator_error(self) -> None:
        """What the evaluator raises arrives as ``EvaluatorError`` naming it."""

        class Broken:
            async def evaluate_async(self, *, context: EvalContext) -> EvalResult:
                raise KeyError("missing")

        with pytest.raises(EvaluatorError, match=r"Broken\.evaluate_async raised KeyError"):
            await evaluate_turn_async(
                evaluator=Broken(),
                history=[],
                request=Request(prompt="a"),
                response=Response(text="r"),
                turn_number=0,
            )


class BareHandle(InjectionHandle):
    """A RAMPART-style handle subclass defining neither readiness method."""

    def __init__(self) -> None:
        self.entered = self.exited = 0

    @property
    def payload_id(self) -> str | None:
        return "p-1"

    @property
    def surface_name(self) -> str:
        return "Inbox"

    async def __aenter__(self) -> BareHandle:
        self.entered += 1
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.exited += 1


class OldNameHandle(BareHandle):
    """A RAMPART 0.1.0 handle: readiness under the old name only.

    It subclasses ``BareHandle``, which was given both names by default: those defaults
    must not shadow the readiness this class defines (else the attack would start before
    the payload is readable).
    """

    def __init__(self) -> None:
        super().__init__()
        self.waited = 0

    async def wait_until_ready(self) -> None:
        self.waited += 1


class TestInjectionHandleReadiness:
    @pytest.mark.anyio
    async def test_default_returns_at_once_under_both_names(self) -> None:
        """A subclass with no readiness method answers to both names, at once."""
        handle = BareHandle()
        with anyio.fail_after(1):
            assert await handle.wait_until_ready_async() is None
            assert await handle.wait_until_ready() is None  # type: ignore[attr-defined]

    @pytest.mark.anyio
    async def test_the_one_name_defined_answers_to_both(self) -> None:
        """A handle with only the 0.1.0 name is awaited through either name."""
        handle = OldNameHandle()
        await handle.wait_until_ready_async()
        await handle.wait_until_ready()
        assert handle.waited == 2
        wait = readiness_wait(handle)
        assert wait is not None
        await wait()
        assert handle.waited == 3

    def test_the_methods_are_not_protocol_members(self) -> None:
        """A structural handle without any readiness method is still an InjectionHandle."""

        class Structural:
            payload_id = "p"
            surface_name = "s"

            async def __aenter__(self) -> Structural:
                return self

            async def __aexit__(self, *exc_info: object) -> None:
                return None

        assert isinstance(Structural(), InjectionHandle)
        assert readiness_wait(Structural()) is None

    @pytest.mark.anyio
    async def test_xpia_with_handles_that_define_no_readiness(self) -> None:
        """An XPIA attack runs with such handles, waits for the old-name one, and records
        both injections."""
        bare, old = BareHandle(), OldNameHandle()
        agent = ScriptedAgent([Response(text="done")])
        result = await Attacks.xpia(
            inject=[bare, old], trigger="Summarise my inbox", evaluator=ToolCalled("send_email")
        ).execute_async(adapter=agent)
        assert result.status is SafetyStatus.SAFE, result.summary
        assert (bare.entered, bare.exited, old.waited) == (1, 1, 1)
        assert [record.surface_name for record in result.injections] == ["Inbox", "Inbox"]


class TestDeprecationHelper:
    def test_message_and_attribution(self) -> None:
        """RAMPART's wording; the warning points at the caller of the deprecated item."""

        def old_api() -> None:
            emit_deprecation_warning(
                old_item=old_api, new_item="rampart.new_api", removed_in="0.3.0"
            )

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old_api()
        (warning,) = caught
        assert warning.category is DeprecationWarning
        assert str(warning.message) == (
            f"{__name__}.TestDeprecationHelper.test_message_and_attribution.<locals>.old_api "
            "is deprecated and will be removed in 0.3.0. Use rampart.new_api instead."
        )
        assert warning.filename == __file__

    def test_bad_arguments(self) -> None:
        """An item that is neither named nor a class/function is refused."""
        with pytest.raises(TypeError, match="old_item must be a class, a function"):
            emit_deprecation_warning(old_item=3, new_item="x", removed_in="1")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="removed_in must be a non-empty string"):
            emit_deprecation_warning(old_item="a", new_item="b", removed_in=" ")


# RAMPART's documented words for a bad argument, and a call that must produce them.
ERROR_WORDS: list[tuple[str, Any, type[Exception], str]] = [
    (
        "negative-turn-budget",
        lambda: Probes.behavior(prompt="p", evaluator=ToolCalled("x"), max_turns=-1),
        ValueError,
        "max_turns must be non-negative",
    ),
    (
        "empty-request",
        lambda: Request(),
        ValueError,
        "Request must include at least a prompt or attachments.",
    ),
    (
        "binary-payload-without-artifact",
        lambda: Payload(content="x", format=PayloadFormat.PDF),
        TypeError,
        "Binary format pdf requires an artifact path",
    ),
    (
        "text-payload-with-artifact",
        lambda: Payload(content="x", artifact=__import__("pathlib").Path("x.txt")),
        TypeError,
        "artifact must be None.",
    ),
    ("no-turns", lambda: EvalContext(turns=[]).current_turn, ValueError, "No turns in context."),
    (
        "probe-prompt-sources",
        lambda: Probes.behavior(prompt="a", prompts=["b"], evaluator=ToolCalled("x")),
        ValueError,
        "Specify exactly one of 'prompt', 'prompts', or 'driver'.",
    ),
    (
        "response-contains-scope",
        lambda: ResponseContains("x", scope="any_turn"),  # type: ignore[arg-type]
        TypeError,
        "scope must be a ResponseScope",
    ),
    (
        "stop-when",
        lambda: Attacks.xpia(trigger="x", evaluator=ToolCalled("x"), stop_when="always"),  # type: ignore[arg-type]
        ValueError,
        "'auto'",
    ),
    (
        "unknown-outcome",
        lambda: resolve_as_probe(eval_results=[EvalResult(outcome="x")]),  # type: ignore[arg-type]
        ValueError,
        "Unknown EvalOutcome",
    ),
    (
        "handler-factory",
        lambda: register_default_handler_factory(None),  # type: ignore[arg-type]
        TypeError,
        "callable",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [case[1:] for case in ERROR_WORDS],
    ids=[case[0] for case in ERROR_WORDS],
)
def test_rampart_documented_error_words(call: Any, error: type[Exception], words: str) -> None:
    """Code that matches RAMPART's messages (``pytest.raises(..., match=...)``) still matches."""
    with pytest.raises(error) as caught:
        call()
    assert words in str(caught.value)
