"""The boundary for user code: checks at every point where rampart calls it.

Adapters, sessions, evaluators, drivers, converters, surfaces and injection handles are
user code. Wherever rampart calls one of them it goes through a helper here, so a
mis-implemented component gives an ERROR result whose summary says what is wrong with
it, instead of a ``TypeError`` or ``AttributeError`` from deep inside the engine:

* a method that is missing, not async, or returns the wrong type raises the
  component's ``ContractError`` (``AdapterContractError``, ``EvaluatorContractError``,
  ``DriverContractError``, ``ConverterContractError``, ``InjectionContractError``),
  naming the object, the method and what came back;
* an evaluator or driver that *raises* is reported as ``EvaluatorError`` /
  ``DriverError`` naming it and the exception, with the original as ``__cause__``
  (an ``EvaluatorError`` / ``DriverError`` it raises itself passes through as is);
* what an evaluator returns is normalised (``normalise_evaluation``): odd values in an
  ``EvalResult`` (a rationale whose ``str()`` raises, evidence that is a bare string,
  a confidence that is not a number) never break a run or a report.

The engine, the composites behind ``|``/``&``/``~`` and ``rampart.limits`` all call
these helpers, so a component is checked the same way alone, composed or wrapped. This
module imports neither anyio nor the engine (it is part of the model).
"""

from __future__ import annotations

import inspect
import math
import numbers
from typing import TYPE_CHECKING, Any, cast

import attrs

from rampart._checks import describe
from rampart._text import safe_str
from rampart.core._gaps import as_text, as_text_list
from rampart.core.driver import PromptDecision
from rampart.core.errors import (
    AdapterContractError,
    ConverterContractError,
    DriverContractError,
    DriverError,
    EvaluatorContractError,
    EvaluatorError,
    InfrastructureError,
    InjectionContractError,
)
from rampart.core.types import EvalOutcome, EvalResult, Payload, Request, Response

if TYPE_CHECKING:
    from collections.abc import Coroutine
    from types import TracebackType

    from rampart.core._protocols import Evaluator
    from rampart.core.adapter import Session
    from rampart.core.driver import PromptDriver
    from rampart.core.injection import InjectionHandle
    from rampart.core.types import EvalContext, Turn

__all__ = [
    "check_entered",
    "check_session",
    "convert_checked",
    "create_session",
    "enter_handle",
    "enter_session",
    "evaluate_checked",
    "exit_handle",
    "exit_session",
    "handle_delivered",
    "inject_checked",
    "is_handle",
    "next_decision",
    "normalise_evaluation",
    "send_checked",
    "type_name",
]

_SESSION_METHODS = ("send_async", "__aenter__", "__aexit__")


def type_name(value: object) -> str:
    """The name of ``value``'s type, for messages."""
    return type(value).__name__


def _raised(error: BaseException) -> str:
    """``"{ExcType}: {message}"`` (just the type when there is no message), never raising."""
    message = safe_str(error)
    return f"{type_name(error)}: {message}" if message else type_name(error)


# --- adapters and sessions ------------------------------------------------------------


def check_session(session: object, *, source: str) -> None:
    """Raise unless ``session`` (returned by ``source``) has the ``Session`` methods."""
    missing = [name for name in _SESSION_METHODS if not callable(getattr(session, name, None))]
    if missing:
        raise AdapterContractError(
            f"{source} returned {type_name(session)}, expected rampart.Session "
            f"(an async context manager with send_async); missing {', '.join(missing)}"
        )


async def create_session(adapter: object) -> Session:
    """Call ``adapter.create_session_async()`` and check what it gives back."""
    factory = getattr(adapter, "create_session_async", None)
    if not callable(factory):
        raise AdapterContractError(
            f"adapter {type_name(adapter)} has no create_session_async(); an AgentAdapter "
            "must define async def create_session_async(self) -> Session"
        )
    pending = factory()
    if not inspect.isawaitable(pending):
        raise AdapterContractError(
            f"adapter.create_session_async returned {type_name(pending)}, which is not "
            "awaitable; define it with async def"
        )
    session = await pending
    check_session(session, source="adapter.create_session_async")
    return session  # type: ignore[no-any-return]


async def enter_session(session: Session) -> object:
    """``await session.__aenter__()``, checked to be awaitable; returns what it gave.

    The session is entered once this returns, so the caller checks the value with
    ``check_entered`` and closes the session if that raises.
    """
    pending: Any = session.__aenter__()
    if not inspect.isawaitable(pending):
        raise AdapterContractError(
            f"{type_name(session)}.__aenter__ returned {type_name(pending)}, which is not "
            "awaitable; a Session is an async context manager (async def __aenter__)"
        )
    return await pending


