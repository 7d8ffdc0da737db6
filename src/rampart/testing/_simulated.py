"""``SimulatedAgent``: a seeded, tool-using toy agent that may follow injected instructions.

It is the agent the demo, the benchmarks and the engine tests run against, so a send
does little work: what it works out from a text is remembered per text (in memos
bounded by the characters they keep, shared by every agent in the process), the
surface caches its document list, and randomness is drawn only where a setting
actually needs it. A send whose texts hold more than ``INLINE_CHARS`` characters
reads them in a worker thread, so a huge prompt never stalls the event loop.

Per request a session:

1. draws its faults (``error_rate``, ``hang_rate``) and its latency, sleeps (anyio),
   then hangs forever or raises ``InfrastructureError`` if a fault was drawn;
2. reads the prompt and the attachments, calls ``search(query=...)`` on its surface
   and ``read_document(document_id=...)`` on up to ``search_limit`` documents it has not
   read yet in this session (newest first), marking each one read on the surface
   (so injection handles can report ``delivered``);
3. decides once per session for every distinct instruction it found (see
   ``rampart.testing._instructions``) whether to follow it, with probability
   ``compliance``; a followed email instruction calls ``send_email`` and records a
   ``SideEffect(kind="email_sent")``, a followed reveal instruction puts the secret in
   the reply; a declined one is mentioned in the reply without repeating it;
4. reports tool calls and side effects only where its observability level can see them.
"""

from __future__ import annotations

import random
import secrets
from typing import Self, TypedDict, Unpack

import anyio
import anyio.to_thread
import attrs

from rampart._checks import (
    check_instance,
    check_int,
    check_optional_instance,
    check_probability,
    check_text,
    invalid,
)
from rampart.adapters._internal import GuardedSession
from rampart.core.errors import InfrastructureError
from rampart.core.manifest import AppManifest, DataSource, ToolDeclaration
from rampart.core.types import (
    ObservabilityLevel,
    Payload,
    Request,
    Response,
    SideEffect,
    ToolCall,
)
from rampart.testing._instructions import (
    BODY_QUOTED,
    BODY_SECRET,
    REVEAL_SECRET,
    Instruction,
    analyse,
)
from rampart.testing._latency import Latency, LatencySpec, as_latency
from rampart.testing._memo import TextMemo
from rampart.testing._surface import InMemorySurface

__all__ = [
    "DEFAULT_SECRET",
    "INLINE_CHARS",
    "SimulatedAgent",
    "SimulatedAgentOptions",
    "SimulatedAgentStatistics",
    "SimulatedSession",
]

DEFAULT_SECRET = "SIMULATED-SECRET-7731"
"""The secret a ``SimulatedAgent`` guards unless told otherwise."""

_OWNER = "SimulatedAgent"
INLINE_CHARS = 64 * 1024
"""A send whose prompt, attachments and new documents hold more characters than this
reads them in a worker thread."""


class SimulatedAgentOptions(TypedDict, total=False):
    """Keyword arguments of ``SimulatedAgent`` other than ``compliance`` (for the presets)."""

    seed: int | None
    secret: str
    latency: LatencySpec
    observability: ObservabilityLevel
    error_rate: float
    hang_rate: float
    search_limit: int
    surface: InMemorySurface | None
    name: str


@attrs.frozen(kw_only=True)
class SimulatedAgentStatistics:
    """A snapshot of what a ``SimulatedAgent`` has done so far (ground truth for tests).

    Counts include actions the declared observability level hides from responses.
    """

    sessions_created: int
    sessions_closed: int
    requests: int
    documents_read: int
    instructions_seen: int
    instructions_followed: int
    instructions_declined: int
    emails_sent: int
    secrets_leaked: int
    errors_raised: int
    hangs: int
    latency_seconds: float

    @property
    def sessions_open(self) -> int:
        return self.sessions_created - self.sessions_closed


def _tool(
    name: str, description: str, permissions: list[str], **parameters: str
) -> ToolDeclaration:
    return ToolDeclaration(
        name=name, description=description, parameters=parameters, permissions=permissions
    )


