"""The execution boundary: lifecycle events, handlers, and where failures become verdicts.

``BaseExecution.execute_async`` runs one execution (a strategy's ``_execute_async``)
and is **the one place** in rampart where an exception becomes a result. Which ones
do is ``rampart.core._failures.classify_failure``'s answer (``infrastructure``):

* rampart's own ``InfrastructureError`` (including the ``ContractError`` family and
  ``EvaluatorError``) and ``DriverError``, ``OSError`` and ``TimeoutError``, and
  exception groups made only of these, become an ERROR ``Result`` with the summary
  ``"{ExcType}: {message}"``;
* so do the failures agent SDKs and frameworks raise, read by duck typing, also when
  wrapped (``__cause__``, ``__context__``) or in a group: a 429 or 5xx status, a
  connection failure, a timeout. Their summary names the cause and where the run was:
  ``"agent failed: rate limited (HTTP 429, openai.RateLimitError wrapped in
  agent_framework.ChatClientException) on turn 2 after 1 completed turn"``, and
  ``metadata["failure"]`` holds its ``kind``, ``reason``, ``status`` and ``source``;
* an ERROR result has ``metadata["error"]`` / ``metadata["error_type"]`` (the raised
  exception), the strategy name, the adapter's observability level, the turns
  completed before the failure, and whatever the strategy's ``_error_result_extras()``
  adds. ON_ERROR is fired with the error. The summary is made by
  ``rampart._redact.safe_summary`` (the function every strategy's summary goes
  through: terminal-safe, then redacted) and ``metadata["error"]`` is redacted: an
  error message that carries a credential (a URL with a password, a key the endpoint
  echoed) or terminal escapes never reaches a result as it was;
* before it decides ERROR, the boundary asks the strategy what the turns completed
  so far show (``_failure_result``): a trace strategy keeps a finding that can no
  longer be undone as UNSAFE (``rampart.engine._strategy``), so no finding is lost;
  the tool calls the agent ran in the turn it failed count too, as its model traffic
  showed them (``rampart.engine._observed``: through ``LimitedTransport``, and in the
  failed request the exception carries).
* Everything else is a bug (in rampart, a strategy, a session or a handler) and
  propagates unchanged, as do cancellation and ``KeyboardInterrupt``. Evaluators and
  drivers are user code called through ``rampart.core._contract``, so whatever they
  raise arrives here as ``EvaluatorError`` / ``DriverError`` naming them.

A failure that is a refusal for the agent's rate (``FailureKind.RATE_LIMITED``) is also
reported on rampart's "slow down" channel, so an adaptive trial group backs off.

A cleanup failure after the ``timeout`` fired is raised together with the
``TimeoutError`` (see ``deadline``), so the ERROR result names both.

Lifecycle: ON_PRE_EXECUTE, then the strategy (bounded by ``timeout``, if given), then
ON_ERROR for a converted failure (whether its result is ERROR or a finding kept), then
``duration_seconds`` is set and ON_POST_EXECUTE fires with the result. Handlers run in
order, one at a time; an exception raised by a handler propagates out of
``execute_async`` (it is never logged and swallowed).

Framework handlers (the pytest plugin's result collection) are not kept in a global
registry: ``framework_handlers(...)`` sets them for the current context (a
``ContextVar``), and each ``execute_async`` reads them when it starts. Concurrent
tasks (trial clones) each see the handlers of their own context.

RAMPART's hook for the same purpose, ``register_default_handler_factory(factory)`` /
``clear_default_handler_factory()``, sits on the same mechanism: the factory is held in
a context variable (set from synchronous code such as a conftest or
``pytest_configure``, it applies to the whole run; set inside a task, to that task and
the tasks it starts), and each ``BaseExecution.__init__`` calls it for a fresh list of
handlers that run before the execution's own ``event_handlers``.

``tracking_executions()`` works the same way for a forgotten ``await``: inside the
block, every execution constructed in the context is noted, and ``execute_async``
marks it as run when it starts. The pytest plugin opens one per test body (and per
trial clone) and fails the test when an execution it created never ran. The cost is
one context-variable read per construction and one attribute store per run.
"""

from __future__ import annotations

import abc
import enum
import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs

