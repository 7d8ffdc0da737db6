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
    """Re-raise ``group``, or its only member when it holds exactly one.

    The member keeps its own chain: re-raising it inside the handler would set its
    ``__context__`` to the group (and ``from None`` would erase its ``__cause__``), so
    ``__cause__``, ``__context__`` and ``__suppress_context__`` are restored as they
    were when it was first raised.
    """
    if len(group.exceptions) == 1:
        sole = group.exceptions[0]
        if isinstance(sole, BaseExceptionGroup):
            raise_unwrapped(sole)
        cause, context, suppress = sole.__cause__, sole.__context__, sole.__suppress_context__
        try:
            raise sole
        finally:
            sole.__cause__ = cause
            sole.__context__ = context
            sole.__suppress_context__ = suppress  # after __cause__, which sets it
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
