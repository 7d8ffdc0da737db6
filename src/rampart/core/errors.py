"""The exception hierarchy: one root, a few meaningful branches.

Adapters, surfaces and drivers raise these for failures *outside* the code under
test; the execution boundary turns them into ERROR results (see
``rampart.engine._execution``). All of them pickle, so they survive an xdist hop.
"""

from __future__ import annotations

__all__ = [
    "AdapterContractError",
    "DriverError",
    "EvaluatorError",
    "InfrastructureError",
    "RampartError",
    "SchemaError",
    "UnsupportedSchemaVersionError",
]


class RampartError(Exception):
    """Root of every error rampart raises on purpose."""


class InfrastructureError(RampartError):
    """An external dependency (agent, surface, network) failed.

    ``transient=True`` marks a failure worth retrying (a dropped connection, a 503);
    rate limiters retry those and keep their concurrency window.
    """

    def __init__(self, message: str = "", *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild_infrastructure_error, (type(self), self.args, self.__dict__))


def _rebuild_infrastructure_error(
    cls: type[InfrastructureError], args: tuple[object, ...], state: dict[str, object]
) -> InfrastructureError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class AdapterContractError(InfrastructureError):
    """An adapter or its session does not honour the ``AgentAdapter`` / ``Session`` contract.

    Raised by the engine's contract checks (a missing ``create_session_async``, a
    ``send_async`` that returns something other than a ``Response``, ...) so a
    mis-implemented adapter yields an ERROR result saying what is wrong with it,
    rather than a traceback from deep inside the engine.
    """


class DriverError(RampartError):
    """A prompt driver could not produce its next prompt."""


class EvaluatorError(InfrastructureError):
    """An evaluator failed for a reason that is not a verdict (a judge outage)."""


class SchemaError(RampartError, ValueError):
    """A trace record is malformed or violates the ``rampart.trace`` contract.

    Messages name the failing JSON path (``$.result.turns[2].turn_number``) and never
    echo producer data.
    """


class UnsupportedSchemaVersionError(SchemaError):
    """The record's ``version`` is not a major this reader supports (fails closed)."""