async def exit_session(
    session: Session,
    exc_type: type[BaseException] | None,
    exc: BaseException | None,
    tb: TracebackType | None,
) -> None:
    """``await session.__aexit__(...)``, checked to be awaitable; its return value is ignored."""
    pending: Any = session.__aexit__(exc_type, exc, tb)
    if not inspect.isawaitable(pending):
        raise AdapterContractError(
            f"{type_name(session)}.__aexit__ returned {type_name(pending)}, which is not "
            "awaitable; a Session is an async context manager (async def __aexit__)"
        )
    await pending


def check_entered(session: Session, entered: object) -> Session:
    """``entered`` (what ``session.__aenter__`` returned) checked as a session.

    The caller still owns ``session`` and must close it if this raises.
    """
    if entered is session:
        return session
    if entered is None:
        raise AdapterContractError(
            f"{type_name(session)}.__aenter__ returned None; a Session's "
            "__aenter__ must return the session (return self)"
        )
    check_session(entered, source=f"{type_name(session)}.__aenter__")
    return entered  # type: ignore[return-value]


async def send_checked(session: Session, request: Request) -> Response:
    """``await session.send_async(request)``, checking it is awaitable and gives a Response."""
    pending: Any = session.send_async(request)
    if not inspect.isawaitable(pending):
        raise AdapterContractError(
            f"adapter.send_async returned {type_name(pending)}, which is not awaitable; "
            "define it with async def"
        )
    response = await pending
    if not isinstance(response, Response):
        raise AdapterContractError(
            f"adapter.send_async returned {type_name(response)}, expected rampart.Response"
        )
    return response


# --- evaluators -----------------------------------------------------------------------


async def evaluate_checked(
    evaluator: Evaluator, *, context: EvalContext, role: str = ""
) -> EvalResult:
    """``await evaluator.evaluate_async(context=context)``, checked.

    ``role`` says where the evaluator sits (``"right operand of |"``) and is added to
    messages after its name. Raises ``EvaluatorContractError`` when ``evaluate_async`` is
    missing, not async, or gives anything but an ``EvalResult`` with an ``EvalOutcome``;
    any exception it raises becomes ``EvaluatorError`` naming it (chained), except an
    ``EvaluatorError``, which passes through (a composite's operand was already named).
    The result is a fresh, normalised copy (``normalise_evaluation``), never the object
    the evaluator returned, so an evaluator that hands out one shared ``EvalResult``
    cannot have it changed behind its back.
    """
    method = getattr(evaluator, "evaluate_async", None)
    if not callable(method):
        raise EvaluatorContractError(
            f"{_who(evaluator, role)} has no evaluate_async(); an Evaluator must define "
            "async def evaluate_async(self, *, context) -> EvalResult"
        )
    try:
        pending = method(context=context)
        if not inspect.isawaitable(pending):
            raise EvaluatorContractError(
                f"{_who(evaluator, role, 'evaluate_async')} returned {type_name(pending)}, "
                "which is not awaitable; define it with async def"
            )
        result = await pending
    except EvaluatorError:
        raise
    except Exception as error:
        wrapped = EvaluatorError(
            f"{_who(evaluator, role, 'evaluate_async')} raised {_raised(error)}",
            transient=isinstance(error, InfrastructureError) and error.transient,
        )
        wrapped.raised_by_evaluator = True
        raise wrapped from error
    if not isinstance(result, EvalResult):
        raise EvaluatorContractError(
            f"{_who(evaluator, role, 'evaluate_async')} returned {type_name(result)}, "
            "expected rampart.EvalResult"
        )
    outcome = _field(result, "outcome")
    if type(outcome) is not EvalOutcome:
        raise EvaluatorContractError(
            f"{_who(evaluator, role, 'evaluate_async')} returned an EvalResult whose "
            f"outcome is {describe(outcome)}, expected rampart.EvalOutcome"
        )
    return normalise_evaluation(result)


def evaluator_raised(error: EvaluatorError) -> Exception | None:
    """The exception an evaluator itself raised, when ``error`` only names it (not a
    failure the evaluator reported as an ``EvaluatorError``, nor a contract breach)."""
    cause = error.__cause__
    if getattr(error, "raised_by_evaluator", False) and isinstance(cause, Exception):
        return cause
    return None


def _confidence(value: object) -> float:
    """A real number as ``float`` (NaN and the infinities kept); anything else NaN."""
    if type(value) is float:
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return math.nan
    try:
        return float(value)
    except Exception:  # an int too large for a float, a __float__ that raises
        return math.nan


