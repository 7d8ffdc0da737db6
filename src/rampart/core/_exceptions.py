"""Exception-group plumbing for the engine's internal task groups.

The engine's task groups are an implementation detail: a caller who runs one
execution should see the exception that actually happened, not a group wrapping it.
So a group holding exactly one exception is unwrapped, and several concurrent
failures are raised together as one group.
"""

from __future__ import annotations

from typing import NoReturn

__all__ = ["combine", "raise_unwrapped"]


def raise_unwrapped(group: BaseExceptionGroup[BaseException]) -> NoReturn:
    """Re-raise ``group``, or its only member when it holds exactly one."""
    if len(group.exceptions) == 1:
        sole = group.exceptions[0]
        if isinstance(sole, BaseExceptionGroup):
            raise_unwrapped(sole)
        raise sole from None
    raise group


def combine(message: str, errors: list[BaseException]) -> BaseException:
    """One exception standing for ``errors``: the error itself, or a group of all of them.

    The group is an ``ExceptionGroup`` when every member is an ``Exception`` (so the
    error boundary can inspect it) and a ``BaseExceptionGroup`` otherwise (so a
    cancellation inside it keeps propagating).
    """
    if len(errors) == 1:
        return errors[0]
    if all(isinstance(error, Exception) for error in errors):
        return ExceptionGroup(message, [e for e in errors if isinstance(e, Exception)])
    return BaseExceptionGroup(message, errors)
