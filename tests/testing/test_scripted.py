from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest

from rampart.core.adapter import AgentAdapter, Session
from rampart.core.errors import InfrastructureError, RampartError
from rampart.core.manifest import AppManifest
from rampart.core.types import ObservabilityLevel, Request, Response, ToolCall
from rampart.testing import ScriptedAgent, ScriptedAgentStatistics, ScriptExhaustedError


async def _run(agent: ScriptedAgent, *prompts: str) -> list[Response]:
    session = await agent.create_session_async()
    async with session:
        return [await session.send_async(Request(prompt=prompt)) for prompt in prompts]


class TestReplay:
    @pytest.mark.anyio
    async def test_each_session_replays_the_script(self) -> None:
        """Every session answers from the first entry on, in order."""
        first = Response(text="one", tool_calls=[ToolCall(name="search")])
        agent = ScriptedAgent([first, "two"])
        for _ in range(2):
            replies = await _run(agent, "a", "b")
            assert replies[0] is first
            assert replies[1] == Response(text="two")
        assert agent.sessions_created == 2
        assert agent.sessions_closed == 2
        assert [request.prompt for request in agent.requests] == ["a", "b", "a", "b"]
        assert [request.prompt for request in agent.sessions[1].requests] == ["a", "b"]

    @pytest.mark.anyio
    async def test_exhaustion_is_a_clear_error(self) -> None:
        """A request beyond the script raises ScriptExhaustedError saying so."""
        agent = ScriptedAgent(["only"])
        with pytest.raises(ScriptExhaustedError, match=r"request #2 \(prompt='b'\).*only 1"):
            await _run(agent, "a", "b")
        assert issubclass(ScriptExhaustedError, RampartError)
        assert not issubclass(ScriptExhaustedError, InfrastructureError)
        assert agent.sessions_closed == 1

    @pytest.mark.anyio
    async def test_exception_entries_are_raised(self) -> None:
        """An exception in the script is raised (as a fresh copy) in every session."""
        scripted = InfrastructureError("agent down", transient=True)
        agent = ScriptedAgent(["fine", scripted])
        raised = []
        for _ in range(2):
            with pytest.raises(InfrastructureError, match="agent down") as caught:
                await _run(agent, "a", "b")
            raised.append(caught.value)
        assert raised[0] is not raised[1]
        assert scripted not in raised
        assert all(error.transient for error in raised)
        assert scripted.__traceback__ is None
        assert len(agent.requests) == 4

    @pytest.mark.anyio
    async def test_scripted_exception_keeps_its_cause(self) -> None:
        """The raised copy keeps the cause the scripted exception was raised from."""
        root = ConnectionRefusedError("connect failed")
        scripted = InfrastructureError("agent unreachable")
        scripted.__cause__ = root
        with pytest.raises(InfrastructureError) as caught:
            await _run(ScriptedAgent([scripted]), "a")
        assert caught.value is not scripted
        assert caught.value.__cause__ is root
        assert caught.value.__suppress_context__

    @pytest.mark.anyio
    async def test_step_entries_get_the_request(self) -> None:
        """A callable entry answers its own request; sync and async ones both work."""

        async def later(request: Request) -> Response:
            await anyio.lowlevel.checkpoint()
            return Response(text=f"later {request.prompt}")

        agent = ScriptedAgent(["first", lambda request: f"echo {request.prompt}", later])
        replies = await _run(agent, "a", "b", "c")
        assert [reply.text for reply in replies] == ["first", "echo b", "later c"]

    @pytest.mark.anyio
    async def test_step_entry_may_raise_the_very_exception(self) -> None:
        """A raising step raises its own exception object, not a copy."""
        error = InfrastructureError("dropped")

        def drop(request: Request) -> Response:
            raise error

        with pytest.raises(InfrastructureError) as caught:
            await _run(ScriptedAgent([drop]), "a")
        assert caught.value is error

    @pytest.mark.anyio
    async def test_step_entry_can_hang_until_cancelled(self) -> None:
        """An async step that sleeps forever is ended by cancellation; the session closes."""
        agent = ScriptedAgent([lambda request: anyio.sleep_forever()])  # type: ignore[arg-type,return-value]
        with anyio.move_on_after(0.01) as scope:
            await _run(agent, "a")
        assert scope.cancelled_caught
        stats = agent.statistics()
        assert (stats.sessions_closed, stats.in_flight, stats.errors_raised) == (1, 0, 0)

    @pytest.mark.anyio
    async def test_step_returning_wrong_type(self) -> None:
        """A step answering something else is reported, naming its script position."""
        agent = ScriptedAgent(["ok", lambda request: 42])  # type: ignore[list-item]
        with pytest.raises(
            TypeError,
            match=r"^ScriptedAgent: the reply of script\[1\] must be a Response or str, got 42$",
        ):
            await _run(agent, "a", "b")

    @pytest.mark.anyio
    async def test_function_script_gets_turn_index(self) -> None:
        """A script function receives the request and its per-session turn index."""
        seen: list[tuple[str | None, int]] = []

        def reply(request: Request, turn: int) -> Response:
            seen.append((request.prompt, turn))
            return Response(text=f"turn {turn}")

        agent = ScriptedAgent(reply)
        replies = await _run(agent, "x", "y")
        await _run(agent, "z")
        assert [reply.text for reply in replies] == ["turn 0", "turn 1"]
        assert seen == [("x", 0), ("y", 1), ("z", 0)]

    @pytest.mark.anyio
    async def test_async_function_script(self) -> None:
        """A coroutine script function is awaited, so it can sleep or block."""

        async def reply(request: Request, turn: int) -> str:
            await anyio.lowlevel.checkpoint()
            return f"echo {request.prompt}"

        agent = ScriptedAgent(reply)
        assert [r.text for r in await _run(agent, "hi")] == ["echo hi"]

    @pytest.mark.anyio
    async def test_function_returning_wrong_type(self) -> None:
        """A script function that returns something else is reported, naming the turn."""
        agent = ScriptedAgent(lambda request, turn: 42)  # type: ignore[arg-type,return-value]
        with pytest.raises(
            TypeError,
            match=r"^ScriptedAgent: the script function's reply to turn 0 must be a Response or str",
        ):
            await _run(agent, "a")


