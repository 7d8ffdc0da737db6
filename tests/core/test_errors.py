from __future__ import annotations

import importlib
import pickle
import pkgutil
import re

import pytest

import rampart
import rampart.core.errors as errors_module
from rampart.core.errors import (
    AdapterContractError,
    ContractError,
    ConverterContractError,
    DriverContractError,
    DriverError,
    EvaluatorContractError,
    EvaluatorError,
    InfrastructureError,
    InjectionContractError,
    RampartError,
    SchemaError,
    UnsupportedSchemaVersionError,
)

CONTRACT_ERRORS = [
    AdapterContractError,
    EvaluatorContractError,
    DriverContractError,
    ConverterContractError,
    InjectionContractError,
]


class TestHierarchy:
    @pytest.mark.parametrize(
        "cls",
        [
            InfrastructureError,
            DriverError,
            EvaluatorError,
            SchemaError,
            UnsupportedSchemaVersionError,
            ContractError,
            *CONTRACT_ERRORS,
        ],
    )
    def test_single_root(self, cls: type[Exception]) -> None:
        """Every rampart error is catchable as RampartError."""
        assert issubclass(cls, RampartError)

    def test_branches(self) -> None:
        """Evaluator failures are infrastructure; version errors are schema errors."""
        assert issubclass(EvaluatorError, InfrastructureError)
        assert issubclass(UnsupportedSchemaVersionError, SchemaError)
        assert issubclass(SchemaError, ValueError)

    @pytest.mark.parametrize("cls", CONTRACT_ERRORS)
    def test_contract_errors_become_error_results(self, cls: type[Exception]) -> None:
        """Every contract error is an InfrastructureError, so the boundary reports it."""
        assert issubclass(cls, ContractError)
        assert issubclass(cls, InfrastructureError)

    def test_contract_errors_keep_their_component_family(self) -> None:
        """Code that catches EvaluatorError / DriverError also catches their contract errors."""
        assert issubclass(EvaluatorContractError, EvaluatorError)
        assert issubclass(DriverContractError, DriverError)


class TestPickling:
    @pytest.mark.parametrize(
        "error",
        [
            InfrastructureError("down", transient=True),
            EvaluatorError("judge down"),
            DriverError("no prompt"),
            SchemaError("$.result: expected object"),
            ContractError("x"),
            *(cls("broken") for cls in CONTRACT_ERRORS),
        ],
        ids=lambda error: type(error).__name__,
    )
    def test_round_trip(self, error: Exception) -> None:
        """Errors cross process boundaries (xdist) intact, including flags."""
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert copy.args == error.args
        assert getattr(copy, "transient", None) == getattr(error, "transient", None)

    def test_transient_defaults_false(self) -> None:
        """Only explicitly transient failures are retried by limiters."""
        assert InfrastructureError("x").transient is False
        assert InfrastructureError("x", transient=True).transient is True
        assert DriverContractError("x").transient is False


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in any module of rampart, by name."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(rampart.__path__, "rampart."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
            ):
                found[value.__name__] = value
    return found


def _drawn_tree() -> dict[str, str]:
    """The tree in ``rampart.core.errors``' docstring as ``{class name: parent name}``."""
    doc = errors_module.__doc__ or ""
    block = doc.split("::", 1)[1]
    parents: dict[str, str] = {}
    stack: list[str] = []
    for line in block.splitlines():
        if not line.strip():
            if parents:
                break
            continue
        branch = re.search(r"[├└]── (\w+)", line)
        if branch is None:
            if not parents and not stack:
                stack = [line.split()[0]]  # the root, "Exception"
            continue
        depth = branch.start() // 4
        del stack[depth:]
        name = branch.group(1)
        parents[name] = stack[-1]
        stack.append(name)
    return parents


class TestErrorTree:
    def test_every_exception_class_is_drawn(self) -> None:
        """The docstring tree names every exception class rampart defines, anywhere."""
        missing = sorted(set(_exception_classes()) - set(_drawn_tree()))
        assert missing == []

    def test_tree_draws_real_classes(self) -> None:
        """Nothing in the tree is stale: every name drawn is a class rampart defines."""
        stale = sorted(set(_drawn_tree()) - set(_exception_classes()))
        assert stale == []

    @pytest.mark.parametrize("name", sorted(_exception_classes()))
    def test_each_class_hangs_under_its_base(self, name: str) -> None:
        """A class is drawn under one of its direct bases; one whose bases all come from
        elsewhere (the stdlib, attrs) hangs from the root."""
        cls = _exception_classes()[name]
        parent = _drawn_tree()[name]
        own = set(_exception_classes().values())
        if not any(base in own for base in cls.__bases__) and cls.__bases__ != (Exception,):
            assert parent == "Exception"
        else:
            assert parent in {base.__name__ for base in cls.__bases__}
