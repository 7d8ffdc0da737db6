"""Tests for ``rampart.drivers.StaticDriver``."""

from __future__ import annotations

import pytest

from rampart.core.driver import PromptDriver
from rampart.core.types import Payload, Request
from rampart.drivers import PromptDecision, StaticDriver
from tests._builders import history


class TestStaticDriverSequence:
    @pytest.mark.anyio
    async def test_sends_prompts_in_order_then_stops(self) -> None:
        """The prompt for turn N is prompts[N]; past the end the driver returns None."""
        driver = StaticDriver(prompts=["first", "second"])

        decisions = [await driver.next_prompt_async(history=history(n)) for n in range(3)]

        assert decisions[0] == PromptDecision(request=Request(prompt="first"))
        assert decisions[1] == PromptDecision(request=Request(prompt="second"))
        assert decisions[2] is None

    @pytest.mark.anyio
    async def test_strings_are_wrapped_as_requests(self) -> None:
        """A string prompt becomes a Request with that prompt and no attachments."""
        decision = await StaticDriver(prompts=["hi"]).next_prompt_async(history=[])

        assert decision is not None
        assert decision.request == Request(prompt="hi", attachments=[])
        assert decision.reasoning == ""

    @pytest.mark.anyio
    async def test_requests_are_sent_as_given(self) -> None:
        """A Request (for example one carrying an attachment) is sent unchanged."""
        request = Request(attachments=[Payload(content="planted", id="p1")])

        decision = await StaticDriver(prompts=[request]).next_prompt_async(history=[])

        assert decision is not None
        assert decision.request is request

    @pytest.mark.anyio
    async def test_mixed_strings_and_requests(self) -> None:
        """Strings and Requests may be mixed in one list."""
        request = Request(prompt="second")
        driver = StaticDriver(prompts=["first", request])

        second = await driver.next_prompt_async(history=history(1))

        assert second is not None
        assert second.request is request
        assert driver.requests == (Request(prompt="first"), request)

    @pytest.mark.anyio
    async def test_empty_list_produces_no_turns(self) -> None:
        """An empty prompt list stops immediately."""
        assert await StaticDriver(prompts=[]).next_prompt_async(history=[]) is None

    @pytest.mark.anyio
    async def test_is_stateless_and_reusable(self) -> None:
        """The index comes from the history only, so one driver serves many executions."""
        driver = StaticDriver(prompts=["a", "b"])

        first_run = [await driver.next_prompt_async(history=history(n)) for n in range(2)]
        again = await driver.next_prompt_async(history=[])
        second_run = [await driver.next_prompt_async(history=history(n)) for n in range(2)]

        assert again == first_run[0]
        assert first_run == second_run

    @pytest.mark.anyio
    async def test_history_longer_than_prompts_stops(self) -> None:
        """A history already past the last prompt still yields None, not an IndexError."""
        assert await StaticDriver(prompts=["a"]).next_prompt_async(history=history(5)) is None

    def test_is_a_prompt_driver(self) -> None:
        """StaticDriver satisfies the PromptDriver protocol."""
        assert isinstance(StaticDriver(prompts=["a"]), PromptDriver)

    def test_input_list_is_copied(self) -> None:
        """Mutating the caller's list afterwards does not change the driver."""
        prompts = ["a"]
        driver = StaticDriver(prompts=prompts)
        prompts.append("b")

        assert len(driver) == 1

    def test_repr_names_the_prompts(self) -> None:
        """The repr shows what the driver will send."""
        assert "hello" in repr(StaticDriver(prompts=["hello"]))

    def test_accepts_a_tuple(self) -> None:
        """Any non-string sequence of prompts is accepted."""
        assert len(StaticDriver(prompts=("a", "b"))) == 2


class TestStaticDriverValidation:
    @pytest.mark.parametrize("prompts", ["abc", b"abc", 5, None, {"a": 1}])
    def test_rejects_a_non_list(self, prompts: object) -> None:
        """A bare string or a non-sequence is rejected with an error naming prompts."""
        with pytest.raises(
            TypeError, match=r"^StaticDriver: prompts must be a list of str or Request, got "
        ):
            StaticDriver(prompts=prompts)  # type: ignore[arg-type]

    @pytest.mark.parametrize("item", [5, None, b"x", ["nested"]])
    def test_rejects_a_bad_item(self, item: object) -> None:
        """A list item that is neither str nor Request is named by its index."""
        with pytest.raises(
            TypeError, match=r"^StaticDriver: prompts\[1\] must be a str or Request, got "
        ):
            StaticDriver(prompts=["ok", item])  # type: ignore[list-item]

    def test_prompts_is_keyword_only(self) -> None:
        """prompts must be passed by keyword."""
        with pytest.raises(TypeError):
            StaticDriver(["a"])  # type: ignore[call-arg]