class TestSessionLifecycle:
    @pytest.mark.anyio
    async def test_protocols(self) -> None:
        """The agent is an AgentAdapter and its sessions are Sessions."""
        manifest = AppManifest(name="mine")
        agent = ScriptedAgent(["x"], observability=ObservabilityLevel.TOOL_ONLY, manifest=manifest)
        assert isinstance(agent, AgentAdapter)
        assert agent.manifest is manifest
        assert agent.observability_profile is ObservabilityLevel.TOOL_ONLY
        assert isinstance(await agent.create_session_async(), Session)
        assert ScriptedAgent(["x"]).manifest.name == "scripted-agent"

    @pytest.mark.anyio
    async def test_close_is_idempotent(self) -> None:
        """Exiting a session twice counts one close."""
        agent = ScriptedAgent(["x"])
        session = await agent.create_session_async()
        async with session:
            pass
        await session.__aexit__(None, None, None)
        assert agent.sessions_closed == 1

    @pytest.mark.anyio
    async def test_send_outside_context_fails(self) -> None:
        """Sending before entering or after closing is an error, not a silent reply."""
        agent = ScriptedAgent(["x", "y"])
        session = await agent.create_session_async()
        with pytest.raises(RuntimeError, match="not entered"):
            await session.send_async(Request(prompt="a"))
        async with session:
            await session.send_async(Request(prompt="a"))
        with pytest.raises(RuntimeError, match="closed"):
            await session.send_async(Request(prompt="b"))
        with pytest.raises(RuntimeError, match="cannot be re-entered"):
            await session.__aenter__()

    @pytest.mark.anyio
    async def test_send_rejects_non_request(self) -> None:
        """send_async needs a Request."""
        session = await ScriptedAgent(["x"]).create_session_async()
        async with session:
            with pytest.raises(TypeError, match="request must be a Request"):
                await session.send_async("hello")  # type: ignore[arg-type]


