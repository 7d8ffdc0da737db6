"""Injection lifecycle for XPIA: activate handles concurrently, wait until ready, remove.

``active_injections(handles)`` is an async context manager:

* **activation** enters every handle concurrently. A failing activation does not
  cancel its siblings mid-write (a payload written but never registered for removal
  would be orphaned); every activation finishes, then the failures are raised
  together. A cancellation from outside (a timeout) still cancels them all.
* **readiness** waits (``wait_until_ready_async`` or ``wait_until_ready``, whichever
  the handle defines) run concurrently once every handle is active.
* **removal** exits every handle that activated, exactly once, concurrently and
  shielded from cancellation: on success, on error and on cancellation alike. A
  removal failure is raised (the execution boundary turns it into an ERROR result);
  if the body had already failed, both are raised together.

So removals always equal successful activations.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import anyio

from rampart.core.injection import readiness_wait
from rampart.engine._exceptions import combine, raise_unwrapped
from rampart.engine._policies import has_method

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
        await handle.__aenter__()
    except Exception as error:  # collected and raised once every sibling has finished
        errors.append(error)
        return
    active.append(handle)


async def _activate_all(handles: Sequence[InjectionHandle], active: list[InjectionHandle]) -> None:
    if len(handles) == 1:
        await handles[0].__aenter__()
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
            await handle.__aexit__(None, None, None)
        else:
            await handle.__aexit__(type(exc), exc, exc.__traceback__)
    except Exception as error:  # every removal must run; failures are raised together
        errors.append(error)


async def _remove_all(
    active: list[InjectionHandle], exc: BaseException | None
) -> list[BaseException]:
    errors: list[BaseException] = []
    if not active:
        return errors
    with anyio.CancelScope(shield=True):
        if len(active) == 1:
            await _remove(active[0], exc, errors)
        else:
            async with anyio.create_task_group() as tg:
                for handle in active:
                    tg.start_soon(_remove, handle, exc, errors)
    return errors


class _ActiveInjections:
    """What ``active_injections`` returns.

    A class rather than an ``@asynccontextmanager`` generator: it is entered once per
    execution, and the generator machinery cost about 2 us each time
    (``benchmarks/bench_engine.py``).
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
            await self._remove(exc)  # removal must run however activation ended
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


def check_handles(value: object, *, name: str) -> tuple[InjectionHandle, ...]:
    """``value`` (``None``, one handle, or a list of handles) as a tuple of handles.

    Anything else raises ``TypeError`` naming ``name`` (the caller's argument).
    """
    if value is None:
        return ()
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            if not _is_handle(item):
                raise TypeError(
                    f"{name}[{index}] must be an InjectionHandle, got {type(item).__name__}"
                )
        return tuple(value)
    if _is_handle(value):
        return (value,)  # type: ignore[return-value]
    raise TypeError(
        f"{name} must be an InjectionHandle, a list of InjectionHandle, or None, "
        f"got {type(value).__name__}"
    )


def _is_handle(value: object) -> bool:
    return (
        has_method(value, "__aenter__")
        and has_method(value, "__aexit__")
        and hasattr(value, "payload_id")
        and hasattr(value, "surface_name")
    )
