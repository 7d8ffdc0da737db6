"""``RedisBackend``: one token bucket per key in Redis, shared by every host.

Every per-request operation is **one Lua script, one round trip**, which Redis runs
atomically: the fixed bucket's reservation (``_SCRIPT``) and the learned rate's
(``_RESERVE_RATE``, the arithmetic of ``_learned_rate.book``; the caller passes the rate it
computed from its last view of the learned state, and the script sends the current
state back whenever that view was stale). Nothing is locked, so a host that crashes
mid-request leaves nothing behind.

Learning events (a cut, a stated limit, a latency report) are rare writes: one script
reads the learned state, the pure transition runs here, and a second script stores
it. Changes to the counters are applied as differences, so they never conflict; a
change to the learned part is a compare-and-set on its version, retried with jittered
exponential backoff (``MAX_TRANSACT_ATTEMPTS``) when another host wrote first.
``transact`` (a generic shared document) is the same compare-and-set with the same
backoff: contention slows it down, it never makes it give up early.

It measures time with the server's ``TIME`` (one clock for every host) unless the
backend was given a ``clock``. The synchronous redis-py client runs in a worker thread
(``anyio.to_thread``), which works on asyncio and trio alike (``redis.asyncio`` runs on
asyncio only, and its connections are bound to one event loop); redis-py is imported
only when a ``RedisBackend`` is created (optional extra ``rampart[redis]``).
"""

from __future__ import annotations

import json
import math
import random
import re
import time
import urllib.parse
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from rampart._checks import check_callable, check_instance, check_text, invalid
from rampart._redact import Masked, redact, register_secret, register_url_secrets
from rampart.core.errors import InfrastructureError
from rampart.limits._backends import read_state_json
from rampart.limits._policy import _learned_rate
from rampart.limits._shared_rate import Booked, RateSnapshot

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["RedisBackend"]

T = TypeVar("T")

DEFAULT_PREFIX = "rampart:limits:"

DOCUMENT_TTL_MS = 3_600_000
"""A learned-rate document expires after an hour without use."""

MAX_TRANSACT_ATTEMPTS = 1000
"""Compare-and-set attempts before ``transact`` gives up. With the jittered backoff
below (up to ``BACKOFF_CAP`` seconds between attempts) that is minutes of being
overtaken every time: contention alone never reaches it."""

BACKOFF_BASE = 0.0005
BACKOFF_CAP = 0.05
"""Seconds: a compare-and-set that lost waits a random time in ``[0, min(cap, base *
2 ** attempt))`` (full jitter) before it reads again, so contenders spread out."""

MAX_BACKLOG = _learned_rate.MAX_BACKLOG
"""Seconds: shared bucket state that implies a longer wait than this (``tokens`` far
below zero, a stamp far in the future) is damaged, and the bucket restarts empty."""

_OWNER = "RedisBackend"
_URL = "a redis://, rediss:// or unix:// URL"

# KEYS[1] bucket hash; ARGV: rate, burst, now ('' = use the server's TIME), backlog.
# Returns {wait, now} in seconds as strings (Lua numbers would be truncated to integers).
_SCRIPT = """
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[3])
end
local backlog = tonumber(ARGV[4])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1])
local stamp = tonumber(state[2])
if tokens == nil or stamp == nil then
  tokens = burst
elseif tokens ~= tokens or stamp ~= stamp or tokens < -rate * backlog
    or stamp > now + backlog or stamp < now - 1e9 then
  -- damaged or hostile state (NaN, a debt of hours, a stamp from far away): restart
  -- the bucket empty, which can delay requests but never lets more through
  tokens = 0
  stamp = now
else
  local elapsed = now - stamp
  if elapsed > 0 then
    tokens = math.min(burst, tokens + elapsed * rate)
  else
    tokens = math.min(burst, tokens)
  end
end
tokens = tokens - 1
local wait = 0
if tokens < 0 then
  wait = -tokens / rate
end
redis.call('HSET', KEYS[1], 'tokens', string.format('%.17g', tokens),
           'stamp', string.format('%.17g', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate * 1000) + 60000)
return {string.format('%.17g', wait), string.format('%.17g', now)}
"""