class TestStatistics:
    @pytest.mark.anyio
    async def test_counts_sessions_requests_and_errors(self) -> None:
        """The snapshot counts sessions (open and closed), requests and raised errors."""
        agent = ScriptedAgent(["fine", InfrastructureError("down")])
        assert agent.statistics() == ScriptedAgentStatistics(
            sessions_created=0,
            sessions_closed=0,
            requests=0,
            in_flight=0,
            peak_in_flight=0,
            errors_raised=0,
        )
        with pytest.raises(InfrastructureError):
            await _run(agent, "a", "b")
        session = await agent.create_session_async()
        stats = agent.statistics()
        assert (stats.sessions_created, stats.sessions_closed, stats.sessions_open) == (2, 1, 1)
        assert (stats.requests, stats.errors_raised, stats.in_flight) == (2, 1, 0)
        async with session:
            pass
        assert agent.statistics().sessions_open == 0

    @pytest.mark.anyio
    async def test_peak_in_flight_counts_concurrent_sends(self) -> None:
        """Three sessions sending at once show a peak of three requests in flight."""
        arrived = 0
        everyone_here = anyio.Event()

        async def gather(request: Request, turn: int) -> str:
            nonlocal arrived
            arrived += 1
            if arrived == 3:
                everyone_here.set()
            await everyone_here.wait()
            return "done"

        agent = ScriptedAgent(gather)
        async with anyio.create_task_group() as group:
            for _ in range(3):
                group.start_soon(_run, agent, "hi")
        stats = agent.statistics()
        assert (stats.peak_in_flight, stats.in_flight, stats.requests) == (3, 0, 3)


class TestCloseDelay:
    @pytest.mark.anyio
    async def test_close_waits_then_counts(self) -> None:
        """A slow close sleeps close_delay seconds and then counts the session closed."""
        agent = ScriptedAgent(["x"], close_delay=0.001)
        await _run(agent, "a")
        assert agent.sessions_closed == 1
        assert agent.sessions[0].closed

    @pytest.mark.anyio
    async def test_cancelled_close_does_not_count(self) -> None:
        """A close cancelled during its sleep is not counted; a shielded one is."""
        agent = ScriptedAgent(["x"], close_delay=0.001)
        for shield in (False, True):
            session = await agent.create_session_async()
            await session.__aenter__()
            with anyio.CancelScope() as scope:
                scope.cancel()
                with anyio.CancelScope(shield=shield):
                    await session.__aexit__(None, None, None)
            assert session.closed is shield
        assert agent.sessions_closed == 1


class TestValidation:
    @pytest.mark.parametrize(
        ("args", "kwargs", "match"),
        [
            (("text",), {}, "script must be a sequence"),
            ((42,), {}, "script must be a sequence"),
            (([Response(text="a"), 3],), {}, r"script\[1\] must be"),
            (([InfrastructureError],), {}, r"script\[0\] .*got the class InfrastructureError"),
            ((["a"],), {"observability": "tool_only"}, "observability"),
            ((["a"],), {"manifest": {"name": "x"}}, "manifest"),
        ],
    )
    def test_bad_arguments(
        self, args: tuple[object, ...], kwargs: dict[str, object], match: str
    ) -> None:
        """Bad constructor arguments raise TypeError naming the argument."""
        with pytest.raises(TypeError, match=match):
            ScriptedAgent(*args, **kwargs)  # type: ignore[arg-type]

    @pytest.mark.parametrize(("value", "error"), [(-1, ValueError), ("1", TypeError)])
    def test_bad_close_delay(self, value: object, error: type[Exception]) -> None:
        """close_delay must be a finite number of seconds >= 0."""
        with pytest.raises(error, match="close_delay"):
            ScriptedAgent(["x"], close_delay=value)  # type: ignore[arg-type]
