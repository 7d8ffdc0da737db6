"""What a failure is, read without importing the code that raised it.

Agents under test fail in their own words: the OpenAI and Anthropic SDKs raise
``RateLimitError``, ``InternalServerError``, ``APIConnectionError`` and
``APITimeoutError``; httpx raises ``HTTPStatusError`` and its transport errors, aiohttp
``ClientResponseError``; frameworks wrap those (Agent Framework's ``ChatClientException``
chains the SDK's error as its ``__cause__``), and task groups gather them into exception
groups. ``classify_failure(error)`` reads such an exception by duck typing and says two
things about it:

* ``kind`` (``FailureKind``), what a limiter does with it: ``RATE_LIMITED`` (the agent,
  or the API behind it, refused for its rate: slow down, retry after its
  ``Retry-After``), ``TRANSIENT`` (an outage that may pass: retry), ``FATAL`` (retrying
  cannot help);
* ``infrastructure``, what the execution boundary does with it: an ERROR result
  (something outside the code under test failed), or, when false, let it propagate (a
  bug).

How one exception is read, the first rule that applies deciding:

1. **rampart's own errors** say what they are: a ``RateLimitedError`` (its class sets
   ``rate_limited = True``) is RATE_LIMITED, an ``InfrastructureError`` TRANSIENT when
   ``transient`` and FATAL otherwise (an ``AdapterContractError`` always FATAL), a
   ``DriverError`` FATAL; all of them infrastructure. Any other ``RampartError`` is
   FATAL and not infrastructure.
2. **An HTTP status**, an integer from 100 to 599 in ``status_code`` or ``status`` on
   the exception or on its ``response``: 429, or 503 with ``Retry-After`` /
   ``retry-after-ms``, is RATE_LIMITED; 408 and any other 5xx TRANSIENT; all
   infrastructure. Any other status (400, 401, 404) says the request itself was wrong:
   FATAL, and infrastructure only if the exception is an ``OSError`` (as ``urllib``'s
   ``HTTPError`` is; the boundary has always made those ERROR).
3. **Python's** ``TimeoutError`` and ``ConnectionError`` are TRANSIENT, any other
   ``OSError`` FATAL unless rule 4 names it; all infrastructure.
4. **A class name**, as a last resort, in the exception's MRO that says timeout or
   connection (``APITimeoutError``, ``ReadTimeout``, ``APIConnectionError``,
   ``ConnectError``, ``NetworkError``, ``ClientConnectorError``,
   ``ServerDisconnectedError``, ``RemoteProtocolError``): TRANSIENT infrastructure. A
   name never makes a rate limit: a ``RateLimitError`` without a 429 is not one.
5. **What it wraps**: its ``__cause__``, else its ``__context__`` (unless ``raise ...
   from None`` suppressed it), else an exception among its first ``args`` (Agent
   Framework also passes its ``inner_exception`` there), read by the same rules. Python's
   programming errors (``TypeError``, ``KeyError``, ``AttributeError``, ... see
   ``PROGRAMMING_ERRORS``) wrap nothing: a bug raised while handling a 429 is a bug.
6. Nothing recognised: FATAL, not infrastructure (a bug).

An exception group is infrastructure only when every exception in it is; its kind is
RATE_LIMITED when one of them is and each may be retried, TRANSIENT when each may be,
else FATAL. A group holding one exception reads as that exception.

``classify_failure`` never raises, whatever the exception holds: attributes are read
defensively (a property that raises, a status that is not an integer, headers that
are not a mapping: each just ends that line of reading), a chain is followed for at
most ``MAX_LINKS`` exceptions (a cycle stops it), a group for at most ``MAX_LEAVES``,
at most ``MAX_HEADERS`` headers are looked at and only values up to
``MAX_HEADER_CHARS`` characters kept. The model layer (``rampart.core``) holds it
because both the engine's error boundary and ``rampart.limits`` read failures with it.

``failed_requests(error)`` reads something else from the same exceptions: the bodies
of the HTTP requests they carry (an SDK's status and connection errors keep the request
that failed, ``request``, as httpx's ``HTTPStatusError`` does, and a response keeps its
``request``). The error boundary reads the agent's tool calls from them (the history a
chat-completions request resends shows the tools the agent ran). Only a body already
built in memory is taken (``request.content`` that is ``bytes``: nothing is read from a
stream, nothing copied), from at most ``MAX_REQUESTS`` requests, along the same chain
(rule 5) and through groups; whoever parses a body bounds its size.
"""