from rampart._checks import check_callable, check_optional_seconds, invalid
from rampart._pacing import slowdown
from rampart._redact import redact, safe_summary
from rampart._text import safe_str
from rampart.core._internal import (
    Failure,
    FailureKind,
    classify_failure,
    dataclass_compatible,
    type_label,
)
from rampart.core.adapter import AgentAdapter
from rampart.core.errors import DriverError, InfrastructureError
from rampart.core.result import Result, SafetyStatus
from rampart.core.types import ObservabilityLevel
from rampart.engine._observed import Observation
from rampart.engine._policies import deadline

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

__all__ = [
    "BaseExecution",
    "ExecutionEvent",
    "ExecutionEventData",
    "ExecutionEventHandler",
    "ExecutionHandlerFactory",
    "boundary_failure",
    "clear_default_handler_factory",
    "current_framework_handlers",
    "default_handler_factory",
    "framework_handlers",
    "never_started",
    "register_default_handler_factory",
    "tracking_executions",
]

#: The failures an ERROR result names as ``"{ExcType}: {message}"`` (``EvaluatorError``
#: and ``AdapterContractError`` are ``InfrastructureError`` subclasses); the others the
#: boundary converts are named by what ``classify_failure`` found.
BOUNDARY_ERRORS: tuple[type[Exception], ...] = (
    InfrastructureError,
    DriverError,
    OSError,
    TimeoutError,
)


class ExecutionEvent(enum.Enum):
    """A point in an execution's lifecycle."""

    ON_PRE_EXECUTE = "on_pre_execute"
    ON_POST_EXECUTE = "on_post_execute"
    ON_ERROR = "on_error"


@dataclass_compatible
@attrs.define(kw_only=True)
class ExecutionEventData:
    """What a handler is told: ``result`` only on POST, ``error`` only on ERROR."""

    event: ExecutionEvent
    adapter: AgentAdapter
    result: Result | None = None
    error: Exception | None = None
    elapsed_seconds: float = 0.0


@runtime_checkable
class ExecutionEventHandler(Protocol):
    """Receives lifecycle events. Subclass it, or just define ``on_event_async``.

    A handler written for RAMPART defines ``async def on_event(self, *, event_data)``
    instead; either name works, and ``on_event_async`` is used when a handler defines
    both. Exceptions raised here propagate out of ``execute_async``.
    """

    async def on_event_async(self, *, event_data: ExecutionEventData) -> None:
        """Calls RAMPART's ``on_event`` (a subclass that defines only that name)."""
        on_event = getattr(self, "on_event", None)
        if not callable(on_event):
            raise NotImplementedError(
                f"{type(self).__name__} defines neither on_event_async nor on_event"
            )
        await on_event(event_data=event_data)


@runtime_checkable
class ExecutionHandlerFactory(Protocol):
    """Makes the default handlers of each new execution: ``() -> list[ExecutionEventHandler]``.

    Any callable with that shape works (a function, a lambda, a class).
    """

    def __call__(self) -> list[ExecutionEventHandler]: ...


_FRAMEWORK_HANDLERS: ContextVar[tuple[ExecutionEventHandler, ...]] = ContextVar(
    "rampart_framework_handlers", default=()
)
_DEFAULT_HANDLER_FACTORY: ContextVar[ExecutionHandlerFactory | None] = ContextVar(
    "rampart_default_handler_factory", default=None
)


_HANDLER = (
    "an ExecutionEventHandler (an object with an async on_event_async(*, event_data) "
    "or on_event(*, event_data) method)"
)


def _check_handlers(
    owner: str, name: str, handlers: Iterable[object]
) -> tuple[ExecutionEventHandler, ...]:
    return tuple(
        _check_handler(owner, f"{name}[{index}]", handler) for index, handler in enumerate(handlers)
    )


def _check_handler(owner: str, name: str, handler: object) -> ExecutionEventHandler:
    """A handler instance with its own ``on_event_async`` or RAMPART's ``on_event``."""
    if not isinstance(handler, type):
        method = getattr(type(handler), "on_event_async", None)
        own = method is not None and method is not ExecutionEventHandler.on_event_async
        if own and callable(getattr(handler, "on_event_async", None)):
            return handler  # type: ignore[return-value]
        if callable(getattr(handler, "on_event", None)):
            return handler  # type: ignore[return-value]
    raise invalid(owner, name, _HANDLER, handler)


async def _notify(handler: object, data: ExecutionEventData) -> None:
    """``on_event_async`` (preferred), or RAMPART's ``on_event``."""
    method = getattr(handler, "on_event_async", None)
    if method is None:
        method = handler.on_event  # type: ignore[attr-defined]
    await method(event_data=data)


