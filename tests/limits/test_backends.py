from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest

from rampart.limits import (
    LIMITS_DIR_ENV,
    LIMITS_REDIS_URL_ENV,
    FileBackend,
    LimitBackend,
    MemoryBackend,
    RedisBackend,
    default_backend,
    limit,
    new_run,
)
from tests._builders import replying_agent
from tests.limits._shared import assert_one_shared_bucket, assert_within_budget, hammer

if TYPE_CHECKING:
    from pathlib import Path


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class TestMemoryBackend:
    def test_is_a_limit_backend(self) -> None:
        """MemoryBackend satisfies the LimitBackend protocol."""
        assert isinstance(MemoryBackend(), LimitBackend)
        assert MemoryBackend().description == "memory"

    def test_keys_are_independent(self) -> None:
        """Each key has its own bucket."""
        backend = MemoryBackend()
        assert backend.reserve_now("a", rate=1, burst=1, now=0.0) == 0.0
        assert backend.reserve_now("b", rate=1, burst=1, now=0.0) == 0.0
        assert backend.reserve_now("a", rate=1, burst=1, now=0.0) == 1.0

    @pytest.mark.anyio
    async def test_acquire_uses_the_injected_clock(self) -> None:
        """Reservations are measured with the backend's clock."""
        clock = FakeClock()
        backend = MemoryBackend(clock=clock)
        waits = [await backend.acquire("k", rate=2, burst=1) for _ in range(3)]
        assert waits == [0.0, 0.5, 1.0]
        clock.now += 10.0
        assert await backend.acquire("k", rate=2, burst=1) == 0.0

    @pytest.mark.anyio
    async def test_default_clock_is_the_event_loop_clock(self) -> None:
        """Without a clock, the running loop's time is used (a full bucket answers 0)."""
        backend = MemoryBackend()
        assert await backend.acquire("k", rate=1, burst=2) == 0.0
        assert await backend.acquire("k", rate=1, burst=2) == 0.0
        assert await backend.acquire("k", rate=1, burst=2) > 0.5

    @pytest.mark.anyio
    async def test_rejects_empty_keys(self) -> None:
        """A bucket needs a name."""
        with pytest.raises(ValueError, match="key"):
            await MemoryBackend().acquire("", rate=1, burst=1)

    def test_rejects_a_non_callable_clock(self) -> None:
        """The clock must be callable."""
        with pytest.raises(TypeError, match="clock"):
            MemoryBackend(clock=3.0)  # type: ignore[arg-type]

    def test_one_instance_shares_a_budget_between_limiters(self) -> None:
        """Two limiters given one MemoryBackend and one name draw from one bucket."""
        backend = MemoryBackend(clock=FakeClock())
        first = limit(replying_agent(), rate=1, name="shared", backend=backend)
        second = limit(replying_agent(), rate=1, name="shared", backend=backend)
        assert first.backend is second.backend
        assert backend.reserve_now("shared", rate=1, burst=1, now=100.0) == 0.0
        assert backend.reserve_now("shared", rate=1, burst=1, now=100.0) == 1.0


class TestFileBackend:
    def test_instances_on_one_directory_share_buckets(self, tmp_path: Path) -> None:
        """Two backends (as in two processes) on one directory see one bucket."""
        clock = FakeClock()
        first = FileBackend(tmp_path, clock=clock)
        second = FileBackend(str(tmp_path), clock=clock)
        waits = [
            first.reserve_now("agent", rate=4, burst=2),
            second.reserve_now("agent", rate=4, burst=2),
            first.reserve_now("agent", rate=4, burst=2),
            second.reserve_now("agent", rate=4, burst=2),
        ]
        assert waits == [0.0, 0.0, 0.25, 0.5]
        clock.now += 10.0
        assert second.reserve_now("agent", rate=4, burst=2) == 0.0

    def test_state_is_a_small_json_file(self, tmp_path: Path) -> None:
        """The bucket file holds the balance and its timestamp."""
        backend = FileBackend(tmp_path, clock=FakeClock(5.0))
        backend.reserve_now("agent", rate=1, burst=3)
        state = json.loads(backend.bucket_path("agent").read_text())
        assert state == {"tokens": 2.0, "stamp": 5.0}

    def test_directory_is_created_on_first_use(self, tmp_path: Path) -> None:
        """A missing directory is created, not an error."""
        backend = FileBackend(tmp_path / "a" / "b")
        backend.reserve_now("k", rate=1, burst=1)
        assert backend.bucket_path("k").exists()

    def test_unreadable_state_restarts_empty(self, tmp_path: Path) -> None:
        """A damaged file delays the next request instead of granting a burst."""
        backend = FileBackend(tmp_path, clock=FakeClock())
        backend.bucket_path("k").write_text('{"tokens": 5, "sta')
        assert backend.reserve_now("k", rate=2, burst=5) == pytest.approx(0.5)

    def test_file_names_are_safe_and_distinct(self, tmp_path: Path) -> None:
        """Keys with path characters stay inside the directory and do not collide."""
        backend = FileBackend(tmp_path)
        paths = {backend.bucket_path(key) for key in ["a/b", "a_b", "../x", "a b", "ä"]}
        assert len(paths) == 5
        assert all(path.parent == tmp_path for path in paths)

    @pytest.mark.anyio
    async def test_acquire_runs_in_a_worker_thread(self, tmp_path: Path) -> None:
        """The async path works on both event loops."""
        backend = FileBackend(tmp_path, clock=FakeClock())
        waits = [await backend.acquire("k", rate=10, burst=1) for _ in range(3)]
        assert waits == pytest.approx([0.0, 0.1, 0.2])

    def test_bad_arguments(self, tmp_path: Path) -> None:
        """The directory must be a path to a directory; the clock callable."""
        with pytest.raises(TypeError, match="directory"):
            FileBackend(3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="directory"):
            FileBackend("")
        afile = tmp_path / "file"
        afile.write_text("")
        with pytest.raises(ValueError, match="not a directory"):
            FileBackend(afile)
        with pytest.raises(TypeError, match="clock"):
            FileBackend(tmp_path, clock="now")  # type: ignore[arg-type]

    def test_two_processes_never_exceed_the_budget(self, tmp_path: Path) -> None:
        """Two OS processes hammering one bucket get at most burst + rate * t grants in
        any interval t, counted from the backend's own clock readings."""
        rate, burst, count = 50.0, 5, 250
        results = hammer("file", str(tmp_path), "shared", rate=rate, burst=burst, count=count)
        grants = [now + wait for worker in results for now, wait in worker]
        assert len(grants) == 2 * count
        assert_within_budget(grants, rate=rate, burst=burst)
        assert_one_shared_bucket(results, rate=rate, burst=burst, count=count)