from __future__ import annotations

import enum
import itertools
import re
from collections.abc import Iterable

import attrs

from rampart.core.errors import AdapterContractError, DriverError, InfrastructureError, RampartError

__all__ = [
    "MAX_HEADERS",
    "MAX_HEADER_CHARS",
    "MAX_LEAVES",
    "MAX_LINKS",
    "MAX_REQUESTS",
    "PROGRAMMING_ERRORS",
    "Failure",
    "FailureKind",
    "classify_failure",
    "failed_requests",
    "type_label",
]

MAX_LINKS = 16
"""Exceptions followed along one chain of causes."""

MAX_LEAVES = 64
"""Exceptions read in one exception group (nested groups included)."""

MAX_HEADERS = 256
"""Headers looked at on one response."""

MAX_HEADER_CHARS = 8192
"""Longest header value kept (longer ones say nothing the limiter reads)."""

MAX_REQUESTS = 4
"""Distinct request bodies ``failed_requests`` returns."""

PROGRAMMING_ERRORS: tuple[type[BaseException], ...] = (
    ArithmeticError,
    AssertionError,
    AttributeError,
    ImportError,
    LookupError,
    NameError,
    NotImplementedError,
    RecursionError,
    ReferenceError,
    StopAsyncIteration,
    StopIteration,
    SyntaxError,
    SystemError,
    TypeError,
)
"""Python's exceptions for code that is wrong: they never count as wrapping a failure."""


class FailureKind(enum.Enum):
    """What a limiter does with a failure: treat it as a refusal for the agent's rate
    (``RATE_LIMITED``), retry it (``TRANSIENT``), or give up at once (``FATAL``)."""

    RATE_LIMITED = "rate_limited"
    TRANSIENT = "transient"
    FATAL = "fatal"


_RETRYABLE = (FailureKind.RATE_LIMITED, FailureKind.TRANSIENT)

# Header names a refusal's wait and quota are read from (rampart.limits parses them).
_RETRY_HEADERS = ("retry-after", "retry-after-ms")
_KEPT_PREFIXES = ("x-ratelimit-", "ratelimit")

# Rule 4: anchored at the end of a class name, so one linear scan of a short name.
_TIMEOUT_NAME = re.compile(r"(?:Timeout|TimedOut)(?:Error|Exception)?\Z")
_CONNECTION_NAME = re.compile(
    r"(?:Connection|Connect|Connector|Network|ServerDisconnected|RemoteProtocol)"
    r"(?:Error|Exception)\Z"
)

RATE_LIMITED = "rate limited"
SERVER_ERROR = "server error"
TIMED_OUT = "timed out"
CONNECTION_FAILED = "connection failed"


@attrs.frozen(kw_only=True)
class Failure:
    """How ``classify_failure`` read an exception.

    ``kind`` and ``infrastructure``: see the module docstring. ``reason`` is what
    happened in a few words (``"rate limited"``, ``"server error"``, ``"timed out"``,
    ``"connection failed"``, or the kind of rampart error), empty when nothing was
    recognised. ``source`` is the exception that said so (the raised one, or one it
    wraps; ``None`` when nothing was recognised), ``status`` the HTTP status it carried,
    ``headers`` its response's retry and rate-limit headers (lower-case names, in the
    order given), and ``wrappers`` the labels (``type_label``) of the exceptions the
    source was found in, innermost first (a group reads ``"ExceptionGroup"``).
    """

    kind: FailureKind
    infrastructure: bool
    reason: str = ""
    source: BaseException | None = attrs.field(default=None, eq=False)
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    wrappers: tuple[str, ...] = ()

    def describe(self) -> str:
        """``"rate limited (HTTP 429, openai.RateLimitError wrapped in
        agent_framework.ChatClientException)"``: the reason, then the status and the
        exceptions it was found in."""
        parts = []
        if self.status is not None:
            parts.append(f"HTTP {self.status}")
        if self.source is not None:
            found = type_label(type(self.source))
            if self.wrappers:
                found += " wrapped in " + " in ".join(self.wrappers)
            parts.append(found)
        detail = ", ".join(parts)
        reason = self.reason or "failed"
        return f"{reason} ({detail})" if detail else reason