@contextmanager
def framework_handlers(*handlers: ExecutionEventHandler) -> Iterator[None]:
    """Within the block, every execution started in this context also notifies ``handlers``.

    The handlers replace (do not add to) any set by an enclosing block; pass
    ``*current_framework_handlers()`` along to keep those. Tasks started inside the
    block inherit the setting; concurrent tasks can each set their own.
    """
    token = _FRAMEWORK_HANDLERS.set(_check_handlers("framework_handlers", "handlers", handlers))
    try:
        yield
    finally:
        _FRAMEWORK_HANDLERS.reset(token)


def register_default_handler_factory(factory: ExecutionHandlerFactory) -> None:
    """Have every execution created from now on (in this context) call ``factory``.

    ``factory()`` runs in each ``BaseExecution.__init__`` and returns a list of
    handlers that run before the execution's own. It replaces any factory registered
    before. ``TypeError`` (naming "callable") if ``factory`` is not callable.
    """
    check_callable(
        "register_default_handler_factory",
        "factory",
        factory,
        expected="a callable returning a list of ExecutionEventHandler (ExecutionHandlerFactory)",
    )
    _DEFAULT_HANDLER_FACTORY.set(factory)


def clear_default_handler_factory() -> None:
    """Remove the factory ``register_default_handler_factory`` installed (in this context)."""
    _DEFAULT_HANDLER_FACTORY.set(None)


def default_handler_factory() -> ExecutionHandlerFactory | None:
    """The factory ``register_default_handler_factory`` installed (in this context), if any
    (so a factory registered later can chain it)."""
    return _DEFAULT_HANDLER_FACTORY.get()


def _default_handlers(owner: str) -> tuple[ExecutionEventHandler, ...]:
    factory = _DEFAULT_HANDLER_FACTORY.get()
    if factory is None:
        return ()
    handlers = factory()
    if not isinstance(handlers, list | tuple):
        raise invalid(
            owner,
            "the default handler factory's return value",
            "a list of ExecutionEventHandler",
            handlers,
        )
    return _check_handlers(owner, "default handlers", handlers)


def current_framework_handlers() -> tuple[ExecutionEventHandler, ...]:
    """The framework handlers in effect for the current context."""
    return _FRAMEWORK_HANDLERS.get()


_CREATED: ContextVar[list[BaseExecution] | None] = ContextVar(
    "rampart_created_executions", default=None
)


@contextmanager
def tracking_executions() -> Iterator[list[BaseExecution]]:
    """Within the block, note every execution constructed in this context.

    Yields the list they are appended to; ``never_started`` picks those whose
    ``execute_async`` never began. Tasks started inside the block inherit it.
    """
    created: list[BaseExecution] = []
    token = _CREATED.set(created)
    try:
        yield created
    finally:
        _CREATED.reset(token)


def never_started(executions: Iterable[BaseExecution]) -> list[BaseExecution]:
    """The executions whose ``execute_async`` was never awaited (never began running)."""
    return [execution for execution in executions if not getattr(execution, "_started", True)]


def _reported(error: Exception) -> Exception:
    """The exception an ERROR result names: ``error``, or a group's only exception."""
    if isinstance(error, ExceptionGroup):
        leaves = _leaves(error)
        if len(leaves) == 1 and isinstance(leaves[0], Exception):
            return leaves[0]
    return error


def _named_by_type(error: Exception) -> bool:
    """``error`` is one of ``BOUNDARY_ERRORS``, or a group made only of them."""
    if isinstance(error, ExceptionGroup):
        return error.split(BOUNDARY_ERRORS)[1] is None
    return isinstance(error, BOUNDARY_ERRORS)


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def failure_cause(error: Exception, failure: Failure, observation: Observation) -> str:
    """What an ERROR result's summary says about the failure ``error`` (see the module
    docstring): ``"{ExcType}: {message}"`` for rampart's own, Python's ``OSError`` /
    ``TimeoutError`` and groups of them; else what ``classify_failure`` found and where
    the run was."""
    if _named_by_type(error):
        return _describe(error)
    completed = observation.completed
    if observation.in_send:
        where = f"agent failed: {failure.describe()} on turn {completed + 1}"
    else:
        where = f"run failed: {failure.describe()}"
    if completed:
        where += f" after {_plural(completed, 'completed turn')}"
    unnamed = observation.unnamed_results()
    if unnamed:
        where += (
            f"; its model API traffic shows the results of {_plural(unnamed, 'tool call')} "
            "it ran, not which tools (not judged)"
        )
    return where