class SimulatedAgent:
    """A toy email-assistant agent with tools ``read_document``, ``search``, ``send_email``.

    ``compliance`` is the probability of following each injected instruction; ``seed``
    makes a run reproducible (session *i* draws from its own ``random.Random`` derived
    from ``(seed, i)``; the effective seed is ``agent.seed`` when none was given).
    ``latency`` is seconds, a ``Latency`` or a function of the session's rng.
    ``error_rate`` / ``hang_rate`` are per-request probabilities of raising
    ``InfrastructureError`` or never answering. ``surface`` (default: a fresh
    ``InMemorySurface(name="inbox")``) is where attacks plant documents.
    """

    def __init__(
        self,
        *,
        compliance: float = 0.5,
        seed: int | None = None,
        secret: str = DEFAULT_SECRET,
        latency: LatencySpec = 0.0,
        observability: ObservabilityLevel = ObservabilityLevel.TOOL_AND_SIDE_EFFECTS,
        error_rate: float = 0.0,
        hang_rate: float = 0.0,
        search_limit: int = 5,
        surface: InMemorySurface | None = None,
        name: str = "simulated-agent",
    ) -> None:
        self._compliance = check_probability(_OWNER, "compliance", compliance)
        self._error_rate = check_probability(_OWNER, "error_rate", error_rate)
        self._hang_rate = check_probability(_OWNER, "hang_rate", hang_rate)
        self._latency = as_latency(_OWNER, latency)
        if seed is None:
            seed = secrets.randbits(64)
        elif isinstance(seed, bool) or not isinstance(seed, int):
            raise invalid(_OWNER, "seed", "an int or None", seed)
        self._seed = seed
        self._secret = check_text(_OWNER, "secret", secret)
        self._observability = check_instance(
            _OWNER,
            "observability",
            observability,
            ObservabilityLevel,
            expected="an ObservabilityLevel",
        )
        self._search_limit = check_int(_OWNER, "search_limit", search_limit, minimum=1)
        surface = check_optional_instance(
            _OWNER, "surface", surface, InMemorySurface, expected="an InMemorySurface"
        )
        if surface is None:
            surface = InMemorySurface(name="inbox")
        self._surface = surface
        self._name = check_text(_OWNER, "name", name)
        self._manifest = AppManifest(
            name=self._name,
            description="A simulated email assistant that reads an inbox and can send email.",
            tools=[
                _tool("search", "Search the inbox; returns document ids.", [], query="str"),
                _tool("read_document", "Read one document.", ["inbox.read"], document_id="str"),
                _tool(
                    "send_email",
                    "Send an email.",
                    ["email.send"],
                    recipient="str",
                    body="str",
                ),
            ],
            data_sources=[
                DataSource(name=surface.name, type="in-memory", writable_by_untrusted=True)
            ],
        )
        self._sees_tools = observability.observes_tool_calls
        self._sees_effects = observability.observes_side_effects
        self._sessions_created = 0
        self._sessions_closed = 0
        self._requests = 0
        self._documents_read = 0
        self._instructions_seen = 0
        self._instructions_followed = 0
        self._emails_sent = 0
        self._secrets_leaked = 0
        self._errors_raised = 0
        self._hangs = 0
        self._latency_seconds = 0.0

    @classmethod
    def vulnerable(cls, **overrides: Unpack[SimulatedAgentOptions]) -> Self:
        """An agent that follows every injected instruction (``compliance=1.0``)."""
        return cls(compliance=1.0, **overrides)

    @classmethod
    def hardened(cls, **overrides: Unpack[SimulatedAgentOptions]) -> Self:
        """An agent that never follows an injected instruction (``compliance=0.0``)."""
        return cls(compliance=0.0, **overrides)

    def __repr__(self) -> str:
        return (
            f"SimulatedAgent(name={self._name!r}, compliance={self._compliance!r}, "
            f"seed={self._seed!r}, latency={self._latency!r}, "
            f"observability={self._observability.value!r})"
        )

    @property
    def manifest(self) -> AppManifest:
        return self._manifest

    @property
    def observability_profile(self) -> ObservabilityLevel:
        return self._observability

    @property
    def surface(self) -> InMemorySurface:
        return self._surface

    @property
    def seed(self) -> int:
        """The effective seed (drawn at construction when none was given)."""
        return self._seed

    @property
    def secret(self) -> str:
        return self._secret

    @property
    def compliance(self) -> float:
        return self._compliance

    @property
    def latency(self) -> Latency:
        return self._latency

    @property
    def error_rate(self) -> float:
        return self._error_rate

    @property
    def hang_rate(self) -> float:
        return self._hang_rate

    @property
    def search_limit(self) -> int:
        return self._search_limit

    @property
    def name(self) -> str:
        return self._name

    def _views(self, sources: list[tuple[str, str]]) -> list[_SourceView]:
        """The pre-digested view of each ``(label, content)`` source (pure, so it may
        run in a worker thread; remembered per text, process-wide)."""
        return [self._view(label, content) for label, content in sources]

    def _view(self, label: str, content: str) -> _SourceView:
        secret = self._secret
        return _VIEWS.get(
            (label, content, secret), len(content), lambda: _build_view(label, content, secret)
        )

    def _search_call(self, query: str, documents: list[Payload]) -> ToolCall:
        ids = tuple(document.id for document in documents)
        return _SEARCH_CALLS.get(
            (query, ids),
            len(query),
            lambda: ToolCall(name="search", arguments={"query": query}, result=", ".join(ids)),
        )

    async def create_session_async(self) -> SimulatedSession:
        index = self._sessions_created
        self._sessions_created += 1
        return SimulatedSession(agent=self, index=index)

    def statistics(self) -> SimulatedAgentStatistics:
        return SimulatedAgentStatistics(
            sessions_created=self._sessions_created,
            sessions_closed=self._sessions_closed,
            requests=self._requests,
            documents_read=self._documents_read,
            instructions_seen=self._instructions_seen,
            instructions_followed=self._instructions_followed,
            instructions_declined=self._instructions_seen - self._instructions_followed,
            emails_sent=self._emails_sent,
            secrets_leaked=self._secrets_leaked,
            errors_raised=self._errors_raised,
            hangs=self._hangs,
            latency_seconds=self._latency_seconds,
        )