def type_label(cls: type) -> str:
    """``"openai.RateLimitError"``: a class's name after its top-level package; Python's
    own, rampart's and a script's (``__main__``) classes by name alone."""
    name = cls.__name__
    module = _attribute(cls, "__module__")
    root = module.partition(".")[0] if isinstance(module, str) else ""
    return name if root in ("", "builtins", "rampart", "__main__") else f"{root}.{name}"


def classify_failure(error: BaseException) -> Failure:
    """How ``error`` is read (the module docstring); never raises."""
    try:
        found = _Reader().read(error)
    except Exception:  # a defect of the reader must not replace the error it reads
        found = None
    return found if found is not None else _UNKNOWN


_UNKNOWN = Failure(kind=FailureKind.FATAL, infrastructure=False)


def _attribute(holder: object, name: str) -> object:
    """``holder.name``, or ``None`` when it is missing or reading it raises."""
    try:
        return getattr(holder, name, None)
    except Exception:
        return None


def _status(value: object) -> int | None:
    """An HTTP status: an integer (not a bool) from 100 to 599, read without calling
    any method the value's class defines."""
    try:
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        number = int.__index__(value)
    except Exception:  # an object whose __class__ raises
        return None
    return number if 100 <= number <= 599 else None


def _http_status(error: BaseException) -> int | None:
    for holder in (error, _attribute(error, "response")):
        if holder is None:
            continue
        for name in ("status_code", "status"):
            status = _status(_attribute(holder, name))
            if status is not None:
                return status
    return None


def _text(value: object, limit: int) -> str | None:
    """``value`` as a plain ``str`` (bytes as Latin-1, as HTTP headers are), or ``None``
    when it is neither or longer than ``limit``. No method of its class is called."""
    if isinstance(value, bytes):
        text = bytes.__getitem__(value, slice(0, limit + 1)).decode("latin-1")
    elif isinstance(value, str):
        text = str.__str__(value)
    else:
        return None
    return text if len(text) <= limit else None


def _header_pairs(headers: object) -> Iterable[object]:
    items = _attribute(headers, "items")
    if callable(items):
        pairs = items()
        return pairs if isinstance(pairs, Iterable) else ()
    return headers if isinstance(headers, list | tuple) else ()


def _retry_headers(error: BaseException) -> tuple[tuple[str, str], ...]:
    """The retry and rate-limit headers of ``error``'s response (or of ``error``, as
    aiohttp keeps them), lower-case names; what cannot be read is left out."""
    for holder in (_attribute(error, "response"), error):
        headers = None if holder is None else _attribute(holder, "headers")
        if headers is None:
            continue
        kept: list[tuple[str, str]] = []
        try:
            for pair in itertools.islice(_header_pairs(headers), MAX_HEADERS):
                if not isinstance(pair, tuple) or tuple.__len__(pair) != 2:
                    continue
                name = _text(tuple.__getitem__(pair, 0), 100)
                value = _text(tuple.__getitem__(pair, 1), MAX_HEADER_CHARS)
                if name is None or value is None:
                    continue
                name = name.lower()
                if name in _RETRY_HEADERS or name.startswith(_KEPT_PREFIXES):
                    kept.append((name, value))
        except Exception:
            pass  # headers that cannot be read further: keep what was read
        return tuple(kept)
    return ()


