"""Fresh function-scoped fixtures for each trial clone (built on pytest internals).

RAMPART runs each trial clone as its own pytest item, so every clone gets its own
function-scoped fixtures: a fresh adapter, a fresh surface, its own ``tmp_path``.
rampart runs the clones concurrently inside one item, and pytest has no public API
to set a fixture up more than once per item, nor inside a task the test started.
This module is the one place that reads pytest's fixture resolution, so that a
pytest upgrade that moves it breaks here and nowhere else (the tests in
``tests/pytest_plugin/test_clone_fixtures.py`` run against the installed pytest):

- ``item._fixtureinfo.name2fixturedefs`` and ``item.fixturenames`` (the closure):
  which ``FixtureDef`` each requested name resolves to, overrides included;
- ``FixtureDef.func`` / ``argnames`` / ``params`` / ``scope``, and ``item.callspec``
  (a parametrized fixture's ``param`` and the scope parametrize gave it);
- ``resolve_fixture_function`` (a fixture defined in a test class, bound to the
  test's instance), and ``SubRequest`` / ``TopRequest``, subclassed so that the
  ``request`` a clone's fixture receives registers its finalizers on the clone.

``plan`` runs at setup, before pytest fills the fixtures. It splits the item's
closure into per-clone fixtures and shared ones, and puts a placeholder into
``item.funcargs`` for each per-clone name, so pytest does not set it up for the item.
Each clone then sets the per-clone fixtures up in its own task (``CloneFixtures``), in
pytest's order (dependencies first), and tears them down in reverse when the clone
ends. Higher scopes are shared. A function-scoped fixture is shared (and named once
in a ``RAMPART WARNING`` line) when it cannot be re-created per clone: pytest's
fixtures tied to the item (``capsys``, ``caplog``, ``monkeypatch``, ...), an async
fixture of a synchronous test, an override of a wider-scoped fixture of the same
name. ``@pytest.mark.trial(shared_fixtures=[...])`` shares fixtures explicitly. What a
shared fixture depends on is shared too (pytest sets it up for the shared one).

A fixture that fails in one clone's setup or teardown makes that clone an ERROR
result (``fixture_error``); the other clones run on. A fixture that skips or xfails
in one clone's setup (``pytest.skip``, ``importorskip``, ``pytest.xfail``,
``unittest.SkipTest``) makes that clone not run (``CloneNotRun``: it counts as a
clone that recorded nothing, never as evidence of safety); in a teardown it changes
nothing (the clone ran and was judged). ``pytest.exit`` still ends the run, after
the clone's finalizers ran.
"""

from __future__ import annotations

import inspect
import unittest
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

import anyio
import attrs
import pytest
from _pytest.compat import NOTSET
from _pytest.fixtures import (
    FixtureDef,
    SubRequest,
    TopRequest,
    resolve_fixture_function,
)
from _pytest.python import get_direct_param_fixture_func
from _pytest.scope import Scope

from rampart._text import one_line
from rampart.core.result import Result, SafetyStatus
from rampart.pytest_plugin._groups import CloneNotRun

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.engine._internal import ResultCollector

__all__ = [
    "ITEM_BOUND",
    "CloneFixtures",
    "ClonePlan",
    "plan",
]

#: pytest's fixtures that are tied to the item (its capture, its log handler, its
#: report, one patch set undone at its end): shared by the clones, with a warning.
ITEM_BOUND: Final = frozenset(
    {
        "capsys",
        "capsysbinary",
        "capfd",
        "capfdbinary",
        "capteesys",
        "caplog",
        "recwarn",
        "monkeypatch",
        "record_property",
        "record_xml_attribute",
        "record_testsuite_property",
        "subtests",
        "pytester",
        "testdir",
    }
)

# Plugins whose function-scoped fixtures are infrastructure (event-loop runners, the
# backend's name): shared without a warning. The async plugins read ``anyio_backend``
# (wherever it is defined) from the item's own values, so it is shared too.
_INFRASTRUCTURE = ("pytest_asyncio", "anyio")
_INFRASTRUCTURE_NAMES = frozenset(
    {"anyio_backend", "anyio_backend_name", "anyio_backend_options", "event_loop_policy"}
)

_WARNED_KEY = pytest.StashKey[set[str]]()

#: Outcomes a fixture can raise that say "do not run this test": in a clone's setup
#: they make that clone not run (pytest would skip or xfail its item), never the item.
_NOT_RUN: Final = (pytest.skip.Exception, pytest.xfail.Exception, unittest.SkipTest)