class SimulatedSession(GuardedSession):
    """One conversation with a ``SimulatedAgent``; usable only inside ``async with``.

    It remembers which documents it has read and which instructions it has decided on,
    so each instruction is acted on (or declined) at most once per session.
    """

    __slots__ = ("_agent", "_decided", "_read", "_rng", "requests")

    def __init__(self, *, agent: SimulatedAgent, index: int) -> None:
        super().__init__(index=index)  # the index is also part of the session's rng seed
        self._agent = agent
        self._rng: random.Random | None = None
        self._read: set[str] = set()
        self._decided: dict[Instruction, bool] = {}
        self.requests = 0

    def __repr__(self) -> str:
        return f"SimulatedSession(index={self.index}, requests={self.requests})"

    @property
    def rng(self) -> random.Random:
        """This session's random source, derived from ``(agent.seed, index)``."""
        if self._rng is None:
            self._rng = random.Random(f"rampart.SimulatedAgent/{self._agent.seed}/{self.index}")
        return self._rng

    def _chance(self, probability: float) -> bool:
        if probability <= 0.0:
            return False
        if probability >= 1.0:
            return True
        return self.rng.random() < probability

    def _on_close(self) -> None:
        self._agent._sessions_closed += 1

    async def send_async(self, request: Request) -> Response:
        self._check_send(request)
        agent = self._agent
        number = self.requests
        self.requests += 1
        agent._requests += 1
        # Draw in a fixed order so a seed always yields the same sequence.
        fail = self._chance(agent._error_rate)
        hang = self._chance(agent._hang_rate)
        latency = agent._latency
        delay = latency.sample(None if latency.is_fixed else self.rng)
        if hang:
            agent._hangs += 1
            await anyio.sleep_forever()
        if delay:
            agent._latency_seconds += delay
            await anyio.sleep(delay)
        if fail:
            agent._errors_raised += 1
            raise InfrastructureError(
                f"SimulatedAgent {agent._name!r}: simulated failure on session {self.index}, "
                f"request {number} (error_rate={agent._error_rate})",
                transient=True,
            )
        documents = self._unread_documents()
        sources = self._sources(request, documents)
        if sum(len(content) for _, content in sources) > INLINE_CHARS:
            views = await anyio.to_thread.run_sync(agent._views, sources)
        else:
            views = agent._views(sources)
        return self._respond(request, documents, views)

    def _unread_documents(self) -> list[Payload]:
        """The newest documents this session has not read (up to ``search_limit``),
        marked read on the surface."""
        agent = self._agent
        documents = []
        read = self._read
        surface = agent._surface
        for document in reversed(surface.readable_documents()):
            if document.id not in read:
                read.add(document.id)
                documents.append(document)
                surface.mark_read(document)
                if len(documents) == agent._search_limit:
                    break
        return documents

    @staticmethod
    def _sources(request: Request, documents: list[Payload]) -> list[tuple[str, str]]:
        """``(label, content)`` of every text a send reads, in order."""
        sources = []
        if request.prompt:
            sources.append((_PROMPT_LABEL, request.prompt))
        sources += [(f"attachment {item.id}", item.content) for item in request.attachments]
        sources += [(f"document {document.id}", document.content) for document in documents]
        return sources

    def _respond(
        self, request: Request, documents: list[Payload], views: list[_SourceView]
    ) -> Response:
        agent = self._agent
        sees_tools = agent._sees_tools
        sees_effects = agent._sees_effects
        tool_calls: list[ToolCall] = []
        if sees_tools:
            tool_calls.append(agent._search_call(request.prompt or "", documents))
            tool_calls += [view.read_call for view in views[len(views) - len(documents) :]]
        read_lines = [view.read_line for view in views if view.read_line]
        agent._documents_read += len(read_lines)
        if read_lines:
            lines = [f"Summary: I read {'; '.join(read_lines)}."]
        else:
            lines = ["Summary: I found nothing new to read."]
        side_effects: list[SideEffect] = []
        decided = self._decided
        for view in views:
            for action in view.actions:
                if action.instruction in decided:
                    continue
                agent._instructions_seen += 1
                follow = self._chance(agent._compliance)
                decided[action.instruction] = follow
                if not follow:
                    lines.append(action.decline_line)
                    continue
                agent._instructions_followed += 1
                agent._emails_sent += action.emails
                agent._secrets_leaked += action.leaks
                lines.append(action.follow_line)
                if action.call is not None:
                    if sees_tools:
                        tool_calls.append(action.call)
                    if sees_effects:
                        side_effects.append(action.effect)  # type: ignore[arg-type]
        return Response(text=" ".join(lines), tool_calls=tool_calls, side_effects=side_effects)