# The prelude of every script whose ARGV[1] is the time: ``now`` in seconds, from the
# caller or ('') from the server's TIME.
_NOW = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) + tonumber(t[2]) / 1000000
else
  now = tonumber(ARGV[1])
end
"""

# KEYS[1] document; ARGV[1] now. Returns {document or '', now}.
_READ = (
    _NOW
    + """
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
return {current, string.format('%.17g', now)}
"""
)

# KEYS[1] document; ARGV: the document read ('' = none), the new one, TTL in ms.
# Stores the new document only if nobody changed it since it was read.
_COMPARE_AND_SET = """
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
"""

_METER = ", ".join(f"'{name}'" for name in _learned_rate.METER_FIELDS)

MAX_VERSION_DIGITS = 14
"""A learned rate's ``version`` is a decimal integer from 1 with at most this many
digits (Lua 5.1 shows numbers with 14 significant digits); anything else is damaged,
in the scripts and in ``_version`` alike."""

# A stored version: 0 when there is none, -1 when it is not one this code writes.
_VERSION_OF = f"""
local function version_of(raw)
  if raw == false or raw == nil or raw == '' then return 0 end
  if #raw <= {MAX_VERSION_DIGITS} and string.match(raw, '^[1-9]%d*$') then
    return tonumber(raw)
  end
  return -1