def _field(result: EvalResult, name: str) -> object:
    try:
        return getattr(result, name)
    except Exception:  # a subclass property that raises
        return None


def normalise_evaluation(result: EvalResult) -> EvalResult:
    """A fresh copy of ``result`` whose fields have the types ``EvalResult`` declares.

    As RAMPART's text helpers do: ``rationale`` becomes an exact ``str`` (``None`` gives
    ``""``; a value whose ``str()`` raises gives ``"<unprintable value>"``);
    ``evidence`` and ``undetermined_operands`` become fresh lists of exact ``str`` (a
    bare string is one entry, a non-iterable value none, as RAMPART's ``safe_str_list``;
    an iterable that raises none); ``confidence`` becomes a ``float``, NaN when it was
    not a number (a NaN or infinite confidence is kept: the JSON report writes it as
    ``null`` and the trace codec as ``0.0``). The outcome is never touched, so the
    verdict cannot depend on any of this. The copy keeps ``result``'s class when that
    class accepts it.
    """
    fields: dict[str, Any] = {
        "outcome": result.outcome,
        "confidence": _confidence(_field(result, "confidence")),
        "evidence": as_text_list(_field(result, "evidence")),
        "rationale": as_text(_field(result, "rationale")),
        "undetermined_operands": as_text_list(_field(result, "undetermined_operands")),
    }
    if type(result) is not EvalResult:
        try:
            return attrs.evolve(result, **fields)
        except Exception:  # a subclass whose constructor refuses: keep the base fields
            pass
    return EvalResult(**fields)


def _who(component: object, role: str, method: str = "") -> str:
    """``"Name.method (role)"``: how messages name the component that broke its contract."""
    name = f"{type_name(component)}.{method}" if method else type_name(component)
    return f"{name} ({role})" if role else name


def _close(pending: object) -> None:
    """Close a coroutine that will never be awaited (no "never awaited" warning)."""
    if inspect.iscoroutine(pending):
        pending.close()


# --- drivers --------------------------------------------------------------------------


async def next_decision(driver: PromptDriver, *, history: list[Turn]) -> PromptDecision | None:
    """``await driver.next_prompt_async(history=history)``, checked.

    Raises ``DriverContractError`` when ``next_prompt_async`` is missing, not async, or
    gives anything but a ``PromptDecision`` (whose ``request`` is a ``Request``) or
    ``None``; any exception it raises
    becomes ``DriverError`` naming the driver (chained), except a ``DriverError``,
    which passes through.
    """
    method = getattr(driver, "next_prompt_async", None)
    if not callable(method):
        raise DriverContractError(
            f"{type_name(driver)} has no next_prompt_async(); a PromptDriver must define "
            "async def next_prompt_async(self, *, history) -> PromptDecision | None"
        )
    try:
        pending = method(history=history)
        if not inspect.isawaitable(pending):
            raise DriverContractError(
                f"{type_name(driver)}.next_prompt_async returned {type_name(pending)}, "
                "which is not awaitable; define it with async def"
            )
        decision = await pending
    except DriverError:
        raise
    except Exception as error:
        raise DriverError(
            f"{type_name(driver)}.next_prompt_async raised {_raised(error)}"
        ) from error
    if decision is not None and not isinstance(decision, PromptDecision):
        raise DriverContractError(
            f"{type_name(driver)}.next_prompt_async returned {type_name(decision)}, "
            "expected rampart.PromptDecision or None"
        )
    if decision is not None and not isinstance(decision.request, Request):
        raise DriverContractError(
            f"{type_name(driver)}.next_prompt_async returned a PromptDecision whose "
            f"request is {describe(decision.request)}, expected rampart.Request"
        )
    return decision


# --- converters -----------------------------------------------------------------------


async def convert_checked(converter: object, *, payload: Payload) -> Payload:
    """``await converter.convert_async(payload=payload)``, checked.

    Raises ``ConverterContractError`` when ``convert_async`` is missing, not async, or
    gives anything but a ``Payload`` with the input's ``id``. An exception the
    converter raises propagates unchanged (a ``ValueError`` for input it cannot
    convert is a usage error, not a broken converter).
    """
    method = getattr(converter, "convert_async", None)
    if not callable(method):
        raise ConverterContractError(
            f"{type_name(converter)} has no convert_async(); a PayloadConverter must define "
            "async def convert_async(self, *, payload) -> Payload"
        )
    pending = method(payload=payload)
    if not inspect.isawaitable(pending):
        raise ConverterContractError(
            f"{type_name(converter)}.convert_async returned {type_name(pending)}, which is "
            "not awaitable; define it with async def"
        )
    converted = await pending
    if not isinstance(converted, Payload):
        raise ConverterContractError(
            f"{type_name(converter)}.convert_async returned {type_name(converted)}, "
            "expected rampart.Payload"
        )
    if converted.id != payload.id:
        raise ConverterContractError(
            f"{type_name(converter)}.convert_async changed the payload id from "
            f"{describe(payload.id)} to {describe(converted.id)}; a converter keeps the id"
        )
    return converted


