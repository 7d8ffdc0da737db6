"""The opt-in on-disk response cache: keys, atomic entries, hits that cost no request."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING

import pytest

from rampart.llm import (
    LLM_CACHE_ENV,
    CachedCompletion,
    LLMClient,
    ResponseCache,
    configure_cache,
    default_cache,
    reset_cache_configuration,
)
from rampart.testing.server import serve
from tests.llm._support import FAKE_KEY, config

if TYPE_CHECKING:
    from pathlib import Path

BEGIN = [{"role": "user", "content": "Begin."}]


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*/*.json"))


def _everything(directory: Path) -> list[Path]:
    return sorted(directory.rglob("*"))


@pytest.fixture(autouse=True)
def _no_process_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LLM_CACHE_ENV, raising=False)
    reset_cache_configuration()


class TestResponseCache:
    def test_key_depends_on_everything_sent(self) -> None:
        """Model, messages, parameters and tag each change the key; key order does not."""
        body = {"model": "m", "messages": BEGIN, "temperature": 0}
        key = ResponseCache.key(body=body)
        assert key == ResponseCache.key(body=dict(reversed(body.items())))
        assert key != ResponseCache.key(body={**body, "model": "n"})
        assert key != ResponseCache.key(
            body={**body, "messages": [{"role": "user", "content": "x"}]}
        )
        assert key != ResponseCache.key(body={**body, "temperature": 1})
        assert key != ResponseCache.key(body=body, tag="retry-1")

    def test_put_and_get_blocking(self, tmp_path: Path) -> None:
        """Entries are JSON files under a two-character fan-out; no temp file stays."""
        cache = ResponseCache(tmp_path)
        key = ResponseCache.key(body={})
        path = cache.put_blocking(
            key, CachedCompletion(text="hello", model="m", usage={"prompt_tokens": 1})
        )
        assert path == tmp_path / key[:2] / f"{key}.json"
        assert json.loads(path.read_text())["version"] == "rampart.llm-cache.v1"
        assert cache.get_blocking(key) == CachedCompletion(
            text="hello", model="m", usage={"prompt_tokens": 1}
        )
        assert [p.name for p in path.parent.iterdir()] == [path.name]

    @pytest.mark.parametrize(
        "content",
        [
            "not json",
            '{"version": "other", "text": "x"}',
            '{"version": "rampart.llm-cache.v1", "text": ""}',
            # hostile entries: the one JSON reading policy makes each a miss
            '{"version": "rampart.llm-cache.v1", "text": "x", "usage": '
            + "[" * 100_000
            + "]" * 100_000
            + "}",
            '{"version": "rampart.llm-cache.v1", "text": "x", "text": "y"}',
            '{"version": "rampart.llm-cache.v1", "text": "x", "usage": {"n": NaN}}',
        ],
        ids=["not-json", "foreign", "empty", "nested-100000-deep", "duplicate-key", "nan"],
    )
    def test_bad_entries_are_misses(self, tmp_path: Path, content: str) -> None:
        """A corrupt, foreign or empty entry is a miss, never an error."""
        cache = ResponseCache(tmp_path)
        key = ResponseCache.key(body={})
        cache.path(key).parent.mkdir(parents=True)
        cache.path(key).write_text(content)
        assert cache.get_blocking(key) is None

    def test_default_from_env_and_configure(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """configure_cache wins over RAMPART_LLM_CACHE; None turns caching off; reset restores."""
        assert default_cache() is None
        monkeypatch.setenv(LLM_CACHE_ENV, str(tmp_path / "env"))
        cache = default_cache()
        assert cache is not None
        assert cache.directory == tmp_path / "env"
        configure_cache(tmp_path / "configured")
        cache = default_cache()
        assert cache is not None
        assert cache.directory == tmp_path / "configured"
        configure_cache(None)
        assert default_cache() is None
        reset_cache_configuration()
        assert default_cache() is not None


def _spoil_every_entry(directory: Path) -> int:
    """Every cache entry under ``directory`` becomes one nested 100,000 deep; how many."""
    deep = "[" * 100_000 + "]" * 100_000
    entries = list(directory.glob("*/*.json"))
    for entry in entries:
        entry.write_text('{"version": "rampart.llm-cache.v1", "text": "x", "usage": ' + deep + "}")
    return len(entries)


@pytest.mark.anyio
class TestCachedClient:
    async def test_second_identical_call_is_a_hit_without_a_request(self, tmp_path: Path) -> None:
        """A hit returns the stored text, sends nothing and counts as a hit."""
        async with serve() as server:
            client = LLMClient(
                config(server.url, model="sim-attacker"),
                cache=tmp_path,
                name=f"cache-hit-{uuid.uuid4().hex}",
            )
            first = await client.complete(BEGIN)
            served = server.statistics().served
            second = await client.complete(BEGIN)
            assert server.statistics().served == served
        assert not first.cached
        assert second.cached
        assert second.text == first.text
        stats = client.statistics()
        assert (stats.cache_misses, stats.cache_hits, stats.cache_writes, stats.requests) == (
            1,
            1,
            1,
            1,
        )
        assert client.limiter.statistics().requests == 1

    async def test_an_unreadable_entry_is_a_miss_and_the_call_is_made(self, tmp_path: Path) -> None:
        """An entry nested 100,000 deep is a miss: the request is sent, nothing escapes."""
        async with serve() as server:
            client = LLMClient(
                config(server.url, model="sim-attacker"),
                cache=tmp_path,
                name=f"cache-deep-{uuid.uuid4().hex}",
            )
            first = await client.complete(BEGIN)
            assert _spoil_every_entry(tmp_path) == 1
            served = server.statistics().served
            second = await client.complete(BEGIN)
            assert server.statistics().served == served + 1
        assert not second.cached
        assert second.text == first.text

    async def test_tag_separates_entries(self, tmp_path: Path) -> None:
        """The same body with another tag is another entry (judge retries, variants)."""
        async with serve() as server:
            client = LLMClient(config(server.url, model="sim-attacker"), cache=tmp_path)
            await client.complete(BEGIN, tag="a")
            again = await client.complete(BEGIN, tag="b")
        assert not again.cached
        assert len(_entries(tmp_path)) == 2

    async def test_empty_replies_are_not_cached(self, tmp_path: Path) -> None:
        """An empty reply is a failure: it is returned, counted, and asked again next time."""
        async with serve() as server:
            client = LLMClient(
                config(server.url, model="sim-attacker:empty"),
                cache=tmp_path,
                name=f"cache-empty-{uuid.uuid4().hex}",
            )
            assert (await client.complete(BEGIN)).text == ""
            assert not (await client.complete(BEGIN)).cached
        assert _entries(tmp_path) == []
        assert client.statistics().empty_replies == 2

    async def test_process_default_and_opt_out(self, tmp_path: Path) -> None:
        """Clients without ``cache=`` use the configured default; ``cache=False`` never caches."""
        configure_cache(tmp_path)
        async with serve() as server:
            default = LLMClient(config(server.url, model="sim-attacker"))
            opted_out = LLMClient(
                config(server.url, model="sim-attacker", metadata={"seed": 1}), cache=False
            )
            await default.complete(BEGIN)
            await opted_out.complete(BEGIN)
        assert default.cache is not None
        assert opted_out.cache is None
        assert len(_entries(tmp_path)) == 1

    async def test_hits_across_servers(self, tmp_path: Path) -> None:
        """The endpoint is not part of the key: a new server (new port) still hits."""
        answers = []
        for _ in range(2):
            async with serve() as server:
                client = LLMClient(config(server.url, model="sim-attacker"), cache=tmp_path)
                answers.append(await client.complete(BEGIN))
        assert [a.cached for a in answers] == [False, True]

    async def test_entries_never_hold_the_key(self, tmp_path: Path) -> None:
        """Neither the file names nor the contents of the cache contain the api key."""
        async with serve(api_key=FAKE_KEY) as server:
            client = LLMClient(
                config(server.url, model="sim-attacker", api_key=FAKE_KEY), cache=tmp_path
            )
            await client.complete(BEGIN)
        files = _everything(tmp_path)
        assert files
        for path in files:
            assert FAKE_KEY not in str(path)
            if path.is_file():
                assert FAKE_KEY not in path.read_text()