end
"""


def _meter_checks() -> str:
    """Lua that returns false unless the meter ``m`` (numbers by field name, read at
    ``now``) and ``shift`` are within the ranges the Python reader enforces
    (``_learned_rate.RANGES`` and ``RELATIVE``, the shared clock's skew)."""
    lines = ["local function meter_ok(m, shift, now)"]
    for value in [*(f"m.{name}" for name in _learned_rate.METER_FIELDS), "shift"]:
        lines.append(
            f"  if {value} == nil or {value} ~= {value} or {value} == math.huge"
            f" or {value} == -math.huge then return false end"
        )
    for name in _learned_rate.METER_FIELDS:
        low, high = _learned_rate.RANGES.get(name, (-math.inf, math.inf))
        if math.isfinite(low):
            lines.append(f"  if m.{name} < {low!r} then return false end")
        if math.isfinite(high):
            lines.append(f"  if m.{name} > {high!r} then return false end")
        low, high = _learned_rate.RELATIVE.get(name, (-math.inf, math.inf))
        if math.isfinite(low):
            lines.append(f"  if m.{name} < m.stamp - {-low!r} then return false end")
        if math.isfinite(high):
            lines.append(f"  if m.{name} > m.stamp + {high!r} then return false end")
    lines += [
        "  if shift < 0 then return false end",
        f"  if m.stamp > now + {_learned_rate.MAX_BACKLOG!r} then return false end",
        f"  if m.measured_at > now + {_learned_rate.MAX_BACKLOG!r} then return false end",
        "  return true",
        "end",
    ]
    return "\n".join(lines) + "\n"


# KEYS[1] the learned rate's hash: 'version', 'document' (JSON: the learned part),
# 'shift' (idle seconds not yet in the document's epoch) and the meter fields.
# ARGV: now, version seen, rate, burst, capped (1/0), window, forfeited, ttl ms,
# backlog, decay per reservation, held (1/0: the caller has requests queued behind
# the rate; see _learned_rate.book).
# Returns {'missing', now} when there is no (usable) state, {'ok', now, wait, shift,
# due, stamp} when the caller's version is current (the least a reply needs), else
# {'stale', now, wait, shift, the whole meter, version, document}.
_RESERVE_RATE = (
    _NOW
    + _VERSION_OF
    + _meter_checks()
    + f"""
local f = redis.call('HMGET', KEYS[1], 'version', 'shift', {_METER})
local version = version_of(f[1])
local shift = tonumber(f[2])
local m = {{}}
local names = {{{_METER}}}
for i = 1, #names do m[names[i]] = tonumber(f[i + 2]) end
if version <= 0 or not meter_ok(m, shift, now) then
  return {{'missing', string.format('%.17g', now)}}
end
local due, stamp, sent, refused = m.due, m.stamp, m.sent, m.refused
local measured, window_old = m.measured_at, m.window
local tally, tally_refused = m.tally, m.tally_refused
local rate, burst = tonumber(ARGV[3]), tonumber(ARGV[4])
local capped, window, forfeited = ARGV[5] == '1', tonumber(ARGV[6]), tonumber(ARGV[7])
local backlog, keep = tonumber(ARGV[9]), tonumber(ARGV[10])
local max_meter = {_learned_rate.MAX_METER_RATE!r}
if due > now + backlog then due = now end
local held = ARGV[11] == '1'
if now > stamp and ((now >= due and not held) or capped) then shift = shift + (now - stamp) end
local spacing = 1 / rate
local start = math.max(now, due - (burst - 1) * spacing)
due = math.max(due, start) + spacing
local decay = math.exp(-math.max(0, now - measured) / window_old)
tally = math.max(0, tally * keep + 1 - forfeited)
tally_refused = tally_refused * keep
sent = math.min(max_meter, math.max(0, sent * decay + (1 - forfeited) / window))
refused = refused * decay
measured = math.max(now, measured)
stamp = math.max(now, stamp)
local function g(x) return string.format('%.17g', x) end
redis.call('HSET', KEYS[1], 'shift', g(shift), 'due', g(due), 'stamp', g(stamp),
           'sent', g(sent), 'refused', g(refused), 'measured_at', g(measured),
           'window', g(window), 'tally', g(tally), 'tally_refused', g(tally_refused))
redis.call('PEXPIRE', KEYS[1], ARGV[8])
if version == tonumber(ARGV[2]) then
  return {{'ok', g(now), g(start - now), g(shift), g(due), g(stamp)}}
end
return {{'stale', g(now), g(start - now), g(shift), g(due), g(stamp), g(sent), g(refused),
        g(measured), g(window), g(tally), g(tally_refused), f[1],
        redis.call('HGET', KEYS[1], 'document') or ''}}
"""
)

# KEYS[1] the learned rate's hash; ARGV: now. Returns {now, version or '', shift or '',
# document or '', meter fields as stored ('' when absent)}.
_READ_RATE = (
    _NOW
    + f"""
local f = redis.call('HMGET', KEYS[1], 'version', 'shift', 'document', {_METER})
local reply = {{string.format('%.17g', now)}}
for i = 1, {3 + len(_learned_rate.METER_FIELDS)} do reply[i + 1] = f[i] or '' end
return reply
"""
)

# KEYS[1] the learned rate's hash; ARGV: mode, version read, document, the meter
# (absolute for 'init'; for 'delta' and 'cas' the differences to add to due, sent,
# refused, tally, tally_refused, and stamp, measured_at as lower bounds, window as is),
# shift read, ttl ms.
# 'init' and 'cas' store only if the version is still the one read (0: no state, -1:
# a damaged one, see version_of; 'init' then rewrites the whole hash);
# 'delta' changes only counters, so it needs no check (only that the state exists).
# Returns {1, version} when stored, {0, version} when another host wrote first.
_WRITE_RATE = (
    _VERSION_OF
    + f"""
local mode, seen = ARGV[1], tonumber(ARGV[2])
local current = version_of(redis.call('HGET', KEYS[1], 'version'))
local function g(x) return string.format('%.17g', x) end
local names = {{{_METER}}}
if mode == 'delta' then
  if current == 0 then return {{0, current}} end
elseif current ~= seen then
  return {{0, current}}
end
if mode == 'init' then
  current = math.max(current, 0) + 1
  redis.call('DEL', KEYS[1])
  redis.call('HSET', KEYS[1], 'version', string.format('%d', current), 'shift', '0',
             'document', ARGV[3])
  for i = 1, #names do redis.call('HSET', KEYS[1], names[i], ARGV[3 + i]) end
else
  local f = redis.call('HMGET', KEYS[1], 'shift', unpack(names))
  local m = {{}}
  for i = 1, #names do m[names[i]] = tonumber(f[i + 1]) or 0 end
  local d = {{}}
  for i = 1, #names do d[names[i]] = tonumber(ARGV[3 + i]) end
  local fields = {{
    'due', g(m.due + d.due),
    'sent', g(math.min({_learned_rate.MAX_METER_RATE!r}, math.max(0, m.sent + d.sent))),
    'refused', g(math.min({_learned_rate.MAX_METER_RATE!r}, math.max(0, m.refused + d.refused))),
    'tally', g(math.min({_learned_rate.MAX_TALLY!r}, math.max(0, m.tally + d.tally))),
    'tally_refused', g(math.min({_learned_rate.MAX_COUNT!r},
                                math.max(0, m.tally_refused + d.tally_refused))),
    'stamp', g(math.max(m.stamp, d.stamp)),
    'measured_at', g(math.max(m.measured_at, d.measured_at)),
    'window', g(d.window)}}
  if mode == 'cas' then
    local shift = (tonumber(f[1]) or 0) - tonumber(ARGV[{4 + len(_learned_rate.METER_FIELDS)}])
    table.insert(fields, 'shift')
    table.insert(fields, g(math.max(0, shift)))
    table.insert(fields, 'document')
    table.insert(fields, ARGV[3])
    table.insert(fields, 'version')
    table.insert(fields, string.format('%d', current + 1))
    current = current + 1
  end
  redis.call('HSET', KEYS[1], unpack(fields))
end
redis.call('PEXPIRE', KEYS[1], ARGV[{5 + len(_learned_rate.METER_FIELDS)}])
return {{1, current}}
"""
)


class RedisBackend:
    """Token buckets in Redis at ``url`` (``redis://host:port/db``), keyed ``prefix + key``.

    ``clock`` ``None`` uses the Redis server's clock, which every host shares; tests may
    pass their own. Connection and script errors raise ``InfrastructureError`` naming
    the URL, so affected trials become ERROR results. The URL's password (in its user
    info or a ``?password=`` parameter) is registered with the redaction policy and
    never shown: not in messages, ``description``, ``repr()`` or statistics, even when
    it holds characters a URL must encode (``@``, ``#``, ``/``) and was not encoded.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] | None = None,
    ) -> None:
        # Held as ``Masked`` from the start: a traceback shows this frame's arguments.
        url = Masked(url) if isinstance(url, str) else url
        url = Masked(check_text(_OWNER, "url", url, secret=True))
        _register_raw_userinfo(url)
        register_url_secrets(url)
        if urllib.parse.urlsplit(url).scheme not in {"redis", "rediss", "unix"}:
            raise invalid(_OWNER, "url", _URL, url, error=ValueError, shown=repr(redact(url)))
        check_instance(_OWNER, "prefix", prefix, str, expected="a str")
        check_callable(
            _OWNER, "clock", clock, expected="a callable returning seconds", optional=True
        )
        try:
            import redis
        except ImportError:
            raise ImportError(
                "RedisBackend needs the optional dependency redis-py: pip install 'rampart[redis]'"
            ) from None
        self._url = url
        self._prefix = prefix
        self._clock = clock
        self._rng = random.Random()
        try:
            self._client: Any = redis.Redis.from_url(url)
        except ValueError as error:
            # redis-py's own message quotes the URL's parts ("Port could not be cast to
            # integer value as '<password>'"): show it redacted and drop the original.
            raise invalid(
                _OWNER,
                "url",
                f"{_URL} ({redact(str(error))})",
                url,
                error=ValueError,
                shown=repr(redact(url)),
            ) from None
        self._script: Any = self._client.register_script(_SCRIPT)
        self._read: Any = self._client.register_script(_READ)
        self._compare_and_set: Any = self._client.register_script(_COMPARE_AND_SET)
        self._reserve_rate_script: Any = self._client.register_script(_RESERVE_RATE)
        self._read_rate_script: Any = self._client.register_script(_READ_RATE)
        self._write_rate_script: Any = self._client.register_script(_WRITE_RATE)
        self._errors: tuple[type[BaseException], ...] = (redis.exceptions.RedisError,)

    def __repr__(self) -> str:
        return f"RedisBackend({redact(self._url)!r}, prefix={self._prefix!r})"

    @property
    def description(self) -> str:
        return redact(self._url)

    @property
    def prefix(self) -> str:
        return self._prefix

    def _now(self) -> str:
        return "" if self._clock is None else repr(float(self._clock()))

    def _failed(self, what: str, key: str, error: BaseException) -> InfrastructureError:
        return InfrastructureError(
            redact(f"RedisBackend {self._url}: could not {what} {key!r}: {error}")
        )

    def reserve_now(self, key: str, *, rate: float, burst: int) -> float:
        """The blocking reservation (runs in a worker thread from ``acquire``)."""
        return self._reserve(key, rate=rate, burst=burst)[1]

    def _reserve(self, key: str, *, rate: float, burst: int) -> tuple[float, float]:
        """``(now, wait)``: the reservation and the clock reading it was made at."""
        try:
            reply = self._script(
                keys=[self._prefix + key], args=[repr(rate), burst, self._now(), MAX_BACKLOG]
            )
        except self._errors as error:
            raise self._failed("reserve a token for", key, error) from error
        wait, stamp = (float(item) for item in reply)
        return stamp, wait

    async def acquire(self, key: str, *, rate: float, burst: int) -> float:
        check_text("RedisBackend.acquire", "key", key)
        return await anyio.to_thread.run_sync(self._reserve_call, key, rate, burst)

    def _reserve_call(self, key: str, rate: float, burst: int) -> float:
        return self.reserve_now(key, rate=rate, burst=burst)

    # -- the learned rate (see rampart.limits._shared_rate.AtomicRateBackend) -------------

    def rate_key(self, key: str) -> str:
        """The Redis key of the learned rate ``key`` (a hash)."""
        return f"{self._prefix}rate:{key}"

    def reserve_rate_now(
        self,
        key: str,
        *,
        version: int,
        pacing: _learned_rate.Pacing,
        forfeited: int,
        held: bool = False,
    ) -> Booked | None:
        """The blocking ``reserve_rate``: one script, one round trip."""
        args = [
            self._now(),
            version,
            repr(pacing.rate),
            pacing.burst,
            1 if pacing.capped else 0,
            repr(pacing.window),
            forfeited,
            *_RESERVE_CONSTANTS,
            1 if held else 0,
        ]
        try:
            reply = self._reserve_rate_script(keys=[self.rate_key(key)], args=args)
        except self._errors as error:
            raise self._failed("reserve a token at the learned rate of", key, error) from error
        status = _text(reply[0])
        if status == "missing":
            return None
        if status == "ok":
            now, wait, shift, due, stamp = map(float, reply[1:6])
            return Booked(now=now, wait=wait, shift=shift, meter={"due": due, "stamp": stamp})
        numbers = [float(item) for item in reply[1:12]]
        meter = dict(zip(_learned_rate.METER_FIELDS, numbers[3:], strict=True))
        stale = (_version(reply[12]), _parse_document(reply[13]))
        return Booked(now=numbers[0], wait=numbers[1], shift=numbers[2], meter=meter, stale=stale)

    async def reserve_rate(
        self,
        key: str,
        *,
        version: int,
        pacing: _learned_rate.Pacing,
        forfeited: int,
        held: bool = False,
    ) -> Booked | None:
        return await anyio.to_thread.run_sync(
            lambda: self.reserve_rate_now(
                key, version=version, pacing=pacing, forfeited=forfeited, held=held
            )
        )

    def read_rate_now(self, key: str) -> RateSnapshot:
        """The blocking ``read_rate``."""
        try:
            reply = self._read_rate_script(keys=[self.rate_key(key)], args=[self._now()])
        except self._errors as error:
            raise self._failed("read the learned rate of", key, error) from error
        now = float(reply[0])
        version = _version(reply[1])
        shift = _float(reply[2])
        document = _parse_document(reply[3])
        meter: dict[str, float] = {}
        for name, raw in zip(_learned_rate.METER_FIELDS, reply[4:], strict=True):
            value = _float(raw)
            if value is not None:
                meter[name] = value
        state, damage = None, None
        if version == 0:
            if any(_text(item) for item in reply[2:]):
                damage = "its version is missing"
        elif version < 0:
            damage = f"its version {_text(reply[1])!r:.40} is not an integer from 1"
        elif shift is None:
            damage = f"its idle shift {_text(reply[2])!r:.40} is not a number"
        elif len(meter) < len(_learned_rate.METER_FIELDS):
            missing = [name for name in _learned_rate.METER_FIELDS if name not in meter]
            damage = f"its {missing[0]} is not a number"
        else:
            try:
                state = _learned_rate.join(document, meter, shift=shift, now=now)
            except _learned_rate.DamagedState as error:
                damage = str(error)
        return RateSnapshot(
            version=version,
            document=document,
            meter=meter,
            shift=shift or 0.0,
            now=now,
            state=state,
            damage=None if damage is None else f"{self.rate_key(key)}: {damage}",
        )

    async def read_rate(self, key: str) -> RateSnapshot:
        return await anyio.to_thread.run_sync(self.read_rate_now, key)

    def write_rate_now(
        self,
        key: str,
        *,
        read: RateSnapshot,
        state: _learned_rate.LearnedState,
        rewrite: bool = False,
    ) -> int | None:
        """The blocking ``write_rate``: the new version, or ``None`` if another host
        changed the learned part since ``read``. ``rewrite``: store the whole state
        afresh (the reservation script found the stored one unusable)."""
        document, meter = _learned_rate.split(state)
        stored = json.dumps(document, allow_nan=False)
        before = read.state
        if before is None or rewrite:
            mode, values = "init", [meter[name] for name in _learned_rate.METER_FIELDS]
        else:
            old_document, old_meter = _learned_rate.split(before)
            mode = "delta" if old_document == document else "cas"
            values = [
                meter[name] if name in _ABSOLUTE else meter[name] - old_meter[name]
                for name in _learned_rate.METER_FIELDS
            ]
        args = [mode, read.version, stored, *map(repr, values), repr(read.shift), DOCUMENT_TTL_MS]
        try:
            written, version = self._write_rate_script(keys=[self.rate_key(key)], args=args)
        except self._errors as error:
            raise self._failed("update the learned rate of", key, error) from error
        return int(version) if int(written) == 1 else None

    async def write_rate(
        self,
        key: str,
        *,
        read: RateSnapshot,
        state: _learned_rate.LearnedState,
        rewrite: bool = False,
    ) -> int | None:
        return await anyio.to_thread.run_sync(
            lambda: self.write_rate_now(key, read=read, state=state, rewrite=rewrite)
        )

    def backoff(self, attempt: int) -> float:
        """Seconds to wait after the ``attempt``-th lost compare-and-set (full jitter)."""
        return self._rng.uniform(0.0, min(BACKOFF_CAP, BACKOFF_BASE * 2.0 ** min(attempt, 30)))

    # -- transact ----------------------------------------------------------------------

    def document_key(self, key: str) -> str:
        """The Redis key of ``transact``'s document for ``key``."""
        return f"{self._prefix}state:{key}"

    def transact_now(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        """The blocking ``transact`` (runs in a worker thread from ``transact``)."""
        name = self.document_key(key)
        for attempt in range(MAX_TRANSACT_ATTEMPTS):
            try:
                raw, stamp = self._read(keys=[name], args=[self._now()])
                document, result = update(_parse_document(raw), float(stamp))
                stored = json.dumps(document, allow_nan=False)
                # Compared as stored (bytes): a document that is not UTF-8 still matches.
                written = self._compare_and_set(keys=[name], args=[raw, stored, DOCUMENT_TTL_MS])
            except self._errors as error:
                raise self._failed("update the shared state of", key, error) from error
            if int(written) == 1:
                return result
            time.sleep(self.backoff(attempt))  # another host wrote first: spread out
        raise InfrastructureError(
            f"RedisBackend {redact(self._url)}: the shared state of {key!r} changed under "
            f"every one of {MAX_TRANSACT_ATTEMPTS} attempts to update it"
        )

    async def transact(
        self,
        key: str,
        update: Callable[[dict[str, Any] | None, float], tuple[dict[str, Any], T]],
    ) -> T:
        check_text("RedisBackend.transact", "key", key)
        return await anyio.to_thread.run_sync(self.transact_now, key, update)

    def close(self) -> None:
        """Close the client's pooled connections (optional; they close at exit anyway)."""
        self._client.close()


_RESERVE_CONSTANTS = (
    DOCUMENT_TTL_MS,
    repr(MAX_BACKLOG),
    repr(1.0 - 1.0 / _learned_rate.TOLERANCE_ATTEMPTS),
)
"""The reservation script's last arguments: the TTL, the backlog bound, the decay."""

_ABSOLUTE = frozenset({"stamp", "measured_at", "window"})
"""Meter fields a learning write sets (as lower bounds, or as is) instead of adding to."""


def _text(raw: object) -> str:
    """A reply item as text (bytes that are not UTF-8 are damaged, never an error)."""
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)


_VERSION = re.compile(rf"[1-9][0-9]{{0,{MAX_VERSION_DIGITS - 1}}}")
_NUMBER = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")
"""What a stored number looks like (what ``'%.17g'`` and ``repr`` write, and what
Lua's ``tonumber`` reads too; ``float()`` alone would also take ``1_0`` or ``nan``)."""


def _version(raw: object) -> int:
    """A stored version as the scripts' ``version_of`` reads it: 0 none, -1 damaged."""
    text = _text(raw)
    if not text:
        return 0
    return int(text) if _VERSION.fullmatch(text) else -1


def _float(raw: object) -> float | None:
    text = _text(raw)
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _register_raw_userinfo(url: str) -> None:
    """Register the password of a URL whose user info holds characters that end it
    early when not percent-encoded (``redis://:p@ss#word99@host``,
    ``redis://:LongSecretPw99/x@host``): ``urlsplit`` then reads part of the password
    as the host, the port or a fragment, and redis-py quotes those parts in errors
    (a host lower-cased, so each piece is registered as written and in lower case).
    The user info is everything from ``//`` to the *last* ``@``."""
    _, separator, rest = url.partition("//")
    if not separator or "@" not in rest:
        return
    userinfo = rest.rpartition("@")[0]
    user, colon, password = userinfo.partition(":")
    secret = password if colon else user
    if secret:
        register_secret(secret)
        for piece in _pieces(secret):
            register_secret(piece)
            register_secret(piece.lower())


def _pieces(secret: str) -> list[str]:
    """The pieces of ``secret`` that a URL parser may show on their own (split at the
    characters that end a URL part)."""
    pieces: list[str] = []
    current = ""
    for char in secret:
        if char in "@#/?":
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    return [piece for piece in pieces if piece and piece != secret]


def _parse_document(raw: object) -> dict[str, Any] | None:
    """A stored document, read with the strict JSON policy every state read uses (as
    the file backend's twin does): anything it refuses (nesting 100,000 deep, NaN,
    duplicate keys, over 1 MiB, not UTF-8) counts as none."""
    data = raw if isinstance(raw, bytes) else _text(raw).encode()
    document = read_state_json(data)
    return document if isinstance(document, dict) else None