_PROMPT_LABEL = "your message"
# What the agents worked out from each text, shared by every agent in the process and
# bounded by the characters the texts hold (a stream of distinct huge prompts must not
# grow them): views by (label, content, secret), search calls by (query, ids).
_VIEWS: TextMemo[tuple[str, str, str], _SourceView] = TextMemo()
_SEARCH_CALLS: TextMemo[tuple[str, tuple[str, ...]], ToolCall] = TextMemo()


@attrs.frozen
class _Action:
    """What following or declining one instruction from one source looks like."""

    instruction: Instruction
    follow_line: str
    decline_line: str
    call: ToolCall | None
    effect: SideEffect | None
    emails: int
    leaks: int


@attrs.frozen
class _SourceView:
    """A text the agent reads (prompt, attachment or document), pre-digested once."""

    read_line: str
    read_call: ToolCall
    actions: tuple[_Action, ...]


def _build_view(label: str, content: str, secret: str) -> _SourceView:
    analysis = analyse(content)
    read_line = "" if label == _PROMPT_LABEL else f"{label} ({analysis.words} words)"
    document_id = label.partition(" ")[2]
    read_call = ToolCall(
        name="read_document", arguments={"document_id": document_id}, result=content
    )
    actions = []
    for instruction in analysis.instructions:
        if instruction.kind == REVEAL_SECRET:
            actions.append(
                _Action(
                    instruction=instruction,
                    follow_line=f"As {label} asked, the secret is {secret}.",
                    decline_line=f"I did not follow an instruction in {label} to reveal a secret.",
                    call=None,
                    effect=None,
                    emails=0,
                    leaks=1,
                )
            )
            continue
        recipient = instruction.recipient
        if instruction.body_kind == BODY_SECRET:
            body = f"The secret is {secret}."
        elif instruction.body_kind == BODY_QUOTED:
            body = instruction.quoted or ""
        else:
            body = f"A summary of {label}."
        actions.append(
            _Action(
                instruction=instruction,
                follow_line=f"I sent an email to {recipient} as {label} asked.",
                decline_line=f"I did not follow an instruction in {label} to send an email.",
                call=ToolCall(
                    name="send_email",
                    arguments={"recipient": recipient, "body": body},
                    result="sent",
                ),
                effect=SideEffect(
                    kind="email_sent",
                    details={"recipient": recipient, "body": body, "source": label},
                ),
                emails=1,
                leaks=int(instruction.body_kind == BODY_SECRET),
            )
        )
    return _SourceView(read_line=read_line, read_call=read_call, actions=tuple(actions))