# --- surfaces and injection handles ---------------------------------------------------


def is_handle(value: object) -> bool:
    """True when ``value`` is an injection handle instance (structurally)."""
    return (
        not isinstance(value, type)
        and callable(getattr(value, "__aenter__", None))
        and callable(getattr(value, "__aexit__", None))
        and hasattr(value, "payload_id")
        and hasattr(value, "surface_name")
    )


def inject_checked(surface: object, *, payload: Payload) -> InjectionHandle:
    """``surface.inject(payload=payload)``, checked to give an injection handle.

    ``inject`` only prepares a handle (nothing is written until the handle is
    entered), so it is a plain method; an ``async def inject`` is a contract violation.
    """
    method = getattr(surface, "inject", None)
    if not callable(method):
        raise InjectionContractError(
            f"surface {type_name(surface)} has no inject(); a Surface must define "
            "def inject(self, *, payload) -> InjectionHandle"
        )
    handle = method(payload=payload)
    if inspect.isawaitable(handle):
        _close(handle)
        raise InjectionContractError(
            f"{type_name(surface)}.inject returned {type_name(handle)}, an awaitable; inject "
            "only prepares a handle, so define it with def, not async def"
        )
    if not is_handle(handle):
        raise InjectionContractError(
            f"{type_name(surface)}.inject returned {type_name(handle)}, expected "
            "rampart.InjectionHandle (an async context manager with payload_id and "
            "surface_name)"
        )
    return cast("InjectionHandle", handle)


def enter_handle(handle: InjectionHandle) -> Coroutine[Any, Any, None]:
    """``await handle.__aenter__()`` (activate the injection), checked (await it; like
    ``exit_handle``, it returns the check's coroutine: one frame fewer per call)."""
    return _call_handle(handle, "__aenter__")


def exit_handle(
    handle: InjectionHandle,
    exc_type: type[BaseException] | None,
    exc: BaseException | None,
    tb: TracebackType | None,
) -> Coroutine[Any, Any, None]:
    """``await handle.__aexit__(...)`` (remove the injection), checked (await it).

    Its return value is ignored: a handle cannot swallow the engine's exceptions.
    """
    return _call_handle(handle, "__aexit__", exc_type, exc, tb)


def handle_delivered(handle: object) -> bool | None:
    """What ``handle`` reports about its payload: read (``True``), never read (``False``),
    or cannot tell (``None``, also for a handle without a ``delivered`` attribute).

    ``delivered`` is optional, so third-party handles need not define it; one that does
    must give ``True``, ``False`` or ``None``, else ``InjectionContractError``. It is
    read only where the handle really defines it (a property or attribute of its class,
    or an attribute set on the instance): a ``Mock`` handle answers any name with a mock,
    which says nothing, so it is ``None`` too.
    """
    if not _defines(handle, "delivered"):
        return None
    value = getattr(handle, "delivered", None)
    if value is None or isinstance(value, bool):
        return value
    raise InjectionContractError(
        f"{type_name(handle)}.delivered is {describe(value)}, expected True, False or None "
        "(a bool attribute or property saying whether the agent read the payload)"
    )


def _defines(value: object, name: str) -> bool:
    """``value``'s class (or a base) or its instance dict defines ``name``."""
    instance = getattr(value, "__dict__", None)
    if isinstance(instance, dict) and name in instance:
        return True
    return any(name in vars(klass) for klass in type(value).__mro__)


async def _call_handle(handle: object, name: str, *args: object) -> None:
    method = getattr(handle, name, None)
    if not callable(method):
        raise InjectionContractError(
            f"injection handle {type_name(handle)} has no {name}(); an InjectionHandle is "
            f"an async context manager (async def {name})"
        )
    pending = method(*args)
    if not inspect.isawaitable(pending):
        raise InjectionContractError(
            f"{type_name(handle)}.{name} returned {type_name(pending)}, which is not "
            "awaitable; define it with async def"
        )
    await pending
