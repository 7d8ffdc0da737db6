from __future__ import annotations

import pytest

from rampart.engine._exceptions import combine, raise_unwrapped


def _raised_from(error: Exception, cause: BaseException) -> Exception:
    """``error`` as it looks after ``raise error from cause``."""
    try:
        raise error from cause
    except Exception as caught:
        return caught


class TestRaiseUnwrapped:
    def test_sole_member_keeps_its_cause(self) -> None:
        """Unwrapping restores the member's __cause__ and __suppress_context__."""
        root = KeyError("missing")
        error = _raised_from(ValueError("bug"), root)
        with pytest.raises(ValueError, match="bug") as caught:
            raise_unwrapped(ExceptionGroup("g", [error]))
        assert caught.value is error
        assert caught.value.__cause__ is root
        assert caught.value.__suppress_context__

    def test_sole_member_keeps_its_context(self) -> None:
        """An implicit context survives, and the group does not become the context."""
        context = KeyError("first")
        error = OSError("while handling")
        error.__context__ = context
        with pytest.raises(OSError, match="while handling") as caught:
            raise_unwrapped(ExceptionGroup("g", [error]))
        assert caught.value.__context__ is context
        assert not caught.value.__suppress_context__

    def test_nested_group_unwrapped(self) -> None:
        """A group of a group of one is unwrapped down to the exception."""
        root = ConnectionRefusedError("refused")
        error = _raised_from(OSError("down"), root)
        with pytest.raises(OSError, match="down") as caught:
            raise_unwrapped(ExceptionGroup("outer", [ExceptionGroup("inner", [error])]))
        assert caught.value is error
        assert caught.value.__cause__ is root

    def test_several_members_stay_grouped(self) -> None:
        """A group of two is raised as the group itself."""
        group = ExceptionGroup("two", [ValueError("a"), OSError("b")])
        with pytest.raises(ExceptionGroup) as caught:
            raise_unwrapped(group)
        assert caught.value is group


class TestCombine:
    def test_one_error_is_itself(self) -> None:
        """A single error is returned as is."""
        error = OSError("x")
        assert combine("m", [error]) is error

    def test_base_exception_makes_base_group(self) -> None:
        """A non-Exception member makes a BaseExceptionGroup, not an ExceptionGroup."""
        combined = combine("m", [OSError("x"), KeyboardInterrupt()])
        assert type(combined) is BaseExceptionGroup