class TestDefaultBackend:
    @pytest.fixture(autouse=True)
    def _clean_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.delenv(LIMITS_REDIS_URL_ENV, raising=False)
        monkeypatch.delenv(LIMITS_DIR_ENV, raising=False)

    def test_memory_when_nothing_is_set_one_per_run(self) -> None:
        """Without environment variables the run has one MemoryBackend; a new run another."""
        first, second = default_backend(), default_backend()
        assert isinstance(first, MemoryBackend)
        assert first is second
        with new_run():
            assert default_backend() is not first
        assert default_backend() is first

    def test_one_backend_per_setting_in_a_run(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Each setting of the environment gives the run one backend (one Redis pool)."""
        monkeypatch.setenv(LIMITS_REDIS_URL_ENV, "redis://127.0.0.1:1/0")
        redis = default_backend()
        assert default_backend() is redis
        monkeypatch.setenv(LIMITS_REDIS_URL_ENV, "")
        monkeypatch.setenv(LIMITS_DIR_ENV, str(tmp_path))
        files = default_backend()
        assert isinstance(files, FileBackend)
        assert default_backend() is files

    def test_directory_variable_selects_files(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """RAMPART_LIMITS_DIR shares buckets through files (what the plugin sets per run)."""
        monkeypatch.setenv(LIMITS_DIR_ENV, str(tmp_path))
        backend = default_backend()
        assert isinstance(backend, FileBackend)
        assert backend.directory == tmp_path
        limited = limit(replying_agent(), rate=5)
        assert limited.statistics().backend == f"file:{tmp_path}"

    def test_redis_variable_wins_over_the_directory(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """RAMPART_LIMITS_REDIS_URL takes precedence (no connection is made yet)."""
        monkeypatch.setenv(LIMITS_DIR_ENV, str(tmp_path))
        monkeypatch.setenv(LIMITS_REDIS_URL_ENV, "redis://127.0.0.1:1/0")
        assert isinstance(default_backend(), RedisBackend)

    def test_empty_variables_are_ignored(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An empty value means unset."""
        monkeypatch.setenv(LIMITS_DIR_ENV, "")
        monkeypatch.setenv(LIMITS_REDIS_URL_ENV, "")
        assert isinstance(default_backend(), MemoryBackend)

    def test_explicit_backend_wins(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        """backend= overrides the environment."""
        monkeypatch.setenv(LIMITS_DIR_ENV, str(tmp_path))
        backend = MemoryBackend()
        assert limit(replying_agent(), rate=1, backend=backend).backend is backend

    def test_no_rate_no_backend(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        """Without rate there is no bucket, so the environment is not consulted."""
        monkeypatch.setenv(LIMITS_REDIS_URL_ENV, "redis://127.0.0.1:1/0")
        assert limit(replying_agent(), max_concurrency=2).backend is None

    def test_environment_is_read_when_limit_is_called(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """The variable is read when a name's limiter is made, not at import."""
        assert isinstance(limit(replying_agent(), rate=1, name="a").backend, MemoryBackend)
        monkeypatch.setenv(LIMITS_DIR_ENV, os.fspath(tmp_path))
        assert isinstance(limit(replying_agent(), rate=1, name="b").backend, FileBackend)
