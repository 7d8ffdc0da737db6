"""Tests for ``rampart.drivers.coerce_trigger``."""

from __future__ import annotations

import pytest

from rampart.core.types import Request, Turn
from rampart.drivers import PromptDecision, StaticDriver, coerce_trigger


class _CustomDriver:
    """A third-party driver that only satisfies the protocol."""

    async def next_prompt_async(self, *, history: list[Turn]) -> PromptDecision | None:
        return None


class TestCoerceTrigger:
    @pytest.mark.anyio
    async def test_string_becomes_one_prompt_driver(self) -> None:
        """A single string is sent once and then the driver is exhausted."""
        driver = coerce_trigger("go")

        assert isinstance(driver, StaticDriver)
        assert driver.requests == (Request(prompt="go"),)

    def test_request_becomes_one_prompt_driver(self) -> None:
        """A single Request is sent once, unchanged."""
        request = Request(prompt="go")

        driver = coerce_trigger(request)

        assert isinstance(driver, StaticDriver)
        assert driver.requests[0] is request

    def test_list_becomes_static_driver(self) -> None:
        """A list of prompts becomes a StaticDriver over them, in order."""
        driver = coerce_trigger(["a", Request(prompt="b")])

        assert isinstance(driver, StaticDriver)
        assert driver.requests == (Request(prompt="a"), Request(prompt="b"))

    @pytest.mark.anyio
    async def test_empty_list_means_zero_turns(self) -> None:
        """An empty list is allowed; the driver stops before the first turn."""
        driver = coerce_trigger([])

        assert await driver.next_prompt_async(history=[]) is None

    def test_driver_is_returned_as_is(self) -> None:
        """A PromptDriver (built-in or third-party) passes through unchanged."""
        custom = _CustomDriver()
        static = StaticDriver(prompts=["a"])

        assert coerce_trigger(custom) is custom
        assert coerce_trigger(static) is static

    @pytest.mark.parametrize("value", [5, None, b"go", {"prompt": "go"}, object()])
    def test_rejects_other_types_naming_the_argument(self, value: object) -> None:
        """Anything else is a TypeError that names the argument and the accepted types."""
        with pytest.raises(
            TypeError, match=r"^coerce_trigger: trigger must be a str, a Request, a list"
        ) as info:
            coerce_trigger(value)  # type: ignore[arg-type]

        assert "PromptDriver" in str(info.value)

    def test_custom_argument_name_in_errors(self) -> None:
        """The error names the caller's argument when one is given."""
        with pytest.raises(TypeError, match=r"^Probes\.behavior: prompts must be .*, got 3$"):
            coerce_trigger(3, owner="Probes.behavior", name="prompts")  # type: ignore[arg-type]

    def test_bad_list_item_names_the_argument(self) -> None:
        """A bad list item is reported under the caller's argument name and index."""
        with pytest.raises(
            TypeError, match=r"^coerce_trigger: trigger\[0\] must be a str or Request, got 1$"
        ):
            coerce_trigger([1])  # type: ignore[list-item]

    def test_non_callable_next_prompt_is_rejected(self) -> None:
        """An object whose next_prompt_async is not callable is not a driver."""

        class _Fake:
            next_prompt_async = "not a method"

        with pytest.raises(TypeError, match=r"^coerce_trigger: trigger must be"):
            coerce_trigger(_Fake())  # type: ignore[arg-type]