def _named(cls: type, pattern: re.Pattern[str]) -> bool:
    mro = _attribute(cls, "__mro__")
    if not isinstance(mro, tuple):
        return False
    return any(isinstance(base, type) and pattern.search(base.__name__) for base in mro)


def _transport_reason(error: BaseException) -> str | None:
    """Rules 3 and 4 without the ``OSError`` fallback: a timeout or a connection
    failure, by Python's class or by a name in the MRO."""
    if isinstance(error, TimeoutError):
        return TIMED_OUT
    if isinstance(error, ConnectionError):
        return CONNECTION_FAILED
    cls = type(error)
    if _named(cls, _TIMEOUT_NAME):
        return TIMED_OUT
    if _named(cls, _CONNECTION_NAME):
        return CONNECTION_FAILED
    return None


def _rampart_failure(error: RampartError) -> Failure:
    """Rule 1: rampart's own errors."""
    if getattr(type(error), "rate_limited", False) is True:
        return Failure(kind=FailureKind.RATE_LIMITED, infrastructure=True, reason=RATE_LIMITED)
    if isinstance(error, InfrastructureError):
        transient = error.transient is True and not isinstance(error, AdapterContractError)
        kind = FailureKind.TRANSIENT if transient else FailureKind.FATAL
        return Failure(kind=kind, infrastructure=True, reason="infrastructure failure")
    if isinstance(error, DriverError):
        return Failure(kind=FailureKind.FATAL, infrastructure=True, reason="driver failure")
    return _UNKNOWN


def _status_failure(error: BaseException, status: int) -> Failure:
    """Rule 2: an HTTP status."""
    headers = _retry_headers(error)
    asked_to_wait = any(name in _RETRY_HEADERS for name, _ in headers)
    if status == 429 or (status == 503 and asked_to_wait):
        kind, reason = FailureKind.RATE_LIMITED, RATE_LIMITED
    elif status == 408:
        kind, reason = FailureKind.TRANSIENT, TIMED_OUT
    elif status >= 500:
        kind, reason = FailureKind.TRANSIENT, SERVER_ERROR
    else:
        return Failure(
            kind=FailureKind.FATAL,
            infrastructure=isinstance(error, OSError),
            reason=f"HTTP {status}",
            status=status,
        )
    return Failure(kind=kind, infrastructure=True, reason=reason, status=status, headers=headers)


def _own_failure(error: BaseException) -> Failure | None:
    """Rules 1-4 on ``error`` alone; ``None`` when they say nothing about it."""
    if isinstance(error, RampartError):
        return _rampart_failure(error)
    status = _http_status(error)
    if status is not None:
        return _status_failure(error, status)
    reason = _transport_reason(error)
    if reason is not None:
        return Failure(kind=FailureKind.TRANSIENT, infrastructure=True, reason=reason)
    if isinstance(error, OSError):
        return Failure(kind=FailureKind.FATAL, infrastructure=True, reason="OS error")
    return None


def _wrapped(error: BaseException) -> BaseException | None:
    """Rule 5: the exception ``error`` wraps, if any."""
    cause = _attribute(error, "__cause__")
    if isinstance(cause, BaseException):
        return cause
    context = _attribute(error, "__context__")
    if isinstance(context, BaseException) and _attribute(error, "__suppress_context__") is not True:
        return context
    args = _attribute(error, "args")
    if isinstance(args, tuple):
        for arg in args[:4]:
            if isinstance(arg, BaseException):
                return arg
    return None


