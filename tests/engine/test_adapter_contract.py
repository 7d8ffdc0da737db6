from __future__ import annotations

from typing import Any

import pytest

from rampart.attacks import Attacks
from rampart.core.result import SafetyStatus
from rampart.core.types import EvalOutcome, ObservabilityLevel, Request, Response
from rampart.probes import Probes
from tests._builders import replying_agent
from tests._doubles import FakeEvaluator, FakeHandle

pytestmark = pytest.mark.anyio


class _GoodSession:
    def __init__(self) -> None:
        self.exits = 0

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.exits += 1

    async def send_async(self, request: Request) -> Any:
        return Response(text="fine")


class _Adapter:
    """An adapter whose parts can each be replaced by a broken one."""

    manifest = None
    observability_profile: Any = ObservabilityLevel.TOOL_ONLY

    def __init__(self, session: Any = None) -> None:
        self.session = session if session is not None else _GoodSession()

    async def create_session_async(self) -> Any:
        return self.session


class _NoFactory:
    manifest = None
    observability_profile = ObservabilityLevel.TOOL_ONLY


class _SyncFactory(_Adapter):
    def create_session_async(self) -> Any:  # type: ignore[override]
        return self.session


class _DictSession(_Adapter):
    async def create_session_async(self) -> Any:
        return {"send_async": None}


class _PlainSession:
    async def send_async(self, request: Request) -> Response:
        return Response(text="x")


class _DictReply(_GoodSession):
    async def send_async(self, request: Request) -> Any:
        return {"text": "hello"}


class _SyncSend(_GoodSession):
    def send_async(self, request: Request) -> Any:  # type: ignore[override]
        return Response(text="x")


class _NoneEnter(_GoodSession):
    async def __aenter__(self) -> Any:
        return None


class _SyncEnter(_GoodSession):
    def __aenter__(self) -> Any:  # type: ignore[override]
        return self


class _SyncExit(_GoodSession):
    def __aexit__(self, *exc_info: object) -> None:  # type: ignore[override]
        self.exits += 1


class _StrLevel(_Adapter):
    observability_profile = "tool_only"


class _NoLevel:
    manifest = None

    async def create_session_async(self) -> Any:
        return _GoodSession()


class _BadManifest(_Adapter):
    manifest = {"name": "agent"}


CASES = [
    pytest.param(_NoFactory(), "adapter _NoFactory has no create_session_async()", id="no-factory"),
    pytest.param(
        _SyncFactory(),
        "adapter.create_session_async returned _GoodSession, which is not awaitable",
        id="sync-factory",
    ),
    pytest.param(
        _DictSession(),
        "adapter.create_session_async returned dict, expected rampart.Session",
        id="dict-session",
    ),
    pytest.param(
        _Adapter(_PlainSession()), "missing __aenter__, __aexit__", id="not-a-context-manager"
    ),
    pytest.param(
        _Adapter(_DictReply()),
        "adapter.send_async returned dict, expected rampart.Response",
        id="dict-reply",
    ),
    pytest.param(
        _Adapter(_SyncSend()),
        "adapter.send_async returned Response, which is not awaitable",
        id="sync-send",
    ),
    pytest.param(
        _Adapter(_NoneEnter()), "_NoneEnter.__aenter__ returned None", id="enter-returns-none"
    ),
    pytest.param(
        _Adapter(_SyncEnter()),
        "_SyncEnter.__aenter__ returned _SyncEnter, which is not awaitable",
        id="sync-enter",
    ),
    pytest.param(
        _Adapter(_SyncExit()),
        "_SyncExit.__aexit__ returned NoneType, which is not awaitable",
        id="sync-exit",
    ),
    pytest.param(
        _StrLevel(),
        "adapter.observability_profile returned str, expected rampart.ObservabilityLevel",
        id="str-level",
    ),
    pytest.param(_NoLevel(), "adapter _NoLevel has no observability_profile", id="no-level"),
    pytest.param(
        _BadManifest(),
        "adapter.manifest returned dict, expected rampart.AppManifest",
        id="manifest",
    ),
    pytest.param(None, "adapter NoneType has no", id="none"),
]


class TestMisimplementedAdapters:
    @pytest.mark.parametrize(("adapter", "message"), CASES)
    async def test_probe_reports_contract_error(self, adapter: Any, message: str) -> None:
        """A broken adapter gives an ERROR result saying what is wrong, not a traceback.

        (The probe's evaluator finds the expected behaviour: a trace judged UNSAFE
        before a failing close would be kept as UNSAFE, test_failed_runs.py.)"""
        result = await Probes.behavior(
            prompt="hi", evaluator=FakeEvaluator([EvalOutcome.DETECTED])
        ).execute_async(adapter=adapter)
        assert result.status is SafetyStatus.ERROR
        assert result.summary.startswith("AdapterContractError: ")
        assert message in result.summary
        assert result.metadata["error_type"] == "AdapterContractError"

    @pytest.mark.parametrize(("adapter", "message"), CASES)
    async def test_xpia_reports_contract_error_and_cleans_up(
        self, adapter: Any, message: str
    ) -> None:
        """The same for XPIA, and its injections are never left behind."""
        handle = FakeHandle()
        execution = Attacks.xpia(inject=handle, trigger="hi", evaluator=FakeEvaluator())
        result = await execution.execute_async(adapter=adapter)
        assert result.status is SafetyStatus.ERROR
        assert message in result.summary
        assert handle.removed == handle.activated

    async def test_bad_enter_still_closes_session(self) -> None:
        """A session whose __aenter__ breaks the contract is still exited."""
        session = _NoneEnter()
        await Probes.behavior(prompt="hi", evaluator=FakeEvaluator()).execute_async(
            adapter=_Adapter(session)  # type: ignore[arg-type]
        )
        assert session.exits == 1

    async def test_good_adapter_passes(self) -> None:
        """The reference adapter used above satisfies every check."""
        result = await Probes.behavior(prompt="hi", evaluator=FakeEvaluator()).execute_async(
            adapter=_Adapter()  # type: ignore[arg-type]
        )
        assert result.status is SafetyStatus.UNSAFE  # NOT_DETECTED under probe polarity
        assert result.observability_level is ObservabilityLevel.TOOL_ONLY

    async def test_session_entered_value_other_than_self(self) -> None:
        """A session may hand out another session object from __aenter__."""
        inner = _GoodSession()

        class Wrapper(_GoodSession):
            async def __aenter__(self) -> Any:
                return inner

            async def send_async(self, request: Request) -> Any:
                raise AssertionError("the entered session is the one used")

        result = await Probes.behavior(prompt="hi", evaluator=FakeEvaluator()).execute_async(
            adapter=_Adapter(Wrapper())  # type: ignore[arg-type]
        )
        assert result.turns[0].response.text == "fine"

    async def test_scripted_agent_is_well_formed(self) -> None:
        """The public test double, rampart.testing.ScriptedAgent, passes the checks."""
        result = await Probes.behavior(prompt="hi", evaluator=FakeEvaluator()).execute_async(
            adapter=replying_agent()
        )
        assert result.status is SafetyStatus.UNSAFE
        assert result.turns[0].response.text == "reply 0"
