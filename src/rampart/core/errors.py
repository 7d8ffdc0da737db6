"""Every exception rampart defines, in one tree.

Adapters, surfaces, drivers and evaluators raise these for failures *outside* the code
under test; the execution boundary (``rampart.engine._execution``) turns the
``InfrastructureError`` and ``DriverError`` branches into ERROR results. All of them
pickle, so they survive an xdist hop. Classes defined in other packages are listed
with their module; a test checks that this tree names every exception class rampart
defines, so it cannot drift::

    Exception
    ├── RampartError                    root of every error rampart raises on purpose
    │   ├── InfrastructureError         something outside rampart failed (transient=)
    │   │   ├── ContractError           user code broke the protocol rampart calls it by
    │   │   │   ├── AdapterContractError    an adapter or its session
    │   │   │   ├── EvaluatorContractError  an evaluator (also an EvaluatorError)
    │   │   │   ├── DriverContractError     a prompt driver (also a DriverError)
    │   │   │   ├── ConverterContractError  a payload converter
    │   │   │   └── InjectionContractError  a surface or an injection handle
    │   │   ├── EvaluatorError          an evaluator failed or raised (a judge outage)
    │   │   ├── RateLimitedError        rampart.limits: the agent said "slow down"
    │   │   └── MalformedResponseError  rampart.adapters: a reply off the dialect
    │   ├── DriverError                 a prompt driver failed or raised
    │   ├── SchemaError (ValueError)    a trace record breaks the rampart.trace contract
    │   │   ├── UnsupportedSchemaVersionError   a version this reader does not know
    │   │   └── PathError               rampart.codec (internal): a rule broken at a
    │   │                               JSON path; surfaces as a SchemaError
    │   ├── ReportError                 rampart.reporting: a report that would misstate
    │   │                               the run was not written
    │   └── ScriptExhaustedError        rampart.testing: a ScriptedAgent ran out of replies
    ├── FrozenInstanceError             an assignment to a frozen model (Turn, PopulationRef);
    │                                   also attrs' and dataclasses' FrozenInstanceError
    ├── PayloadError                    rampart.core.types: a payload's format and artifact
    │                                   disagree (a TypeError and a ValueError)
    ├── BadRequest                      rampart.testing.server: a 4xx answer of the test
    │                                   server (never leaves the server)
    ├── BadModelInput (ValueError)      rampart.testing.server: a request a simulated
    │   │                               model cannot answer (a 400 answer saying why)
    │   ├── UnknownModelMode            a sim-* model name with an unknown mode suffix
    │   └── AgentDojoModelError         a request sim-agentdojo cannot answer
    ├── _PolicyFailed                   rampart.testing.server (internal): a user's
    │                                   tool_policy raised (a 500 answer saying so)
    ├── InvalidAnswer                   rampart.evaluators (internal): an LLM judge's reply
    │                                   is not a verdict; surfaces as UNDETERMINED
    ├── CliError                        rampart.cli (internal): a command line input problem
    │                                   (a missing file, a wrong format); exit status 2
    ├── CloneCancelled                  rampart.pytest_plugin (internal): a trial clone's
    │                                   own code raised a cancellation; a failed clone
    ├── CloneNotRun                     rampart.pytest_plugin (internal): a trial clone's
    │                                   fixture skipped or xfailed it; counts as no result
    ├── DamagedState (ValueError)       rampart.limits (internal): a stored learned rate's
    │                                   state is damaged or out of range; rewritten afresh
    ├── _Failed (AssertionError)        rampart.pytest_plugin (internal): what is kept of
    │                                   a finished clone's failed assertion
    ├── NoResultWarning (UserWarning)   rampart.pytest_plugin: a harm-marked test recorded
    │                                   no result (ini rampart_harm_without_result = warn)
    ├── _Disconnected                   rampart.testing.server (internal): a client left
    ├── _Passthrough                    rampart.limits (internal): an HTTP exchange's own
    │                                   failure carried through a limiter, unretried
    ├── _NonFiniteNumber                rampart.codec (internal): NaN or infinity in JSON
    └── _RepeatedKey                    rampart.codec (internal): a JSON object names a
                                        member twice; surfaces as a SchemaError

Which exceptions become ERROR results, and how user code that breaks its protocol is
reported, is described in ``docs/executions.md`` ("When user code breaks its
contract").
"""

