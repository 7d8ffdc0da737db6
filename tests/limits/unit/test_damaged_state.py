"""Shared learned-rate state that is damaged, out of range or written by another version
never turns pacing off and never fails every request (issue 33, item 2).

Each case writes a valid state through a ``LearnedRate``, damages it the way a broken
or hostile writer would (through a plain Redis client, or the state file), and then
checks, for a process that already holds a view of the state and for one that joins
afterwards: a warning names the key; reservations made at one instant are spaced (at
most the fresh start's rate, so pacing is on); a refusal cuts the rate and the cut is
stored. Against a real ``redis-server`` on 127.0.0.1, on asyncio and trio.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import TYPE_CHECKING, Any

import pytest
import redis

from rampart.core.errors import InfrastructureError
from rampart.limits import FileBackend, RedisBackend
from rampart.limits._policy import _learned_rate as lr
from rampart.limits._policy._learned_rate import Pacing, RatePolicy
from rampart.limits._shared_rate import LearnedRate

if TYPE_CHECKING:
    from pathlib import Path

    from rampart.limits._policy._learned_rate import Grant


class FakeClock:
    def __init__(self) -> None:
        self.now = 5000.0

    def __call__(self) -> float:
        return self.now


POLICY = RatePolicy(burst=1)
SPACING = 1.0 / lr.DEFAULT_INITIAL_RATE


def _document(**changes: object) -> dict[str, Any]:
    return {"document": changes}


# Damage to the Redis hash: raw field values, or changes to the JSON document.
REDIS_DAMAGE: dict[str, dict[str, Any]] = {
    "version 1.5": {"version": "1.5"},
    "version 1e30": {"version": "1e30"},
    "version abc": {"version": "abc"},
    "version 0": {"version": "0"},
    "version not UTF-8": {"version": b"\xff\xfe"},
    "version with 15 digits": {"version": "100000000000000"},
    "no version": {"version": None},
    "document nested 100,000 deep": {"document": "[" * 100_000},
    "document not UTF-8": {"document": b'{"v": 1\xff}'},
    "document of another format": _document(v=2),
    "peak 1e300": _document(peak=1e300, phase="probe"),
    "origin and peak 1e300": _document(origin=1e300, peak=1e300, phase="probe"),
    "epoch -1e300": _document(epoch=-1e300),
    "doubling 1e-300": _document(doubling=1e-300, phase="start"),
    "hint 1e300": _document(hint=1e300),
    "latency -1": _document(latency=-1.0),
    "last cut in the future": _document(last_cut=1e12),
    "cuts a string": _document(cuts="7"),
    "shift -1e300": {"shift": "-1e300"},
    "shift 1_0": {"shift": "1_0"},
    "sent 1e300": {"sent": "1e300"},
    "refused nan": {"refused": "nan"},
    "window 1e-300": {"window": "1e-300"},
    "tally 1e300": {"tally": "1e300"},
    "stamp far ahead of the clock": {"stamp": "1e15"},
    "measured_at far ahead of the clock": {"measured_at": "1e15"},
}


def _damage(url: str, name: str, damage: dict[str, Any]) -> None:
    client = redis.Redis.from_url(url)
    try:
        for field, value in damage.items():
            if field == "document" and isinstance(value, dict):
                stored = json.loads(client.hget(name, "document"))
                stored.update(value)
                if value.get("phase") == "start":
                    stored["origin"] = stored["peak"]
                client.hset(name, "document", json.dumps(stored))
            elif value is None:
                client.hdel(name, field)
            else:
                client.hset(name, field, value)
    finally:
        client.close()


async def _damaged(
    url: str, request: pytest.FixtureRequest, damage: dict[str, Any]
) -> tuple[FakeClock, str, RedisBackend, LearnedRate]:
    """A fresh state written by a ``LearnedRate`` (which keeps a view of it), then
    damaged, 10 s later on the fake clock."""
    clock = FakeClock()
    key = f"{request.node.nodeid}"
    backend = RedisBackend(url, clock=clock)
    backend._client.delete(backend.rate_key(key))
    holder = LearnedRate(backend=backend, key=key, policy=POLICY, clock=clock)
    await holder.reserve()
    _damage(url, backend.rate_key(key), damage)
    clock.now += 10.0
    return clock, key, backend, holder


async def _spaced(learner: LearnedRate, clock: FakeClock, count: int = 5) -> list[Grant]:
    """``count`` reservations 10 ms apart, after the first each with requests queued
    behind the rate (so the time counts for growth): with pacing on, their due times are
    spaced at about the fresh start's rate (slow start grows it meanwhile, by at most
    ``growth``)."""
    growth = 2.0 ** (0.01 * count / lr.DOUBLING) * 1.001
    grants, dues = [], []
    for index in range(count):
        grant = await learner.reserve(held=index > 0)
        grants.append(grant)
        dues.append(clock.now + grant.wait)
        clock.now += 0.01
    for earlier, later in itertools.pairwise(dues):
        assert later - earlier >= SPACING / growth, dues
    assert all(grant.rate <= lr.DEFAULT_INITIAL_RATE * growth for grant in grants), grants
    return grants


async def _assert_a_refusal_cuts(learner: LearnedRate, grant: Grant) -> None:
    assert await learner.throttled(grant, [])
    assert learner.statistics().rate < grant.rate
    assert learner.statistics().cuts >= 1


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(REDIS_DAMAGE))
async def test_damaged_redis_state_is_rewritten_and_pacing_stays_on(
    anyio_backend: str, redis_server: str, request: pytest.FixtureRequest, case: str
) -> None:
    clock, key, backend, holder = await _damaged(redis_server, request, REDIS_DAMAGE[case])
    # A process that joins now reads the damaged state first.
    joining = LearnedRate(
        backend=RedisBackend(redis_server, clock=clock), key=key, policy=POLICY, clock=clock
    )
    with pytest.warns(RuntimeWarning, match=f"rate:{re.escape(key)}"):
        grants = await _spaced(joining, clock)
    await _assert_a_refusal_cuts(joining, grants[-1])
    # The cut is stored, and the holder (with its old view) hears it and paces at it.
    stored = backend.read_rate_now(key)
    assert stored.state is not None
    assert stored.state.generation >= 1
    assert stored.damage is None
    clock.now += 10.0
    held = await holder.reserve()
    assert holder.generation == stored.state.generation
    assert held.rate <= lr.DEFAULT_INITIAL_RATE


@pytest.mark.anyio
@pytest.mark.parametrize(
    "case", [case for case in REDIS_DAMAGE if not REDIS_DAMAGE[case].get("document")]
)
async def test_a_holder_of_a_view_rewrites_the_state_the_script_refuses(
    anyio_backend: str, redis_server: str, request: pytest.FixtureRequest, case: str
) -> None:
    """The process that wrote the state goes on booking against it: when the script
    refuses the damaged hash, the state is written afresh (once) and booking goes on."""
    clock, key, backend, holder = await _damaged(redis_server, request, REDIS_DAMAGE[case])
    with pytest.warns(RuntimeWarning, match=f"rate:{re.escape(key)}"):
        grants = await _spaced(holder, clock)
    await _assert_a_refusal_cuts(holder, grants[-1])
    assert backend.read_rate_now(key).damage is None


@pytest.mark.anyio
async def test_a_state_damaged_under_every_reservation_names_the_key(
    anyio_backend: str, redis_server: str, request: pytest.FixtureRequest
) -> None:
    """Something keeps damaging the key between every rewrite and the booking: after
    ``RESERVE_ATTEMPTS`` rewrites the reservation fails with an ``InfrastructureError``
    naming the key (the request becomes an ERROR result), never unpaced."""
    key = f"{request.node.nodeid}"

    class Vandalised(RedisBackend):
        def reserve_rate_now(self, key: str, **kwargs: Any) -> Any:
            self._client.hset(self.rate_key(key), "version", "abc")
            return super().reserve_rate_now(key, **kwargs)

    backend = Vandalised(redis_server)
    backend._client.delete(backend.rate_key(key))
    learner = LearnedRate(backend=backend, key=key, policy=POLICY, clock=lambda: 0.0)
    with (
        pytest.raises(InfrastructureError, match=f"learned rate {re.escape(repr(key))}.*unusable"),
        pytest.warns(RuntimeWarning),
    ):
        await learner.reserve()


# -- the script and the reader agree on what is valid -------------------------------

_TEXTS = [
    "nan", "inf", "-inf", "1e309", "", "x", "1_0", " 5", "0x10", "5 ", "+1", "-0", ".5", "5.",
    "1e-300", "1e300", "-1e300",
]  # fmt: skip


def _values(field: str) -> list[str]:
    low, high = lr.RANGES.get(field, (-1e300, 1e300))
    near = [low, high, low - abs(low) * 1e-9 - 1e-12, high + abs(high) * 1e-9 + 1e-12]
    return [repr(float(v)) for v in near if abs(v) < 1e308] + _TEXTS


_FIELD_VALUES = [
    *((field, value) for field in lr.METER_FIELDS for value in _values(field)),
    *(("shift", value) for value in ["0", "-1e-9", "1e300", *_TEXTS]),
    *(
        ("version", value)
        for value in [
            "1",
            "0",
            "01",
            "-1",
            "1.5",
            "1e3",
            "abc",
            "99999999999999",
            "100000000000000",
            " 1",
        ]
    ),
]


def test_the_script_refuses_only_what_the_reader_refuses(
    redis_server: str, request: pytest.FixtureRequest
) -> None:
    """Every meter field, the shift and the version, at and just beyond its range and as
    odd text: whenever the reservation script refuses a stored value, the Python reader
    refuses it too (else the state would never be rewritten and every reservation
    would fail); for decimal numbers (what the writers store) they agree exactly, but
    for the stamp and the shift (the reader also checks them against the document)."""
    clock = FakeClock()
    backend = RedisBackend(redis_server, clock=clock)
    key = f"{request.node.nodeid}"
    name = backend.rate_key(key)
    disagreements = []
    for field, value in _FIELD_VALUES:
        backend._client.delete(name)
        state = lr.fresh(clock.now, POLICY)
        backend.write_rate_now(key, read=backend.read_rate_now(key), state=state)
        backend._client.hset(name, field, value)
        reader_refuses = backend.read_rate_now(key).state is None
        pacing = Pacing(rate=4.0, burst=1, capped=False, window=1.0)
        script_refuses = (
            backend.reserve_rate_now(key, version=1, pacing=pacing, forfeited=0) is None
        )
        # The stamp and the shift also relate to the document's epoch, which only the
        # reader sees: for those, the script may accept what the reader refuses.
        decimal = _DECIMAL.fullmatch(value) is not None and field not in ("stamp", "shift")
        if (script_refuses and not reader_refuses) or (
            decimal and script_refuses != reader_refuses
        ):
            disagreements.append((field, value, script_refuses, reader_refuses))
    assert disagreements == [], disagreements


_DECIMAL = re.compile(r"-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?")
"""What the writers store (``repr`` of a float, ``'%.17g'``, a version)."""


# -- the file backend's twin ---------------------------------------------------------

FILE_DAMAGE: dict[str, dict[str, object]] = {
    "peak 1e300": {"peak": 1e300, "phase": "probe"},
    "origin and peak 1e300": {"origin": 1e300, "peak": 1e300, "phase": "probe"},
    "epoch -1e300": {"epoch": -1e300},
    "doubling 1e-300": {"doubling": 1e-300, "phase": "start"},
    "hint 1e300": {"hint": 1e300},
    "window 1e-300": {"window": 1e-300},
    "sent 1e300": {"sent": 1e300},
    "format 2": {"v": 2},
    "cuts a float": {"cuts": 1.5},
    "stamp 1e300": {"stamp": 1e300},
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(FILE_DAMAGE))
async def test_damaged_state_file_is_rewritten_and_pacing_stays_on(
    anyio_backend: str, tmp_path: Path, case: str
) -> None:
    clock = FakeClock()
    backend = FileBackend(tmp_path, clock=clock)
    learner = LearnedRate(backend=backend, key="agent", policy=POLICY, clock=clock)
    await learner.reserve()
    path = backend.state_path("agent")
    stored = json.loads(path.read_text())
    stored.update(FILE_DAMAGE[case])
    if stored["phase"] == "start":
        stored["origin"] = stored["peak"]
    path.write_text(json.dumps(stored))
    clock.now += 10.0
    with pytest.warns(RuntimeWarning, match="learned rate 'agent' \\(file:"):
        grants = await _spaced(learner, clock)
    await _assert_a_refusal_cuts(learner, grants[-1])
    again = lr.LearnedState.from_dict(json.loads(path.read_text()))
    assert again is not None
    assert again.generation >= 1


@pytest.mark.anyio
@pytest.mark.parametrize("store", ["redis", "file"])
async def test_under_warnings_as_errors_only_one_reservation_fails(
    anyio_backend: str,
    redis_server: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    store: str,
) -> None:
    """With warnings turned into errors (``-W error``, as this suite runs), the warning
    fails the reservation that found the damage, after the state was rewritten: the
    next one is paced on the fresh state, so not every request fails."""
    clock = FakeClock()
    key = f"{request.node.nodeid}"
    if store == "redis":
        backend: RedisBackend | FileBackend = RedisBackend(redis_server, clock=clock)
        assert isinstance(backend, RedisBackend)
        backend._client.delete(backend.rate_key(key))
    else:
        backend = FileBackend(tmp_path, clock=clock)
    writer = LearnedRate(backend=backend, key=key, policy=POLICY, clock=clock)
    await writer.reserve()
    if isinstance(backend, RedisBackend):
        _damage(redis_server, backend.rate_key(key), {"version": "abc"})
    else:
        path = backend.state_path(key)
        path.write_text(path.read_text().replace('"peak": 4.0', '"peak": 1e300'))
    clock.now += 10.0
    joining = LearnedRate(backend=backend, key=key, policy=POLICY, clock=clock)
    with pytest.raises(RuntimeWarning, match="rewritten from a fresh start"):
        await joining.reserve()
    grants = await _spaced(joining, clock)
    assert grants[0].generation == 0
