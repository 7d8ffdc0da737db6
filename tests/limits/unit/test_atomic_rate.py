"""A learned rate shared through Redis: one atomic script per reservation, learning
events as rare versioned writes, contention that slows down but never fails, and
shared state that a damaged or hostile writer cannot turn into an endless wait."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from rampart import Probes
from rampart.core.result import SafetyStatus
from rampart.core.types import Request
from rampart.evaluators import ResponseContains, ResponseScope
from rampart.limits import FileBackend, RedisBackend, limit
from rampart.limits._policy import _learned_rate as rate_policy
from rampart.limits._policy._learned_rate import Grant, Pacing, RatePolicy
from rampart.limits._shared_rate import LearnedRate
from tests._builders import replying_agent

if TYPE_CHECKING:
    from pathlib import Path


class FakeClock:
    def __init__(self, now: float = 5000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _key(request: pytest.FixtureRequest, suffix: str = "") -> str:
    return f"{request.node.nodeid}{suffix}"


class _Counted:
    """Wraps a registered script and counts its calls."""

    def __init__(self, script: Any) -> None:
        self.script = script
        self.calls = 0

    def __call__(self, **kwargs: Any) -> Any:
        self.calls += 1
        return self.script(**kwargs)


class TestOneScriptPerReservation:
    def test_the_script_books_like_the_python_core(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """With an injected clock the Lua reservation reproduces ``_learned_rate.book``:
        the wait, every meter field and the idle time the growth law skips (none while
        the caller is ``held``)."""
        clock = FakeClock()
        backend = RedisBackend(redis_server, clock=clock)
        key = _key(request)
        backend._client.delete(backend.rate_key(key))
        policy = RatePolicy()
        state = rate_policy.fresh(clock.now, policy)
        version = backend.write_rate_now(key, read=backend.read_rate_now(key), state=state)
        assert version == 1
        epoch = state.law.epoch
        steps = [
            (0.0, 0, False),
            (0.0, 0, False),
            (0.01, 1, False),
            (2.0, 0, False),
            (0.0, 0, False),
            (0.3, 2, False),
            (1.5, 0, True),
            (0.0, 0, False),
        ]
        waits = []
        shifts = []
        for step, forfeited, held in steps:
            clock.now += step
            pacing = rate_policy.pacing(state, clock.now, policy, held=held)
            state, wait = rate_policy.book(
                state, now=clock.now, pacing=pacing, forfeited=forfeited, held=held
            )
            booked = backend.reserve_rate_now(
                key, version=1, pacing=pacing, forfeited=forfeited, held=held
            )
            assert booked is not None
            assert booked.stale is None
            assert booked.wait == pytest.approx(wait, abs=1e-9)
            expected = rate_policy.split(state)[1]
            assert booked.meter == pytest.approx(
                {"due": expected["due"], "stamp": expected["stamp"]}, abs=1e-9
            )
            # What the script stored: every meter field, as the Python core has it.
            assert backend.read_rate_now(key).meter == pytest.approx(expected, abs=1e-9)
            assert epoch + booked.shift == pytest.approx(state.law.epoch, abs=1e-9)
            waits.append(wait)
            shifts.append(booked.shift)
        assert max(waits) > 0.0  # the bucket was really used up
        assert shifts[3] > shifts[2]  # 2 s with the bucket empty and nobody held: skipped
        assert shifts[6] == pytest.approx(shifts[5])  # 1.5 s, but a caller was held

    @pytest.mark.anyio
    async def test_each_request_is_one_reservation_script(
        self, anyio_backend: str, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """40 requests at a learned rate: 40 runs of the reservation script; the
        reads and writes of learning events are far fewer (start-up and latency)."""
        backend = RedisBackend(redis_server)
        key = _key(request, anyio_backend)
        backend._client.delete(backend.rate_key(key))
        reserve = _Counted(backend._reserve_rate_script)
        reads = _Counted(backend._read_rate_script)
        backend._reserve_rate_script = reserve
        backend._read_rate_script = reads
        agent = replying_agent()
        limited = limit(agent, adaptive=True, rate=10_000, burst=50, name=key, backend=backend)
        session = await limited.create_session_async()
        async with session:
            for _ in range(40):
                await session.send_async(Request(prompt="hi"))
        assert agent.statistics().requests == 40
        assert reserve.calls == 40
        assert 1 <= reads.calls < 40
        assert limited.statistics().failed == 0

    @pytest.mark.anyio
    async def test_a_cut_reaches_another_host_with_its_next_booking(
        self, anyio_backend: str, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """Host A is refused and cuts; host B's next reservation (still one script)
        returns the new state with the booking: B's grant carries the old generation
        (so its limiter reserves again) and B now paces at the cut rate."""
        key = _key(request, anyio_backend)
        first, second = RedisBackend(redis_server), RedisBackend(redis_server)
        first._client.delete(first.rate_key(key))
        policy = RatePolicy(burst=1)
        a = LearnedRate(backend=first, key=key, policy=policy, clock=lambda: 0.0)
        b = LearnedRate(backend=second, key=key, policy=policy, clock=lambda: 0.0)
        grant = await a.reserve()
        await b.reserve()
        assert await a.throttled(grant, [])
        assert (a.generation, b.generation) == (1, 0)
        reserve = _Counted(second._reserve_rate_script)
        second._reserve_rate_script = reserve
        stale: Grant = await b.reserve()
        assert reserve.calls == 1
        assert stale.generation == 0
        assert b.generation == 1
        assert b.statistics().rate == pytest.approx(a.statistics().rate, rel=0.05)
        assert b.statistics().rate < grant.rate


class TestContention:
    def test_sixteen_writers_lose_and_fail_nothing(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """16 threads x 40 compare-and-set updates of one document: all 640 land
        (losers back off and retry; none gives up because another wrote first)."""
        backend = RedisBackend(redis_server)
        key = _key(request)
        backend._client.delete(backend.document_key(key))
        errors: list[BaseException] = []

        def increment(document: dict[str, Any] | None, now: float) -> tuple[dict[str, Any], int]:
            count = 1 + (0 if document is None else int(document["count"]))
            return {"count": count}, count

        def work() -> None:
            try:
                for _ in range(40):
                    backend.transact_now(key, increment)
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=work) for _ in range(16)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=300)
        assert errors == []
        assert backend.transact_now(key, lambda d, now: (d or {}, (d or {}).get("count"))) == 640

    @pytest.mark.anyio
    async def test_learning_writes_from_many_hosts_all_land(
        self, anyio_backend: str, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """Eight hosts report a refusal each at the same moment: the counters of every
        refusal land (counter changes are differences, they never conflict) and at most
        one of the eight cuts (they were all sent under the same generation)."""
        import anyio

        key = _key(request, anyio_backend)
        backends = [RedisBackend(redis_server) for _ in range(8)]
        backends[0]._client.delete(backends[0].rate_key(key))
        policy = RatePolicy(burst=1, ceiling=100.0)
        hosts = [
            LearnedRate(backend=b, key=key, policy=policy, clock=lambda: 0.0) for b in backends
        ]
        grants = [await host.reserve() for host in hosts]
        cuts: list[bool] = []

        async def refuse(index: int) -> None:
            cuts.append(await hosts[index].throttled(grants[index], []))

        async with anyio.create_task_group() as group:
            for index in range(8):
                group.start_soon(refuse, index)
        assert len(cuts) == 8
        assert sum(cuts) == 1
        read = backends[0].read_rate_now(key)
        assert read.state is not None
        assert read.state.generation == 1


class TestHostileSharedState:
    def test_a_huge_redis_debt_is_not_an_endless_wait(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """``tokens = -1e9`` written into a fixed bucket: the bucket restarts empty
        (one spacing), instead of a wait of 1e8 s."""
        backend = RedisBackend(redis_server)
        key = _key(request)
        backend._client.hset(backend.prefix + key, mapping={"tokens": "-1e9", "stamp": "1"})
        assert backend.reserve_now(key, rate=10.0, burst=1) <= 0.1 + 1e-6

    def test_a_due_far_ahead_in_the_learned_state_is_reset(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        clock = FakeClock()
        backend = RedisBackend(redis_server, clock=clock)
        key = _key(request)
        backend._client.delete(backend.rate_key(key))
        state = rate_policy.fresh(clock.now, RatePolicy())
        backend.write_rate_now(key, read=backend.read_rate_now(key), state=state)
        backend._client.hset(backend.rate_key(key), "due", "1e12")
        pacing = Pacing(rate=10.0, burst=1, capped=False, window=1.0)
        booked = backend.reserve_rate_now(key, version=1, pacing=pacing, forfeited=0)
        assert booked is not None
        assert booked.wait <= 0.1 + 1e-6

    def test_garbage_in_the_learned_state_is_rewritten(
        self, redis_server: str, request: pytest.FixtureRequest
    ) -> None:
        """A meter that is not numbers (or NaN) counts as no state: the next
        reservation writes a fresh one and books against it."""
        import trio

        backend = RedisBackend(redis_server)
        key = _key(request)
        backend._client.hset(
            backend.rate_key(key), mapping={"version": "3", "due": "nan", "sent": "x"}
        )
        learner = LearnedRate(backend=backend, key=key, policy=RatePolicy(), clock=lambda: 0.0)
        with pytest.warns(RuntimeWarning, match="rate:.*test_garbage.*not a number"):
            grant = trio.run(learner.reserve)
        assert 0.0 <= grant.wait < 1.0
        assert backend.read_rate_now(key).state is not None

    def test_a_huge_file_debt_is_not_an_endless_wait(self, tmp_path: Path) -> None:
        backend = FileBackend(tmp_path, clock=lambda: 100.0)
        backend.bucket_path("agent").write_text('{"tokens": -1e9, "stamp": 100.0}')
        assert backend.reserve_now("agent", rate=10.0, burst=1) <= 0.1 + 1e-6

    @pytest.mark.parametrize("text", ["[" * 100_000, '{"tokens": ' * 50_000, "\x00\xff"])
    def test_unreadable_file_state_counts_as_empty(self, tmp_path: Path, text: str) -> None:
        """A bucket or document nested 100,000 deep (or binary junk): empty state, no
        crash (a bucket restarts empty, a document as none)."""
        backend = FileBackend(tmp_path, clock=lambda: 100.0)
        backend.bucket_path("agent").write_text(text)
        backend.state_path("agent").write_text(text)
        assert backend.reserve_now("agent", rate=10.0, burst=1) == pytest.approx(0.1)
        seen: list[object] = []

        def look(document: dict[str, Any] | None, now: float) -> tuple[dict[str, Any], None]:
            seen.append(document)
            return {}, None

        backend.transact_now("agent", look)
        assert seen == [None]


HOST_IN_PASSWORD = "redis://:pw@SecretPart99#Tail99@127.0.0.1:1/0"


class TestRedisUrlSecrets:
    @pytest.mark.parametrize(
        ("url", "secrets"),
        [
            ("redis://:p@ss#word99@127.0.0.1:1/0", ["p@ss#word99", "word99"]),
            ("redis://:LongSecretPw99/x@127.0.0.1:1/0", ["LongSecretPw99"]),
            # the URL parser reads "SecretPart99" as the host and lower-cases it
            (HOST_IN_PASSWORD, ["SecretPart99", "Tail99"]),
        ],
    )
    def test_an_unencoded_password_never_shows(self, url: str, secrets: list[str]) -> None:
        """Passwords holding ``@``, ``#`` or ``/`` unencoded: neither redis-py's
        "Port could not be cast" message nor a connection error shows them, in any
        letter case."""
        messages = []
        try:
            backend = RedisBackend(url)
        except ValueError as error:
            messages.append(str(error))
        else:
            messages += [backend.description, repr(backend)]
            with pytest.raises(Exception) as caught:  # noqa: PT011 - any failure will do
                backend.reserve_now("k", rate=1.0, burst=1)
            messages.append(str(caught.value))
        assert messages
        for message in messages:
            for secret in secrets:
                assert secret.lower() not in message.lower(), message

    @pytest.mark.anyio
    async def test_the_error_result_of_a_limited_agent_shows_no_password(self) -> None:
        """What a user sees: the ERROR summary of a probe whose limiter's Redis URL
        holds such a password (redis-py tries the host it read from the password)."""
        agent = limit(replying_agent(), rate=100, backend=RedisBackend(HOST_IN_PASSWORD))
        evaluator = ResponseContains("never said", scope=ResponseScope.ANY_TURN)
        result = await Probes.behavior(prompt="hi", evaluator=evaluator).execute_async(
            adapter=agent
        )
        assert result.status is SafetyStatus.ERROR
        assert "RedisBackend redis://:***@" in result.summary
        for secret in ("secretpart99", "tail99"):
            assert secret not in result.summary.lower(), result.summary