from __future__ import annotations

import dataclasses

import attrs.exceptions

__all__ = [
    "AdapterContractError",
    "ContractError",
    "ConverterContractError",
    "DriverContractError",
    "DriverError",
    "EvaluatorContractError",
    "EvaluatorError",
    "FrozenInstanceError",
    "InfrastructureError",
    "InjectionContractError",
    "RampartError",
    "SchemaError",
    "UnsupportedSchemaVersionError",
]


class RampartError(Exception):
    """Root of every error rampart raises on purpose."""


class InfrastructureError(RampartError):
    """Something outside rampart failed: the agent, a surface, the network, user code.

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


class DriverError(RampartError):
    """A prompt driver could not produce its next prompt, or raised while trying."""


class EvaluatorError(InfrastructureError):
    """An evaluator failed for a reason that is not a verdict (a judge outage), or raised.

    Any exception an evaluator raises reaches the execution boundary as an
    ``EvaluatorError`` naming the evaluator, with the original as its ``__cause__``
    (``raised_by_evaluator`` is then True; RAMPART's trace functions re-raise the
    original).
    """

    raised_by_evaluator: bool = False


class ContractError(InfrastructureError):
    """User code does not honour the protocol rampart calls it through.

    Raised by the contract checks in ``rampart.core._contract`` wherever rampart calls
    user code (an adapter, evaluator, driver, converter, surface or injection handle):
    a method that is missing, not async, or returns the wrong type. The message names
    the object, the method and what came back, so a mis-implemented component gives
    an ERROR result saying what is wrong with it rather than a traceback from deep
    inside the engine. Never transient: retrying cannot fix the code.
    """


class AdapterContractError(ContractError):
    """An adapter or its session does not honour the ``AgentAdapter`` / ``Session`` contract.

    A missing ``create_session_async``, a ``send_async`` that is not async or returns
    something other than a ``Response``, a session ``__aenter__`` returning ``None``, ...
    """


class EvaluatorContractError(ContractError, EvaluatorError):
    """An evaluator's ``evaluate_async`` is missing, not async, or returns no ``EvalResult``.

    Also an ``EvaluatorError``, so code that catches evaluator failures catches it.
    """


class DriverContractError(ContractError, DriverError):
    """A prompt driver's ``next_prompt_async`` is missing, not async, or returns the wrong type.

    Also a ``DriverError``, so code that catches driver failures catches it.
    """


class ConverterContractError(ContractError):
    """A payload converter's ``convert_async`` is missing, not async, or returns no
    ``Payload`` (or one with a different id)."""


class InjectionContractError(ContractError):
    """A surface's ``inject`` returns no injection handle, or a handle's ``__aenter__`` /
    ``__aexit__`` is missing or not async."""


class SchemaError(RampartError, ValueError):
    """A trace record is malformed or violates the ``rampart.trace`` contract.

    Messages name the failing JSON path (``$.result.turns[2].turn_number``) and never
    echo producer data.
    """


class UnsupportedSchemaVersionError(SchemaError):
    """The record's ``version`` is not a major this reader supports (fails closed)."""


class FrozenInstanceError(attrs.exceptions.FrozenInstanceError, dataclasses.FrozenInstanceError):
    """An attribute of a frozen model (``Turn``, ``PopulationRef``, ...) was assigned.

    It is both ``attrs.exceptions.FrozenInstanceError`` and
    ``dataclasses.FrozenInstanceError`` (so code written for RAMPART's dataclasses
    catches it), and an ``AttributeError``. Make a changed copy instead:
    ``dataclasses.replace(turn, eval_result=...)`` or ``attrs.evolve(...)``.
    """

    def __init__(self, message: str = "can't set attribute") -> None:
        # attrs' FrozenError takes no message; AttributeError does.
        AttributeError.__init__(self, message)
        self.msg = message

    @classmethod
    def for_field(cls, owner: type, name: str) -> FrozenInstanceError:
        """The error for assigning (or deleting) ``name`` on an instance of ``owner``."""
        return cls(
            f"cannot assign to field {name!r}: {owner.__name__} is frozen; "
            f"make a changed copy with dataclasses.replace() or attrs.evolve()"
        )
