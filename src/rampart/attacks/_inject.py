"""Injection lifecycle for XPIA: activate handles concurrently, wait until ready, remove.

``active_injections(handles)`` is an async context manager:

* **activation** enters every handle concurrently. A failing activation does not
  cancel its siblings mid-write (a payload written but never registered for removal
  would be orphaned); every activation finishes, then the failures are raised
  together. A cancellation from outside (a timeout) still cancels them all.
* **readiness** waits (``wait_until_ready_async`` or ``wait_until_ready``, whichever
  the handle defines) run concurrently once every handle is active.
* **removal** exits every handle that activated, exactly once, concurrently and
  shielded from cancellation (by the session actor's cleanup scope, which leaves this
  context; see ``_ActiveInjections``): on success, on error and on cancellation alike. A
  removal failure is raised (the execution boundary turns it into an ERROR result);
  if the body had already failed, both are raised together.

So removals always equal successful activations. Handles are user code: every
``__aenter__`` / ``__aexit__`` goes through ``rampart.core._contract``, so a handle that
is not an async context manager is an ``InjectionContractError`` (an ERROR result).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import anyio

from rampart._checks import check_items, invalid
from rampart.core._internal import enter_handle, exit_handle, is_handle
from rampart.core.injection import readiness_wait
from rampart.engine._internal import combine, raise_unwrapped

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from contextlib import AbstractAsyncContextManager
    from types import TracebackType

    from rampart.core.injection import InjectionHandle

__all__ = ["active_injections", "check_handles"]


async def _activate(
    handle: InjectionHandle, active: list[InjectionHandle], errors: list[BaseException]
) -> None:
    try:
        await enter_handle(handle)
    except Exception as error:  # collected and raised once every sibling has finished
        errors.append(error)
        return
    active.append(handle)


async def _activate_all(handles: Sequence[InjectionHandle], active: list[InjectionHandle]) -> None:
    if len(handles) == 1:
        await enter_handle(handles[0])
        active.append(handles[0])
        return
    errors: list[BaseException] = []
    async with anyio.create_task_group() as tg:
        for handle in handles:
            tg.start_soon(_activate, handle, active, errors)
    if errors:
        raise combine("injection activation failed", errors)


async def _wait(wait: Callable[[], object]) -> None:
    outcome = wait()
    if inspect.isawaitable(outcome):
        await outcome


async def _wait_until_ready(handles: Sequence[InjectionHandle]) -> None:
    waits = [wait for handle in handles if (wait := readiness_wait(handle)) is not None]
    if len(waits) == 1:
        await _wait(waits[0])
    elif waits:
        try:
            async with anyio.create_task_group() as tg:
                for wait in waits:
                    tg.start_soon(_wait, wait)
        except BaseExceptionGroup as group:
            raise_unwrapped(group)


async def _remove(
    handle: InjectionHandle, exc: BaseException | None, errors: list[BaseException]
) -> None:
    try:
        if exc is None:
            await exit_handle(handle, None, None, None)
        else:
            await exit_handle(handle, type(exc), exc, exc.__traceback__)
    except Exception as error:  # every removal must run; failures are raised together
        errors.append(error)


async def _remove_all(
    active: list[InjectionHandle], exc: BaseException | None
) -> list[BaseException]:
    """Exit every active handle; the caller shields this from cancellation."""
    errors: list[BaseException] = []
    if len(active) == 1:
        await _remove(active[0], exc, errors)
    elif active:
        async with anyio.create_task_group() as tg:
            for handle in active:
                tg.start_soon(_remove, handle, exc, errors)
    return errors


class _ActiveInjections:
    """What ``active_injections`` returns.

    Its exit expects to run shielded from cancellation: XPIA returns it as its trace
    scope, which the engine leaves inside the cancel scope the session's close
    shielded (``TraceExecution._trace_scope``), so removal costs no cancel scope of its
    own. A failed activation is cleaned up under a shield of its own, since that
    happens before the engine's cleanup. (A class rather than an
    ``@asynccontextmanager`` generator: it is entered once per execution, and the
    generator machinery cost about 2 us each time; ``benchmarks/bench_engine.py``.)
    """

    __slots__ = ("_active", "_handles")

    def __init__(self, handles: Sequence[InjectionHandle]) -> None:
        self._handles = handles
        self._active: list[InjectionHandle] = []

    async def __aenter__(self) -> None:
        if not self._handles:
            return
        try:
            await _activate_all(self._handles, self._active)
            await _wait_until_ready(self._handles)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):  # removal must run however activation ended
                await self._remove(exc)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._remove(exc)

    async def _remove(self, exc: BaseException | None) -> None:
        removal_errors = await _remove_all(self._active, exc)
        if not removal_errors:
            return
        if exc is None:
            raise combine("injection removal failed", removal_errors)
        raise combine(
            "execution failed and injection removal failed", [exc, *removal_errors]
        ) from None


def active_injections(handles: Sequence[InjectionHandle]) -> AbstractAsyncContextManager[None]:
    """Hold every handle active (and ready) for the duration of the block."""
    return _ActiveInjections(handles)


_HANDLE = "an InjectionHandle (an async context manager with payload_id and surface_name)"


def check_handles(owner: str, name: str, value: object) -> tuple[InjectionHandle, ...]:
    """``value`` (``None``, one handle, or a list of handles) as a tuple of handles.

    Anything else raises ``TypeError`` naming ``owner``'s argument ``name``; a surface
    passed where its handle belongs gets a hint to call ``inject``.
    """
    if value is None:
        return ()
    if is_handle(value):  # the common case (one handle) first: no checker is built
        return (value,)  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        for item in value:
            if not is_handle(item):
                return tuple(check_items(owner, name, value, _checker(owner), expected=_HANDLE))
        return tuple(value)  # the common case: no message is built
    return (_checker(owner)(name, value),)


def _checker(owner: str) -> Callable[[str, object], InjectionHandle]:
    def check(name: str, value: object) -> InjectionHandle:
        if is_handle(value):
            return value  # type: ignore[return-value]
        if not isinstance(value, type) and callable(getattr(value, "inject", None)):
            raise invalid(
                owner, name, f"{_HANDLE}; for a Surface pass surface.inject(payload=...)", value
            )
        raise invalid(owner, name, f"{_HANDLE}, a list of them, or None", value)

    return check