#: Raised in a clone's fixture, it still ends the run (after the clone's finalizers).
_EXIT: Final = pytest.exit.Exception

Kind = Literal["sync", "gen", "async", "agen"]
Key = tuple[str, int]  # a fixture name, and how deep in its own overrides it is


class _PerClone:
    """The placeholder pytest sees for a per-clone fixture (it never reaches a test)."""

    def __repr__(self) -> str:
        return "<set up per trial clone>"


PER_CLONE: Final = _PerClone()


@attrs.frozen
class _Step:
    """One per-clone fixture: how to call it and where its arguments come from."""

    key: Key
    fixturedef: FixtureDef[Any]
    func: Callable[..., Any]
    kind: Kind
    # argname -> the per-clone key, or None: the item's (shared) value.
    args: tuple[tuple[str, Key | None], ...]
    wants_request: bool
    param: object
    param_index: int
    scope: Scope


@attrs.frozen
class ClonePlan:
    """Which of an item's fixtures each clone sets up, in setup order."""

    item: pytest.Function
    steps: tuple[_Step, ...]
    # The test's own arguments: argname -> per-clone key, or None (the item's value).
    test_args: tuple[tuple[str, Key | None], ...]
    test_wants_request: bool
    shared: tuple[str, ...]  # function-scoped fixtures the clones share

    @property
    def empty(self) -> bool:
        """Nothing to do per clone (no per-clone fixture, no ``request`` argument)."""
        return not self.steps and not self.test_wants_request

    def for_clone(self, collector: ResultCollector) -> CloneFixtures:
        return CloneFixtures(self, collector)


def plan(
    item: pytest.Function, *, shared: tuple[str, ...], warn: Callable[[str], None]
) -> ClonePlan:
    """Split ``item``'s fixtures into per-clone and shared ones, and keep pytest from
    setting the per-clone ones up for the item (a placeholder in ``funcargs``).

    ``shared`` names the fixtures the marker shares explicitly; ``warn`` receives the
    line naming the fixtures shared because they cannot be set up per clone (each
    fixture once per session). Called in setup, before pytest fills the fixtures.
    """
    return _Planner(item, set(shared), warn).build()


