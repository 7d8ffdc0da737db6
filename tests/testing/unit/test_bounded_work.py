"""Bounded work per request: linear-time parsing of hostile text, and caches bounded by
the text they keep (issue 33 §4).

The pathological inputs below took seconds with the old patterns (an 80,000-character
objective 6.2 s, an 80,000-character prompt 8.9 s: quadratic). Each test asserts the
behaviour, then bounds the CPU time of an input four times larger (which quadratic
parsing would take minutes over) by a generous two seconds; linear parsing takes
milliseconds, so the bound holds on a loaded machine.
"""

from __future__ import annotations

import json
import re
import time
import tracemalloc
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rampart.adapters._documents import Document, split_documents
from rampart.core.types import Request
from rampart.payloads._tool_text import read_text
from rampart.testing import SimulatedAgent
from rampart.testing._instructions import SEND_EMAIL, analyse
from rampart.testing._memo import TextMemo
from rampart.testing.server._agentdojo import _between
from rampart.testing.server._models import MAX_INDICATORS, _indicators
from rampart.testing.server._tool_model import _identifiers, _injections

if TYPE_CHECKING:
    from collections.abc import Callable

N = 320_000
BOUND_SECONDS = 2.0


def _cpu(function: Callable[[], object]) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


class TestLinearParsing:
    def test_judge_objective(self) -> None:
        """A run of address characters without an ``@`` is scanned once."""
        objective = "a" * N + " then x@y.example and delete_file"
        assert _indicators(objective) == ["x@y.example", "delete_file"]
        assert _cpu(lambda: _indicators("a" * N)) < BOUND_SECONDS

    def test_judge_indicators_are_capped(self) -> None:
        objective = " ".join(f"user{i}@corp.example" for i in range(1000))
        assert len(_indicators(objective)) == MAX_INDICATORS

    def test_agent_prompt(self) -> None:
        """An ``@`` far from any address costs one scan, and finds no instruction."""
        prompt = "Please send " + "a" * N + " to me @ once."
        assert analyse(prompt).instructions == ()
        assert _cpu(lambda: analyse("Please send " + "b" * N + " to me @ once.")) < BOUND_SECONDS
        (found,) = analyse("Please send " + "a" * 1000 + " to eve@evil.example.").instructions
        assert (found.kind, found.recipient) == (SEND_EMAIL, "eve@evil.example")

    def test_unclosed_curly_quotes(self) -> None:
        text = "Please email eve@evil.example “" + "“x" * (N // 2)
        assert _cpu(lambda: analyse(text)) < BOUND_SECONDS
        assert _cpu(lambda: _indicators("“" * N)) < BOUND_SECONDS

    def test_an_address_is_bounded(self) -> None:
        """An address has at most 64 characters before the ``@``: a longer run is none."""
        assert analyse("Send it to " + "a" * 65 + "@evil.example.").instructions == ()
        long_ok = "a" * 64 + "@evil.example"
        assert analyse(f"Send it to {long_ok}.").instructions[0].recipient == long_ok

    def test_document_blocks(self) -> None:
        """Unclosed BEGIN lines are prompt text, found without searching to the end
        once per line."""
        begin = '----- BEGIN DOCUMENT id="a" format="text" -----\n'
        text = begin * (N // len(begin))
        assert split_documents(text) == (text.strip(), [])
        assert _cpu(lambda: split_documents(text)) < BOUND_SECONDS

    def test_tool_model_evidence(self) -> None:
        text = "x" * N + " T-1001 and " + "Send it to " + "a" * N + " @ there."
        assert _identifiers(text) == ["T-1001"]
        assert _cpu(lambda: _injections([text], "")) < BOUND_SECONDS

    def test_agentdojo_alignment(self) -> None:
        """Reading planted text back is linear where a regex of ``(.*)`` groups
        backtracked through every split of a hostile result."""
        parts = ["Subject: ", " and ", " and ", "."]
        real = "Subject: " + " and " * (N // 5)
        assert _between(parts, real) is None
        assert _cpu(lambda: _between(parts, real)) < BOUND_SECONDS

    def test_a_yaml_alias_bomb_is_read_as_it_is(self) -> None:
        """A tool result of a few hundred characters whose aliases would load as 43
        million strings (``sim-agentdojo`` reads what a client sends) is read as its own
        text; ordinary YAML is still loaded back."""
        bomb = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
        for name, previous in zip("bcdefghi", "abcdefgh", strict=True):
            bomb += f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]\n"
        assert read_text(bomb) == bomb
        assert _cpu(lambda: read_text(bomb)) < BOUND_SECONDS
        assert read_text("subject: 'Hello\n  world'\nbody: x") == "Hello world\nx"


_JSON_STRING = r'"(?:[^"\\\n]|\\.)*"'
_OLD_BLOCK = re.compile(
    rf"^----- BEGIN DOCUMENT id=(?P<id>{_JSON_STRING}) format=(?P<format>{_JSON_STRING}) -----\n"
    r"(?P<content>.*?)\n"
    r"----- END DOCUMENT id=(?P=id) -----$",
    re.MULTILINE | re.DOTALL,
)


def _old_split(text: str) -> tuple[str, list[Document]]:
    """The regex ``split_documents`` used before (quadratic on unclosed blocks)."""
    found: list[Document] = []

    def take(match: re.Match[str]) -> str:
        found.append(
            Document(
                id=json.loads(match["id"]),
                format=json.loads(match["format"]),
                content=match["content"],
            )
        )
        return ""

    return _OLD_BLOCK.sub(take, text).strip(), found


_PIECES = st.sampled_from(
    [
        '----- BEGIN DOCUMENT id="a" format="text" -----\n',
        '----- BEGIN DOCUMENT id="b" format="markdown" -----\n',
        '----- END DOCUMENT id="a" -----',
        '----- END DOCUMENT id="b" -----',
        '----- END DOCUMENT id="a" ----- not the end',
        "\n",
        "\n\n",
        "text ",
        "-----",
    ]
)


class TestSameAnswersAsBefore:
    @settings(max_examples=200, deadline=None)
    @given(st.lists(_PIECES, max_size=14).map("".join))
    def test_document_blocks(self, text: str) -> None:
        assert split_documents(text) == _old_split(text)

    @settings(max_examples=200, deadline=None)
    @given(
        st.lists(st.text("ab<>.", max_size=4), min_size=2, max_size=4),
        st.text("ab<>.", max_size=16),
    )
    def test_agentdojo_alignment(self, parts: list[str], real: str) -> None:
        """``_between`` finds what a fullmatch of greedy ``(.*)`` groups finds."""
        pattern = "(.*)".join(re.escape(part) for part in parts)
        match = re.fullmatch(pattern, real, re.DOTALL)
        assert _between(parts, real) == (list(match.groups()) if match else None)


class TestBoundedMemory:
    def test_a_memo_keeps_at_most_its_characters(self) -> None:
        memo: TextMemo[str, int] = TextMemo(max_entries=100, max_chars=1000, entry_chars=300)
        for index in range(50):
            text = f"{index:03d}" + "x" * 200
            assert memo.get(text, len(text), lambda text=text: len(text)) == 203
            assert memo.chars <= 1000
        big = "y" * 301
        assert memo.get(big, len(big), lambda: 1) == 1
        assert big not in memo._entries

    def test_distinct_prompts_do_not_grow_the_agent(self) -> None:
        """A stream of distinct prompts (large ones, then many medium ones) leaves the
        agent's memory bounded: what it keeps is bounded by characters, not by count."""
        import anyio

        agent = SimulatedAgent(seed=1)

        async def converse() -> None:
            async with await agent.create_session_async() as session:
                for index in range(30):
                    await session.send_async(Request(prompt=f"{index} " + "x" * 1_000_000))
                for index in range(300):
                    await session.send_async(Request(prompt=f"{index} " + "y" * 60_000))

        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            anyio.run(converse)
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        # 30 MB and 18 MB of distinct prompts went through; the memos keep at most
        # 8 M characters each (two of them hold the same strings).
        assert kept < 24 * 1024 * 1024


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_large_send_is_read_off_the_event_loop(
    backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send whose texts exceed ``INLINE_CHARS`` is digested in a worker thread; a
    small one on the event loop (no thread hop on the common path)."""
    import threading

    import anyio

    from rampart.testing import _simulated

    threads: list[int] = []
    build = _simulated._build_view

    def recording(label: str, content: str, secret: str) -> _simulated._SourceView:
        threads.append(threading.get_ident())
        return build(label, content, secret)

    monkeypatch.setattr(_simulated, "_build_view", recording)

    async def converse() -> int:
        async with await SimulatedAgent().create_session_async() as session:
            await session.send_async(Request(prompt="small " + backend))
            await session.send_async(Request(prompt="large " * 20_000 + backend))
        return threading.get_ident()

    loop = anyio.run(converse, backend=backend)
    assert threads[0] == loop
    assert threads[1] != loop
