from __future__ import annotations

import pickle

import pytest

from rampart.core.errors import (
    DriverError,
    EvaluatorError,
    InfrastructureError,
    RampartError,
    SchemaError,
    UnsupportedSchemaVersionError,
)


class TestHierarchy:
    @pytest.mark.parametrize(
        "cls",
        [
            InfrastructureError,
            DriverError,
            EvaluatorError,
            SchemaError,
            UnsupportedSchemaVersionError,
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


class TestPickling:
    @pytest.mark.parametrize(
        "error",
        [
            InfrastructureError("down", transient=True),
            EvaluatorError("judge down"),
            DriverError("no prompt"),
            SchemaError("$.result: expected object"),
        ],
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