class _Planner:
    def __init__(
        self, item: pytest.Function, explicit: set[str], warn: Callable[[str], None]
    ) -> None:
        self.item = item
        self.warn = warn
        self.explicit = explicit
        self.defs = item._fixtureinfo.name2fixturedefs
        self.callspec = getattr(item, "callspec", None)
        self.request = item._request
        self.nodes: dict[Key, FixtureDef[Any]] = {}
        self.deps: dict[Key, list[tuple[str, Key | None]]] = {}
        self.order: list[Key] = []
        self.shared: dict[Key, str | None] = {}  # shared key -> why (None: silently)
        self.is_async = inspect.iscoroutinefunction(item.obj)

    def build(self) -> ClonePlan:
        closure = [name for name in self.item.fixturenames if name != "request"]
        for name in closure:
            self._visit(name, 0)
        self._share_dependencies()
        per_clone = [key for key in self.order if key not in self.shared]
        steps = tuple(self._step(key) for key in per_clone)
        per_clone_set = set(per_clone)
        for key in per_clone:
            if key[1] == 0:
                self.item.funcargs[key[0]] = PER_CLONE
        argnames = self.item._fixtureinfo.argnames
        test_args = tuple(
            (name, (name, 0) if (name, 0) in per_clone_set else None)
            for name in argnames
            if name != "request"
        )
        function_shared = tuple(
            sorted({key[0] for key in self.shared if key in self.nodes and self._function(key)})
        )
        self._warn({key[0]: why for key, why in self.shared.items() if why is not None})
        return ClonePlan(
            item=self.item,
            steps=steps,
            test_args=test_args,
            test_wants_request="request" in argnames,
            shared=function_shared,
        )

    # -- resolution ---------------------------------------------------------------

    def _visit(self, name: str, depth: int) -> None:
        key = (name, depth)
        if key in self.nodes:
            return
        fixturedefs = self.defs.get(name)
        if not fixturedefs or depth >= len(fixturedefs):
            # Resolved dynamically (or a lookup error pytest reports): the item's value.
            return
        fixturedef = fixturedefs[-1 - depth]
        self.nodes[key] = fixturedef
        deps: list[tuple[str, Key | None]] = []
        for argname in fixturedef.argnames:
            if argname == "request":
                deps.append((argname, None))
                continue
            dep_depth = depth + 1 if argname == name else 0
            self._visit(argname, dep_depth)
            dep = (argname, dep_depth)
            deps.append((argname, dep if dep in self.nodes else None))
        self.deps[key] = deps
        self.order.append(key)  # after its dependencies: setup order
        why = self._why_shared(key, fixturedef)
        if why is not False:
            self.shared[key] = why

    def _function(self, key: Key) -> bool:
        return self._scope(key) is Scope.Function

    def _scope(self, key: Key) -> Scope:
        name = key[0]
        if key[1] == 0 and self.callspec is not None and name in self.callspec.params:
            # The parametrize invocation's scope decides how long the value lives.
            scope: Scope = self.callspec._arg2scope.get(name, self.nodes[key]._scope)
            return scope
        return self.nodes[key]._scope

    def _why_shared(self, key: Key, fixturedef: FixtureDef[Any]) -> str | Literal[False] | None:
        """Why ``key`` is shared (None: silently), or False: it is set up per clone."""
        name = key[0]
        if not self._function(key):
            return None  # a higher scope: shared, as in RAMPART
        if fixturedef.func is get_direct_param_fixture_func:
            return None  # a directly parametrized argument: the same value anyway
        if name in self.explicit or name in _INFRASTRUCTURE_NAMES:
            return None
        module = getattr(fixturedef.func, "__module__", "") or ""
        if module.split(".")[0] in _INFRASTRUCTURE:
            return None
        if name in ITEM_BOUND:
            return "pytest ties it to the test item"
        func = fixturedef.func
        if not self.is_async and (
            inspect.iscoroutinefunction(func) or inspect.isasyncgenfunction(func)
        ):
            return "an async fixture of a synchronous test"
        if key[1] == 0 and len(self.defs.get(name, ())) > 1 and name in fixturedef.argnames:
            overridden = (name, 1)
            if overridden in self.nodes and not self._function(overridden):
                return f"it overrides a {self._scope(overridden).value}-scoped {name!r}"
        return False

    def _share_dependencies(self) -> None:
        """What a shared function-scoped fixture depends on is shared too: pytest sets
        it up for the item, with its dependencies."""
        todo = [key for key in self.shared if key in self.nodes]
        while todo:
            key = todo.pop()
            for _argname, dep in self.deps.get(key, ()):
                if dep is not None and dep not in self.shared:
                    self.shared[dep] = None
                    todo.append(dep)

    def _step(self, key: Key) -> _Step:
        fixturedef = self.nodes[key]
        func = resolve_fixture_function(fixturedef, self.request)
        args = tuple(
            (argname, dep if dep is not None and dep not in self.shared else None)
            for argname, dep in self.deps[key]
        )
        param: object = _NO_PARAM
        param_index = 0
        if key[1] == 0 and self.callspec is not None and key[0] in self.callspec.params:
            param = self.callspec.params[key[0]]
            param_index = self.callspec.indices[key[0]]
        return _Step(
            key=key,
            fixturedef=fixturedef,
            func=func,
            kind=_kind(func),
            args=args,
            wants_request="request" in fixturedef.argnames,
            param=param,
            param_index=param_index,
            scope=self._scope(key),
        )

    def _warn(self, reasons: dict[str, str]) -> None:
        """Name each fixture shared for a reason once per session."""
        warned = self.item.config.stash.setdefault(_WARNED_KEY, set())
        fresh = {name: why for name, why in reasons.items() if name not in warned}
        if not fresh:
            return
        warned.update(fresh)
        listed = "; ".join(f"{name!r} ({why})" for name, why in sorted(fresh.items()))
        self.warn(
            f"shared fixtures: the trial clones of {self.item.nodeid} share "
            f"function-scoped fixture(s) that cannot be set up per clone: {listed}. "
            "Each clone gets its own copy of every other function-scoped fixture; list "
            "these in @pytest.mark.trial(shared_fixtures=[...]) to share them knowingly"
        )


_NO_PARAM: Final = object()


def _kind(func: Callable[..., Any]) -> Kind:
    if inspect.isasyncgenfunction(func):
        return "agen"
    if inspect.iscoroutinefunction(func):
        return "async"
    if inspect.isgeneratorfunction(func):
        return "gen"
    return "sync"


# -- one clone's fixtures --------------------------------------------------------------