class _Reader:
    """One reading: the budget of group members and group nesting it may still spend
    (a chain's own cycle is caught by the chain)."""

    __slots__ = ("_depth", "_leaves")

    def __init__(self) -> None:
        self._leaves = MAX_LEAVES
        self._depth = MAX_LINKS

    def read(self, error: BaseException) -> Failure | None:
        """The failure ``error`` is, found along its chain; ``None``: nothing recognised."""
        wrappers: list[str] = []
        seen: set[int] = set()
        current: BaseException | None = error
        for _ in range(MAX_LINKS):
            if current is None or id(current) in seen:
                return None
            seen.add(id(current))
            if isinstance(current, BaseExceptionGroup):
                found = self._group(current)
            else:
                found = _own_failure(current)
                if found is not None and found.source is None:
                    found = attrs.evolve(found, source=current)
            if found is not None:
                inner = (*found.wrappers, *reversed(wrappers))
                return attrs.evolve(found, wrappers=inner) if wrappers else found
            if isinstance(current, PROGRAMMING_ERRORS):
                return None
            wrappers.append(type_label(type(current)))
            current = _wrapped(current)
        return None

    def _group(self, group: BaseExceptionGroup[BaseException]) -> Failure | None:
        """An exception group: infrastructure only when every member is (see the module
        docstring); the member reported is the first of the group's kind."""
        members = _attribute(group, "exceptions")
        if not isinstance(members, tuple) or not members or self._depth <= 0:
            return None
        self._depth -= 1
        if len(members) == 1 and isinstance(members[0], BaseException):
            found = self.read(members[0])
            return None if found is None else _inside(found, group)
        failures: list[Failure] = []
        for member in members:
            self._leaves -= 1
            if self._leaves < 0 or not isinstance(member, BaseException):
                return _group_of(failures, group, complete=False)
            found = self.read(member)
            if found is None or not found.infrastructure:
                return _group_of([*failures, found or _UNKNOWN], group, complete=False)
            failures.append(found)
        return _group_of(failures, group, complete=True)


def _inside(found: Failure, group: BaseExceptionGroup[BaseException]) -> Failure:
    return attrs.evolve(found, wrappers=(*found.wrappers, type_label(type(group))))


def _group_of(
    failures: list[Failure], group: BaseExceptionGroup[BaseException], *, complete: bool
) -> Failure:
    """One failure standing for a group's members (``complete``: every one was read and
    is infrastructure)."""
    if not complete:
        return Failure(kind=FailureKind.FATAL, infrastructure=False, source=group)
    kinds = [failure.kind for failure in failures]
    if all(kind in _RETRYABLE for kind in kinds):
        kind = (
            FailureKind.RATE_LIMITED
            if FailureKind.RATE_LIMITED in kinds
            else (FailureKind.TRANSIENT)
        )
    else:
        kind = FailureKind.FATAL
    shown = next((failure for failure in failures if failure.kind is kind), failures[0])
    return attrs.evolve(_inside(shown, group), kind=kind)


def failed_requests(error: BaseException) -> tuple[bytes, ...]:
    """The bodies of the HTTP requests ``error`` carries (the module docstring), the
    first found first, each once; never raises."""
    bodies: list[bytes] = []
    try:
        for current in _carriers(error):
            for holder in (current, _attribute(current, "response")):
                request = None if holder is None else _attribute(holder, "request")
                body = None if request is None else _attribute(request, "content")
                if type(body) is bytes and body not in bodies:
                    bodies.append(body)
                    if len(bodies) >= MAX_REQUESTS:
                        return tuple(bodies)
    except Exception:  # a defect of the reader must not replace the error it reads
        pass
    return tuple(bodies)


def _carriers(error: BaseException) -> Iterable[BaseException]:
    """``error`` and what it wraps (rule 5), a group's members in order: at most
    ``MAX_LINKS`` exceptions along each chain and ``MAX_LEAVES`` in all, each once."""
    seen: set[int] = set()
    pending: list[tuple[BaseException, int]] = [(error, MAX_LINKS)]
    while pending and len(seen) < MAX_LEAVES:
        current, links = pending.pop()
        if id(current) in seen or links <= 0:
            continue
        seen.add(id(current))
        yield current
        inner = _wrapped(current)
        if inner is not None:
            pending.append((inner, links - 1))
        members = _attribute(current, "exceptions")
        if isinstance(current, BaseExceptionGroup) and isinstance(members, tuple):
            pending.extend(
                (member, links - 1)
                for member in reversed(members[:MAX_LEAVES])
                if isinstance(member, BaseException)
            )
