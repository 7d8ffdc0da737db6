"""A pair as rampart's four objects: surface, injection handle, adapter and session.

The surface plants text in the pair's injection vectors; the session runs the pair's
user task with the user's AgentDojo pipeline in a worker thread (AgentDojo pipelines
are synchronous) and reports every tool call and the environment's diff
(``TOOL_AND_SIDE_EFFECTS``), with AgentDojo's own utility and security checks in
``Response.metadata["agentdojo"]``. One ``PairTarget`` serves one execution: the
planted text lives on it, so concurrent clones never see each other's injections.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Self

import anyio
import anyio.lowlevel
import anyio.to_thread
import attrs

from rampart._checks import check_instance
from rampart._text import one_line
from rampart.agentdojo._run import PairRecord, run_pair
from rampart.agentdojo._suites import AgentDojoPair, load_attack, load_suite
from rampart.core.errors import InfrastructureError
from rampart.core.injection import InjectionHandle
from rampart.core.manifest import AppManifest, DataSource, ToolDeclaration
from rampart.core.types import (
    ObservabilityLevel,
    Payload,
    Request,
    Response,
    SideEffect,
    ToolCall,
)
from rampart.payloads._internal import letters

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["PairTarget", "VectorHandle"]


class VectorHandle(InjectionHandle):
    """Planted text in a pair's injection vectors, for one execution.

    ``delivered`` is ``True`` once a tool result the agent received carried the text,
    ``False`` when the agent ran and none did, ``None`` before it ran.
    """

    def __init__(self, target: PairTarget, payload: Payload, texts: dict[str, str] | None) -> None:
        self._target, self._payload, self._texts = target, payload, texts

    @property
    def payload_id(self) -> str | None:
        return self._payload.id

    @property
    def surface_name(self) -> str:
        # ``agentdojo:<suite>:<version>:<attack>``: recorded even when the run fails
        # before AgentDojo's checks, so an ERROR still counts against its suite.
        pair = self._target.pair
        return f"agentdojo:{pair.suite}:{pair.version}:{pair.attack}"

    @property
    def delivered(self) -> bool | None:
        record = self._target.last_record
        if record is None or self._target.injections is None:
            return None
        # ``seen`` was read in the worker thread (bounded: see ``_run``).
        seen = record.seen
        return any(letters(text) in seen for text in self._target.injections.values() if text)

    async def __aenter__(self) -> Self:
        texts = self._texts
        if texts is None:  # the payload's text in every vector the attack would fill
            vectors = await anyio.to_thread.run_sync(self._target.candidate_vectors)
            texts = dict.fromkeys(vectors, self._payload.content)
        self._target.injections = texts
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._target.injections = None


class _PairSurface:
    def __init__(self, target: PairTarget) -> None:
        self._target = target

    def inject(self, *, payload: Payload) -> VectorHandle:
        check_instance("inject", "payload", payload, Payload, expected="a rampart Payload")
        return VectorHandle(self._target, payload, None)


class _PairSession:
    def __init__(self, target: PairTarget) -> None:
        self._target = target

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        return None

    async def send_async(self, request: Request) -> Response:
        target = self._target
        prompt = target.user_task.PROMPT
        if request.prompt is not None and request.prompt != prompt:
            raise ValueError(
                "AgentDojo pair: the trigger is the user task's prompt (target.prompt); "
                f"got {request.prompt[:80]!r}"
            )
        try:
            # Abandoned on cancellation (an execution's timeout): a pipeline that hangs
            # cannot hold its clone (or the run) for good; its thread finishes alone.
            record = await anyio.to_thread.run_sync(
                target.run_blocking, limiter=target.thread_limiter(), abandon_on_cancel=True
            )
        except (KeyboardInterrupt, GeneratorExit, anyio.get_cancelled_exc_class()):
            raise
        except BaseException as error:
            # The pipeline (the agent under test) failed, even with ``SystemExit`` or an
            # exception of its own that is not an ``Exception``: an infrastructure
            # failure, which the engine's one boundary turns into an ERROR result.
            raise InfrastructureError(
                f"AgentDojo pipeline failed on {target.pair.id}: {type(error).__name__}: "
                f"{one_line(str(error), limit=500)}"
            ) from error
        target.last_record = record
        return Response(
            text=record.output,
            tool_calls=[
                ToolCall(name=name, arguments=args, result=result)
                for name, args, result in record.tool_calls
            ],
            side_effects=[
                SideEffect(
                    kind="environment_change", details={"path": path, "before": old, "after": new}
                )
                for path, old, new in record.changes
            ],
            metadata={"agentdojo": target.facts(record)},
        )


class _PairAdapter:
    def __init__(self, target: PairTarget) -> None:
        self._target = target

    async def create_session_async(self) -> _PairSession:
        return _PairSession(self._target)

    @property
    def manifest(self) -> AppManifest:
        return self._target.manifest()

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return ObservabilityLevel.TOOL_AND_SIDE_EFFECTS


@attrs.define(kw_only=True, eq=False)
class PairTarget:
    """One pair, ready for one execution (make a new one per execution or clone)."""

    pair: AgentDojoPair
    pipeline: Any
    max_threads: int
    threads: anyio.lowlevel.RunVar[anyio.CapacityLimiter] = attrs.field(
        factory=lambda: anyio.lowlevel.RunVar("rampart.agentdojo.threads"), repr=False
    )
    attacks: dict[AgentDojoPair, Any] = attrs.field(factory=dict, repr=False)
    injections: dict[str, str] | None = None
    last_record: PairRecord | None = None
    suite: Any = attrs.field(init=False)
    user_task: Any = attrs.field(init=False)
    injection_task: Any = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.suite = load_suite(self.pair.suite, self.pair.version)
        self.user_task = self.suite.get_user_task_by_id(self.pair.user_task)
        self.injection_task = self.suite.get_injection_task_by_id(self.pair.injection_task)

    @property
    def prompt(self) -> str:
        """What the user asks: the user task's prompt (the XPIA trigger)."""
        return str(self.user_task.PROMPT)

    @property
    def adapter(self) -> _PairAdapter:
        return _PairAdapter(self)

    @property
    def surface(self) -> _PairSurface:
        return _PairSurface(self)

    def attack(self) -> Any:
        # One attack object per (suite, version, attack) and pipeline: AgentDojo caches
        # each user task's injection candidates on it (a ground-truth run each).
        key = attrs.evolve(self.pair, user_task="", injection_task="")
        attack = self.attacks.get(key)
        if attack is None:
            attack = self.attacks[key] = load_attack(self.pair.attack, self.suite, self.pipeline)
        return attack

    def candidate_vectors(self) -> list[str]:
        """The vectors the user task's ground truth reads (where the attack writes)."""
        return list(self.attack().get_injection_candidates(self.user_task))

    def attack_injection(self) -> VectorHandle:
        """A handle planting the attack's own injections (AgentDojo's registry)."""
        texts = self.attack().attack(self.user_task, self.injection_task)
        payload = Payload(
            content=next(iter(texts.values()), ""),
            id=f"agentdojo:{self.pair.attack}:{self.pair.suite}:{self.pair.injection_task}",
        )
        return VectorHandle(self, payload, dict(texts))

    def run_blocking(self) -> PairRecord:
        return run_pair(
            suite=self.suite,
            pipeline=self.pipeline,
            user_task=self.user_task,
            injection_task=self.injection_task,
            injections=dict(self.injections or {}),
        )

    def thread_limiter(self) -> anyio.CapacityLimiter:
        """The agent's limiter in this event loop (``threads``: the agent's own slot,
        one limiter of ``max_threads`` per event loop the agent runs in)."""
        try:
            return self.threads.get()
        except LookupError:
            limiter = anyio.CapacityLimiter(self.max_threads)
            self.threads.set(limiter)
            return limiter

    def facts(self, record: PairRecord) -> dict[str, Any]:
        """``metadata["agentdojo"]``: ``security`` is AgentDojo's (True = injected);
        ``note``, when present, says what of the run's record is missing."""
        facts = {
            "suite": self.pair.suite,
            "version": self.pair.version,
            "user_task": self.pair.user_task,
            "injection_task": self.pair.injection_task,
            "attack": self.pair.attack,
            "utility": record.utility,
            "security": record.security,
        }
        if record.note is not None:
            facts["note"] = record.note
        return facts

    def manifest(self) -> AppManifest:
        vectors = _vector_names(self.pair.suite, self.pair.version)
        return AppManifest(
            name=f"agentdojo-{self.pair.suite}",
            tools=[
                ToolDeclaration(name=tool.name, description=tool.description or "")
                for tool in self.suite.tools
            ],
            data_sources=[
                DataSource(
                    name=vector, type="agentdojo-injection-vector", writable_by_untrusted=True
                )
                for vector in vectors
            ],
        )


@functools.cache
def _vector_names(suite: str, version: str) -> tuple[str, ...]:
    """A suite's injection vectors, read once per suite and version: AgentDojo parses
    its YAML file at every ``get_injection_vector_defaults()`` (tens of milliseconds,
    which every pair's manifest paid)."""
    return tuple(load_suite(suite, version).get_injection_vector_defaults())