class CloneFixtures:
    """The per-clone fixtures of one clone: set up in its task, torn down at its end.

    ``setup`` / ``setup_sync`` return the test's keyword arguments, or None when a
    fixture failed (the clone then has an ERROR result and its body does not run) or
    skipped the clone (its failure is then ``CloneNotRun``). ``teardown`` /
    ``teardown_sync`` run every finalizer in reverse order; a failing one is an ERROR
    result of the clone too.
    """

    def __init__(self, plan: ClonePlan, collector: ResultCollector) -> None:
        self._plan = plan
        self._collector = collector
        self._values: dict[Key, Any] = {}
        self._finalizers: list[tuple[str, Callable[[], object]]] = []
        self._node: _CloneNode | None = None
        self.current = ""  # the fixture being set up (for the error line)
        self.not_run: CloneNotRun | None = None  # a fixture skipped this clone

    # -- what the requests of this clone see ------------------------------------------

    @property
    def node(self) -> _CloneNode:
        if self._node is None:
            self._node = _CloneNode(self._plan.item, self)
        return self._node

    def add_finalizer(self, finalizer: Callable[[], object]) -> None:
        self._finalizers.append((self.current, finalizer))

    def value_of(self, name: str) -> Any:
        """``request.getfixturevalue(name)`` in this clone."""
        key = (name, 0)
        if key in self._values:
            return self._values[key]
        return self._plan.item._request.getfixturevalue(name)

    # -- setup ------------------------------------------------------------------------

    async def setup(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        try:
            for step in self._plan.steps:
                self.current = step.key[0]
                self._values[step.key] = await self._call(step)
        except _NOT_RUN as outcome:
            self._skipped(outcome)
            return None
        except _EXIT:
            raise
        except (Exception, pytest.fail.Exception) as exc:
            self._error("setup", exc)
            return None
        self.current = ""
        return self._test_kwargs(kwargs)

    def setup_sync(self, kwargs: dict[str, Any]) -> dict[str, Any] | None:
        try:
            for step in self._plan.steps:
                self.current = step.key[0]
                self._values[step.key] = self._call_sync(step)
        except _NOT_RUN as outcome:
            self._skipped(outcome)
            return None
        except _EXIT:
            raise
        except (Exception, pytest.fail.Exception) as exc:
            self._error("setup", exc)
            return None
        self.current = ""
        return self._test_kwargs(kwargs)

    def _skipped(self, outcome: BaseException) -> None:
        """A fixture skipped (or xfailed) this clone in its setup: as pytest would skip
        the clone's own item, the clone does not run; the group counts it as a clone
        that recorded nothing (never as evidence of safety)."""
        kind = "xfail" if isinstance(outcome, pytest.xfail.Exception) else "skip"
        reason = one_line(str(getattr(outcome, "msg", None) or outcome)) or "no reason given"
        self.not_run = CloneNotRun(
            f"fixture {self.current!r} called pytest.{kind}() in this trial clone's setup, "
            f"so the clone did not run ({reason})",
            outcome=outcome,
        )

    def _test_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = dict(kwargs)
        for name, key in self._plan.test_args:
            if key is not None:
                bound[name] = self._values[key]
        if self._plan.test_wants_request:
            bound["request"] = _CloneTopRequest(self._plan.item, self)
        return bound

    def _arguments(self, step: _Step) -> dict[str, Any]:
        funcargs = self._plan.item.funcargs
        arguments = {
            name: funcargs[name] if key is None else self._values[key] for name, key in step.args
        }
        if step.wants_request:
            arguments["request"] = _CloneSubRequest(step, self)
        return arguments

    async def _call(self, step: _Step) -> Any:
        arguments = self._arguments(step)
        if step.kind == "async":
            return await step.func(**arguments)
        if step.kind == "agen":
            generator = step.func(**arguments)
            try:
                value = await generator.__anext__()
            except StopAsyncIteration:
                raise ValueError(f"{step.key[0]} did not yield a value") from None
            self.add_finalizer(lambda: _finish_async(step.key[0], generator))
            return value
        return self._start_sync(step, arguments)

    def _call_sync(self, step: _Step) -> Any:
        return self._start_sync(step, self._arguments(step))

    def _start_sync(self, step: _Step, arguments: dict[str, Any]) -> Any:
        if step.kind == "gen":
            generator = step.func(**arguments)
            try:
                value = next(generator)
            except StopIteration:
                raise ValueError(f"{step.key[0]} did not yield a value") from None
            self.add_finalizer(lambda: _finish_sync(step.key[0], generator))
            return value
        return step.func(**arguments)

    # -- teardown ---------------------------------------------------------------------

    async def teardown(self) -> None:
        # Shielded: a clone cancelled by early stop (or an interrupt) still closes what
        # its fixtures opened.
        exit_: BaseException | None = None
        with anyio.CancelScope(shield=True):
            while self._finalizers:
                name, finalizer = self._finalizers.pop()
                try:
                    outcome = finalizer()
                    if inspect.isawaitable(outcome):
                        await outcome
                except BaseException as exc:
                    exit_ = exit_ or self._torn_down(name, exc)
        self._values.clear()
        if exit_ is not None:
            raise exit_

    def teardown_sync(self) -> None:
        exit_: BaseException | None = None
        while self._finalizers:
            name, finalizer = self._finalizers.pop()
            try:
                outcome = finalizer()
                if inspect.isawaitable(outcome):  # never for a synchronous test's fixtures
                    _close(outcome)
            except BaseException as exc:
                exit_ = exit_ or self._torn_down(name, exc)
        self._values.clear()
        if exit_ is not None:
            raise exit_

    def _torn_down(self, name: str, exc: BaseException) -> BaseException | None:
        """A finalizer raised ``exc``: a skip or xfail changes nothing (the clone ran and
        was judged), a failure is an ERROR result of the clone; ``pytest.exit`` is
        returned, to end the run once the other finalizers ran; anything else (an
        interrupt, a cancellation) propagates."""
        if isinstance(exc, _NOT_RUN):
            return None
        if isinstance(exc, _EXIT):
            return exc
        if isinstance(exc, Exception | pytest.fail.Exception):
            self.current = name
            self._error("teardown", exc)
            return None
        raise exc

    def _error(self, phase: str, exc: BaseException) -> None:
        """A failing fixture makes the clone an ERROR result: the clone was not tested
        (setup), or what it set up did not end cleanly (teardown)."""
        fixture = f"fixture {self.current!r}" if self.current else "a fixture finalizer"
        self._collector.add(
            Result(
                status=SafetyStatus.ERROR,
                summary=(
                    f"{fixture} failed in this trial clone's {phase}: "
                    f"{type(exc).__name__}: {one_line(str(exc))}"
                ),
                metadata={"rampart.fixture_error": phase},
            )
        )


def _close(awaitable: object) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


def _finish_sync(name: str, generator: Iterator[Any]) -> None:
    try:
        next(generator)
    except StopIteration:
        return
    raise ValueError(f"fixture function {name!r} has more than one 'yield'")


async def _finish_async(name: str, generator: Any) -> None:
    try:
        await generator.__anext__()
    except StopAsyncIteration:
        return
    raise ValueError(f"fixture function {name!r} has more than one 'yield'")


# -- the clone's ``request`` objects ---------------------------------------------------


class _CloneNode:
    """``request.node`` in a clone: the item, with the clone's own stash (a copy taken
    when the clone's fixtures need it) and ``addfinalizer`` on the clone."""

    def __init__(self, item: pytest.Function, clone: CloneFixtures) -> None:
        self._item = item
        self._clone = clone
        stash = pytest.Stash()
        stash._storage.update(item.stash._storage)
        self.stash = stash

    def addfinalizer(self, finalizer: Callable[[], object]) -> None:
        self._clone.add_finalizer(finalizer)

    @property  # type: ignore[misc]  # isinstance(request.node, pytest.Function) holds
    def __class__(self) -> type:
        return type(self._item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._item, name)

    def __repr__(self) -> str:
        return f"<trial clone of {self._item!r}>"


class _CloneSubRequest(SubRequest):  # type: ignore[misc]  # pytest marks it @final
    """The ``request`` a per-clone fixture receives."""

    def __init__(self, step: _Step, clone: CloneFixtures) -> None:
        param = NOTSET if step.param is _NO_PARAM else step.param
        item = clone._plan.item
        super().__init__(
            item._request, step.scope, param, step.param_index, step.fixturedef, _ispytest=True
        )
        self._clone = clone

    @property
    def node(self) -> Any:
        return self._clone.node

    def addfinalizer(self, finalizer: Callable[[], object]) -> None:
        self._clone.add_finalizer(finalizer)

    def getfixturevalue(self, argname: str) -> Any:
        return self._clone.value_of(argname)


class _CloneTopRequest(TopRequest):  # type: ignore[misc]  # pytest marks it @final
    """The ``request`` a trial test receives in one clone."""

    def __init__(self, item: pytest.Function, clone: CloneFixtures) -> None:
        super().__init__(item, _ispytest=True)
        self._clone = clone

    @property
    def node(self) -> Any:
        return self._clone.node

    def addfinalizer(self, finalizer: Callable[[], object]) -> None:
        self._clone.add_finalizer(finalizer)

    def getfixturevalue(self, argname: str) -> Any:
        return self._clone.value_of(argname)