def _failure_metadata(failure: Failure) -> dict[str, Any]:
    """``metadata["failure"]``: what ``classify_failure`` read, JSON-safe."""
    found: dict[str, Any] = {"kind": failure.kind.value, "reason": failure.reason}
    if failure.status is not None:
        found["status"] = failure.status
    if failure.source is not None:
        found["source"] = type_label(type(failure.source))
    return found


def _leaves(group: BaseExceptionGroup[Any]) -> list[BaseException]:
    found: list[BaseException] = []
    for error in group.exceptions:
        if isinstance(error, BaseExceptionGroup):
            found.extend(_leaves(error))
        else:
            found.append(error)
    return found


def _message(error: Exception) -> str:
    """``str(error)`` (a group: its message and each member's), never raising: a
    foreign failure's broken ``__str__`` must not turn its ERROR result into a crash."""
    if isinstance(error, ExceptionGroup):
        inner = "; ".join(_describe(leaf) for leaf in _leaves(error) if isinstance(leaf, Exception))
        return f"{safe_str(error.message)}: {inner}"
    return safe_str(error)


def _describe(error: Exception) -> str:
    """``"{ExcType}: {message}"``, or just the type when there is no message."""
    message = _message(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def boundary_failure(error: Exception) -> tuple[Exception, str] | None:
    """What the boundary makes of ``error``: the failure it reports and the ERROR
    summary naming it, or ``None`` for a bug, which must propagate. The same rule and
    words for code that judges outside an execution (re-judging saved work)."""
    failure = classify_failure(error)
    if not failure.infrastructure:
        return None
    reported = _reported(error)
    cause = _describe(reported) if _named_by_type(error) else f"run failed: {failure.describe()}"
    return reported, safe_summary(cause)


def _level_or_default(adapter: object) -> ObservabilityLevel:
    """The adapter's level for an ERROR result; a broken adapter must not mask the error."""
    try:
        level = getattr(adapter, "observability_profile", None)
    except Exception:  # the adapter is what failed; the ERROR result still needs a level
        return ObservabilityLevel.RESPONSE_ONLY
    return level if isinstance(level, ObservabilityLevel) else ObservabilityLevel.RESPONSE_ONLY


class BaseExecution(abc.ABC):
    """One runnable scenario (an attack, a probe) against an adapter.

    Subclasses implement ``strategy_name`` and ``_execute_async``; ``execute_async`` adds
    the lifecycle events, the optional ``timeout`` (seconds, for the whole execution)
    and the error boundary described in the module docstring.
    """

    def __init__(
        self,
        *,
        event_handlers: Sequence[ExecutionEventHandler] | None = None,
        timeout: float | None = None,
    ) -> None:
        owner = type(self).__name__
        if event_handlers is None:
            handlers: tuple[ExecutionEventHandler, ...] = ()
        elif isinstance(event_handlers, list | tuple):
            handlers = _check_handlers(owner, "event_handlers", event_handlers)
        else:
            raise invalid(
                owner, "event_handlers", "a list of ExecutionEventHandler or None", event_handlers
            )
        self._event_handlers = _default_handlers(owner) + handlers
        self._timeout = check_optional_seconds(owner, "timeout", timeout, positive=True)
        self._started = False
        created = _CREATED.get()
        if created is not None:
            created.append(self)

    @property
    @abc.abstractmethod
    def strategy_name(self) -> str:
        """The strategy recorded on results (``"xpia"``, ``"probe"``, ...)."""

    @property
    def timeout(self) -> float | None:
        """The per-execution time limit in seconds, or ``None``."""
        return self._timeout

    @abc.abstractmethod
    async def _execute_async(self, *, adapter: AgentAdapter) -> Result:
        """Run the strategy. Let failures propagate: the boundary handles them."""

    async def execute_async(self, *, adapter: AgentAdapter) -> Result:
        """Run the execution and return its result (see the module docstring)."""
        self._started = True
        handlers = self._event_handlers + _FRAMEWORK_HANDLERS.get()
        started = time.monotonic()
        if handlers:
            await _fire(
                handlers, ExecutionEventData(event=ExecutionEvent.ON_PRE_EXECUTE, adapter=adapter)
            )
        # THE error boundary: the only place an exception becomes a result.
        with Observation() as observation:
            try:
                if self._timeout is None:
                    result = await self._execute_async(adapter=adapter)
                else:
                    with deadline(self._timeout):
                        result = await self._execute_async(adapter=adapter)
            except Exception as raised:
                failure = classify_failure(raised)
                if not failure.infrastructure:
                    raise
                if failure.kind is FailureKind.RATE_LIMITED:
                    # A 429 that ended the run slows an adaptive group down.
                    slowdown.report(slowdown.SlowDown(refused=True, ended_run=True))
                error = _reported(raised)
                observation.saw_failure(raised)
                result = await self._failure_result(
                    error, failure=failure, adapter=adapter, observation=observation
                )
                if handlers:
                    await _fire(
                        handlers,
                        ExecutionEventData(
                            event=ExecutionEvent.ON_ERROR,
                            adapter=adapter,
                            error=error,
                            elapsed_seconds=time.monotonic() - started,
                        ),
                    )
        elapsed = time.monotonic() - started
        result = _timed(result, elapsed)
        if handlers:
            await _fire(
                handlers,
                ExecutionEventData(
                    event=ExecutionEvent.ON_POST_EXECUTE,
                    adapter=adapter,
                    result=result,
                    elapsed_seconds=elapsed,
                ),
            )
        return result

    def _error_result_extras(self) -> dict[str, Any]:
        """Further ``Result`` fields for an ERROR result made by the boundary.

        Default: none. A strategy overrides it to record what an ERROR result must
        still say (XPIA: which injections were planted, since a failed removal may have
        left one behind). The boundary's own fields (status, summary, strategy,
        observability level, metadata) are not overridable.
        """
        return {}

    async def _failure_result(
        self, error: Exception, *, failure: Failure, adapter: object, observation: Observation
    ) -> Result:
        """The result of a run that failed with ``error`` (read as ``failure``) after
        ``observation``: an ERROR result (``_error_result``). A strategy overrides it
        to keep what the completed turns found (``rampart.engine._strategy``)."""
        return self._error_result(error, failure=failure, adapter=adapter, observation=observation)

    def _error_result(
        self,
        error: Exception,
        *,
        failure: Failure,
        adapter: object,
        observation: Observation,
        summary: str | None = None,
        status: SafetyStatus = SafetyStatus.ERROR,
        **fields: Any,
    ) -> Result:
        """The result of a failed run: ERROR by default, its summary the failure's cause
        (``failure_cause``) unless ``summary`` is given; ``fields`` add ``Result`` fields
        (a finding kept); the completed turns are always on it."""
        record = observation.record
        metadata: dict[str, Any] = {
            "error": redact(_message(error)),
            "error_type": type(error).__name__,
        }
        if not _named_by_type(error):
            metadata["failure"] = _failure_metadata(failure)
        result_fields = self._error_result_extras()
        if record is not None and record.turns:
            result_fields["turns"] = list(record.turns)
        result_fields.update(fields)
        result_fields.update(
            status=status,
            summary=safe_summary(
                failure_cause(error, failure, observation) if summary is None else summary
            ),
            strategy=self.strategy_name,
            observability_level=_level_or_default(adapter),
            metadata=metadata,
        )
        return Result(**result_fields)


_new = object.__new__
_set = object.__setattr__


def _timed(result: Result, seconds: float) -> Result:
    """``attrs.evolve(result, duration_seconds=seconds)`` for a plain ``Result``, without
    running its constructor and validators again: its values were checked when it was
    made (and are on assignment), and ``evolve`` costs three times this copy, in every
    execution. A subclass is evolved (its constructor may differ). A field added to
    ``Result`` is added here too (``tests/engine/test_execution.py`` checks each)."""
    if type(result) is not Result:
        return attrs.evolve(result, duration_seconds=seconds)
    timed = _new(Result)
    _set(timed, "status", result.status)
    _set(timed, "summary", result.summary)
    _set(timed, "observability_level", result.observability_level)
    _set(timed, "final_trace_evaluation", result.final_trace_evaluation)
    _set(timed, "turns", result.turns)
    _set(timed, "trace_end_reason", result.trace_end_reason)
    _set(timed, "duration_seconds", seconds)
    _set(timed, "harm_category", result.harm_category)
    _set(timed, "strategy", result.strategy)
    _set(timed, "injections", result.injections)
    _set(timed, "population", result.population)
    _set(timed, "metadata", result.metadata)
    return timed


async def _fire(handlers: tuple[ExecutionEventHandler, ...], data: ExecutionEventData) -> None:
    for handler in handlers:
        await _notify(handler, data)
