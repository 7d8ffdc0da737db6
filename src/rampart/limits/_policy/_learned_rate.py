"""The learned rate: a token bucket whose fill rate follows the agent's signals (sans-io).

``limit(adapter, adaptive=True)`` paces requests with a bucket whose rate is not given
but learned. Everything the rate controller decides is a pure function of a
``LearnedState`` (a small JSON document) and ``now``:

* ``reserve``: schedule a request, and say under which *generation* (number of cuts
  so far) and at which rate it goes out. The bucket is kept in its *virtual
  scheduling* form (GCRA): ``due`` is when the next request may go, each reservation
  moves it on by ``1 / rate`` at the rate of the moment, and ``burst - 1`` spacings
  may be used early. Unlike a balance of tokens, this keeps the due times of queued
  requests in order when the rate changes: a request reserved after the rate rose
  never goes out before one reserved earlier at the lower rate;
* ``throttled``: a rate-limit answer to a request sent under generation ``g`` at rate
  ``r``. If no cut happened since ``g``, the rate was too high: cut it (CUBIC, see
  ``_cubic``) to ``beta * r`` and probe back up. Answers to requests sent before the
  last cut describe the old rate and change nothing but the counters; so does a lone
  refusal early in the climb back (``SETTLE``), unless the agent is refusing a good
  share of everything (``REFUSING``), when the cut starts from what it accepts;
* ``observed``: what the agent said on an answer (``_signals.RateLimitSignal``): a
  request quota that implies a rate caps the learned rate at it (and ends slow start
  there at once), its size (the most the agent accepts at once) sets the client's own
  burst when the user gave none, and a quota nearly used up (``remaining / limit``
  below 5 %) is a gentle cut before any 429 comes.

**Tolerance.** A refusal of a request sent *under* the rate the agent stated (the
learned rate keeps ``HINT_SHARE`` of it) cannot mean the rate is too high: it is jitter
(an agent without a burst refuses any two requests that arrive closer than its
spacing, and networks and event loops bunch requests) or someone else using the same
quota. Such refusals cut only when they are not rare: when, since the last cut and
over about the last ``TOLERANCE_ATTEMPTS`` reservations, at least ``TOLERANCE`` of
them were refused. Cutting by 10 % for each of a 1 % trickle (and climbing back for a
whole period) settles far below the limit; retrying the trickle costs 1 %. Without a
stated rate every refusal is a sign of the limit, as before.

Because the state is data and the transitions are pure, the backends can apply them
atomically to one shared state (a dict under a lock, a JSON file under ``flock``; in
Redis the per-request step ``book`` is one Lua script, and learning events are
versioned writes, see ``rampart.limits._redis``): every process and host that uses the
same name and backend learns *one* rate together and paces against it, instead of each
learning its own and together overshooting.

The rate the bucket uses at ``now`` is the CUBIC law's value clamped to
``[MIN_RATE, ceiling]``, where the ceiling is ``MAX_RATE``, the user's ``rate=`` (if given) and the
agent's stated rate (if it said one, less a small margin for jitter; unless it is
stated again it rises slowly after ``HINT_HOLD`` seconds, so a raised limit is found
again). Time during which the bucket
stayed full (requests came slower than the rate) does not count for growth. Every
formula is bounded for any elapsed time (campaigns run for days), and a stored state
is used only with every field in its range (``RANGES``, ``load``): shared state is
written by other processes and hosts, and a damaged one must not turn pacing off.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs

from rampart.limits._policy import _cubic
from rampart.limits._policy._cubic import CubicState

if TYPE_CHECKING:
    from rampart.limits._policy._headers import RateLimitSignal

__all__ = [
    "DEFAULT_INITIAL_RATE",
    "MAX_RATE",
    "METER_FIELDS",
    "RANGES",
    "RELATIVE",
    "DamagedState",
    "Grant",
    "LearnedState",
    "Pacing",
    "RatePolicy",
    "book",
    "burst_at",
    "join",
    "latency_reported",
    "load",
    "observed",
    "pacing",
    "rate_at",
    "reserve",
    "split",
    "throttled",
]

DEFAULT_INITIAL_RATE = 4.0
"""Requests per second a learned rate starts from (when ``rate=`` is not given)."""

MIN_RATE = 0.01
"""The learned rate never goes below one request per 100 s."""

BETA_START = 0.5
"""The cut that ends slow start: halve the rate the refused request was sent at
(slow start doubled it once per ``DOUBLING``, so half is the rate that got through a
doubling earlier), and hold there (``_cubic.plateau``) instead of climbing straight
back towards the refused rate: that rate was a doubling too high, not the edge of the
agent's limit. Climbing back within one period (CUBIC's rule after a loss while
probing) turned a quick slow start into a cascade of cuts: 7 cuts and 13 refusals at
40/s x 20 ms x burst 5 in the virtual-time grid, against 4 and 6 when holding. The
hold lasts the probing period or ``EXIT_HOLD_REQUESTS`` requests at the held rate (at
least ``PERIOD_MIN``), whichever is shorter: what it waits for is a refusal, which comes
at once, not the answers' latency (holding for 3 latencies, 15 s at 5 s, left a
burst-1 agent at 100/s x 5 s at about half its rate for that long: 1.23 times the
ideal time, 1.20 with the shorter hold, 1.26 before the hold)."""

EXIT_HOLD_REQUESTS = 10.0
"""Requests at the held rate that the hold after slow start's exit lasts (see
``BETA_START``). An agent without a burst refuses as soon as the rate passes its own,
so there the exit halves a rate that was not too high, and the rate climbs back only
after the hold: 80 requests (4 s at 20/s, ``PERIOD_REQUESTS``) left a burst-1 agent
at 20/s below 90 % of its rate for 4.1-4.8 s (the virtual-time grid, 0.01-1 s
latencies; 12 s at 5 s), a third of a 15 s run; with 10 requests it gets there in
1.8-2.5 s (6.5 s at 5 s), and every cell of the grid still meets its targets, for up
to 2 more refusals in a burst-1 cell (5, 1.3 %, at 50/s x 1 s x burst 10). An agent
with a burst refuses later, further above its rate: there the half is still above
its rate, and the refusals that follow the hold cut from what it accepts
(``REFUSING``), as they did after a longer one. A hold shorter than ``PERIOD_MIN``
gained little more and cost the short-run cell its target."""

BETA = 0.9
"""The cut while probing: the rate drops to 90 % of the rate that was refused."""

REFUSING = 0.3
"""When at least this share of recent requests was refused (and at least
``REFUSING_COUNT`` of them, over ``MEASURE_REQUESTS`` sent), the agent is saturated and
what it accepts (requests sent minus refused, smoothed) *is* its rate: a cut then
starts from that if it is lower than the rate the refused request was sent at. (A
bucket with a large burst lets a too-high rate through for a while, so the rate a
refused request was sent at can be far above the agent's.) Such a cut never goes below
``BETA_START`` of the rate the refused request was sent at: when the *client* stalls
(its event loop or HTTP pool busy for a few seconds), it sends little and then a bunch
at once, which an agent with a small burst refuses in large part, and "sent minus
refused" then measures the stall, not the agent (measured at 200/s: cut after cut down
to the 0.01/s floor, and no request left the client for good)."""

SETTLE = 0.5
"""Share of the climb back after a cut during which a *lone* refusal (under
``LONE_SHARE`` of the requests in a measuring window that holds at least
``LONE_SENT`` of them) does not cut again: the cut is still taking effect, and such a
refusal is more likely noise (two requests bunched by network or scheduling jitter)
than a sign the new rate is too high. More refusals than that early in the climb mean the last cut
was not enough (typically the agent's burst had let the rate run above its limit for
a while): they cut deeper, by ``BETA_AGAIN``."""

LONE_SHARE = 0.05
LONE_SENT = 20.0

HOLD = 0.25
"""Seconds after a cut during which a refusal does not cut again (unless the agent is
refusing a good share of everything, ``REFUSING``): the cut is still taking effect. A
bunch of requests (an event loop or a host that stalled, then sent what came due) can
empty the agent's bucket, which then refills only at the difference between its rate
and the new one, so the requests sent right after the cut are refused too. Traced on
eight hosts against a 200/s agent: a cut from 194/s, then a second one 39 and 76 ms
later, to 122/s, on refusals of requests sent after the first (TCP, likewise, cuts at
most once per round trip)."""

BETA_AGAIN = 0.7

BETA_HEADROOM = 0.9
"""The gentle cut when the agent says its quota is nearly used up."""

HEADROOM_LOW = 0.05
"""``remaining / limit`` below this is "nearly used up"."""

DOUBLING = 0.25
"""Seconds: slow start doubles the rate this often, however long answers take. What
ends slow start is a refusal, and a rate limiter refuses at once: an agent that answers
in 5 s says within milliseconds that a rate is too high, and doubling once per answer
latency spent half a minute finding 200/s (``benchmarks/sim_rate_learning.py``). What
delays the refusal is the agent's burst, which hides a rate that is too high until it
is spent, so a quicker doubling overshoots further; the exit that holds at half the
refused rate (``BETA_START``) makes that overshoot cheap. With it, 0.25 s keeps every
cell of the virtual-time grid within its targets (1 s and 5 s latencies included) and
brings a short run (200 trials at 40/s x 20 ms x burst 5) from 1.45 to 1.14 times the
ideal time; 0.2 s refused 5.2 % at 5/s x 1 s x burst 10. Doubling per requests sent
(TCP's per window of acknowledgements: every ``k / rate`` seconds) is slowest at the
low rates where a short run loses most, and did worse in the grid. An agent that
refuses only after a while overshoots more before its first refusal, which cuts from
the rate the refused request was sent at (``--refusal-latency`` in the simulation
measures what that costs)."""

PERIOD_MIN = 1.0
"""Seconds: the shortest time to climb back to the rate that was refused."""

PERIOD_LATENCIES = 3.0
"""... and at least this many feedback delays (answers must come back to be heard)."""

PERIOD_REQUESTS = 80.0
"""... and at least as long as this many requests take at that rate, so a slow agent is
probed rarely: each probe above its limit costs a refused request or two."""

PERIOD_MAX = 60.0
"""Seconds: the longest climb back."""

HINT_HOLD = 5.0
"""Seconds a rate the agent stated holds as a ceiling without being stated again ..."""

HINT_RELAX = 0.1
"""... after which it rises by this much per second (so a limit that was raised, or
an agent that stopped stating it, does not hold the rate down for good)."""

DEFAULT_LATENCY = 1.0
"""The feedback delay assumed before any attempt has been timed."""

LATENCY_WEIGHT = 0.3
"""Weight of each reported latency in the state's moving average (a participant
reports its own smoothed latency about once a second, see ``_shared_rate``)."""

MEASURE_SECONDS = 1.0
"""Shortest time constant of the send-rate and refusal-rate averages ..."""

MEASURE_REQUESTS = 10.0
"""... which average over at least this many requests at the current rate."""

REFUSING_COUNT = 3.0

HINT_SHARE = 0.97
"""The learned rate stays this far below a rate the agent stated: pacing at exactly
the agent's rate leaves no room for network jitter, and the agent answers 429 to any
two requests that arrive a little closer than its spacing."""

TOLERANCE = 0.03
"""Refusals under the agent's stated rate are tolerated (no cut) while they are under
this share of the recent reservations (see the module docstring)."""

TOLERANCE_ATTEMPTS = 100.0
"""The share is an average over about this many reservations (each one's weight decays
by ``1 / TOLERANCE_ATTEMPTS`` per later reservation), so it means the same at 5/s and
at 500/s ..."""

TOLERANCE_MIN_ATTEMPTS = 50.0
"""... and is trusted only once it holds at least this many (decayed) reservations."""

BURST_SHARE = 0.5
"""A learned client burst uses at most this share of the agent's stated capacity ..."""

BURST_SECONDS = 0.05
"""... and at most this many seconds of requests at the current rate ..."""

BURST_MAX = 16
"""... and never more than this many requests at once. The client's burst only has to
absorb its own event loop's lateness (a sleep wakes up to a millisecond or so late,
more on a loaded machine): with a burst of 1 every late wake-up is capacity lost for
good, because the next send keeps one full spacing from the late one."""

MAX_RATE = 100_000.0
"""Requests per second: the absolute ceiling of a learned rate (whatever the agent
stated, the user gave as ``rate=`` or the growth law reached) and the largest rate a
stored state may hold. No agent's rate limit is this high, so it never binds a real
one; it bounds what a damaged or hostile state can make the bucket allow."""

FUTURE_SLACK = 1.0
"""Seconds: how far after its ``stamp`` a state's law epoch or last cut may lie (every
transition sets them at or before the stamp; this absorbs rounding). A last cut in the
future would suppress cuts until then."""

MAX_LATENCY = 3600.0
"""Seconds: the longest feedback delay a state holds (longer reports count as this;
beyond ``PERIOD_MAX / PERIOD_LATENCIES`` it changes nothing anyway)."""

MAX_CAPACITY = 1e9
"""The largest bucket size a state holds (a larger stated one counts as this; the
client's burst is at most ``BURST_MAX`` anyway)."""

MAX_METER_RATE = 10 * MAX_RATE
"""The largest smoothed send or refusal rate (per second) a state holds."""

MAX_TALLY = TOLERANCE_ATTEMPTS + 1.0
"""The decayed reservation count never exceeds ``TOLERANCE_ATTEMPTS`` (a geometric sum);
one more absorbs rounding."""

MAX_COUNT = 1e15
"""The largest count a state holds (cuts, refusals): beyond it, a number was not counted."""

_FORMAT = 1


@attrs.frozen(kw_only=True)
class RatePolicy:
    """The fixed settings of one learned rate (from ``limit()``'s arguments).

    ``burst``: the client bucket's capacity (``None``: learned, see ``burst_at``);
    ``initial``: where the rate starts; ``ceiling``: the user's ``rate=`` (``None``:
    none).
    """

    burst: int | None = None
    initial: float = DEFAULT_INITIAL_RATE
    ceiling: float | None = None


@attrs.frozen(kw_only=True)
class Grant:
    """A reserved token: wait ``wait`` seconds, then send; the request goes out under
    generation ``generation`` at ``rate`` requests per second, from a client bucket of
    ``burst`` (``1``: keep one spacing from the previous send, see ``_limiter``)."""

    wait: float
    generation: int
    rate: float
    burst: int = 1


@attrs.frozen(kw_only=True)
class LearnedState:
    """The shared document: the bucket, the growth law and what was measured.

    ``due``: when the next request may go out (the bucket; ``due <= now`` means full);
    ``stamp``: the last update. Times are on the backend's clock. ``latency`` is the
    smoothed feedback delay the participants reported; ``sent`` and ``refused`` are
    exponentially smoothed rates (per second, as of ``measured_at``, over ``window``
    seconds); ``hint`` is the lowest rate the agent stated (as of ``hint_at``);
    ``capacity`` the size of the request quota it stated last (the most it accepts at
    once); ``last_cut`` when the rate was last cut. ``tally`` and ``tally_refused``
    count reservations and refusals, each decayed by ``1 / TOLERANCE_ATTEMPTS`` per
    later reservation (their ratio is the recent refusal share).
    """

    due: float
    stamp: float
    law: CubicState
    latency: float = DEFAULT_LATENCY
    sent: float = 0.0
    refused: float = 0.0
    measured_at: float = 0.0
    window: float = MEASURE_SECONDS
    hint: float | None = None
    hint_at: float = 0.0
    last_cut: float | None = None
    headroom_cuts: int = 0
    capacity: float | None = None
    tally: float = 0.0
    tally_refused: float = 0.0

    # -- wire form (JSON-ready; the file and Redis backends store it) ---------------

    def to_dict(self) -> dict[str, Any]:
        law = self.law
        return {
            "v": _FORMAT,
            "due": self.due,
            "stamp": self.stamp,
            "phase": law.phase,
            "origin": law.origin,
            "peak": law.peak,
            "epoch": law.epoch,
            "period": law.period,
            "doubling": law.doubling,
            "cuts": law.cuts,
            "latency": self.latency,
            "sent": self.sent,
            "refused": self.refused,
            "measured_at": self.measured_at,
            "window": self.window,
            "hint": self.hint,
            "hint_at": self.hint_at,
            "last_cut": self.last_cut,
            "headroom_cuts": self.headroom_cuts,
            "capacity": self.capacity,
            "tally": self.tally,
            "tally_refused": self.tally_refused,
        }

    @classmethod
    def from_dict(cls, data: object) -> LearnedState | None:
        """The state in ``data``, or ``None`` if it is not a state this version wrote or
        a field is out of its range (``load`` says which)."""
        try:
            return load(data)
        except DamagedState:
            return None

    # -- derived values ------------------------------------------------------------

    @property
    def generation(self) -> int:
        return self.law.cuts

    def smoothed(self, now: float) -> tuple[float, float]:
        """``(sent, refused)`` per second as of ``now``."""
        decay = math.exp(-max(0.0, now - self.measured_at) / self.window)
        return self.sent * decay, self.refused * decay

    @property
    def refused_share(self) -> float | None:
        """The share of recent reservations that were refused (``None``: too few yet)."""
        if self.tally < TOLERANCE_MIN_ATTEMPTS:
            return None
        return min(1.0, self.tally_refused / self.tally)


class DamagedState(ValueError):
    """A stored learned state this version cannot use: written by another version,
    damaged, or with a field out of its range (the message names it)."""


RANGES: dict[str, tuple[float, float]] = {
    "due": (-math.inf, math.inf),
    "stamp": (-math.inf, math.inf),
    "origin": (MIN_RATE * BETA_START, MAX_RATE),
    "peak": (MIN_RATE, MAX_RATE),
    "period": (PERIOD_MIN, PERIOD_MAX),
    "doubling": (DOUBLING, PERIOD_MAX),
    "latency": (math.ulp(0.0), MAX_LATENCY),
    "sent": (0.0, MAX_METER_RATE),
    "refused": (0.0, MAX_METER_RATE),
    "window": (MEASURE_SECONDS, PERIOD_MAX),
    "hint": (MIN_RATE, MAX_RATE),
    "capacity": (0.0, MAX_CAPACITY),
    "tally": (0.0, MAX_TALLY),
    "tally_refused": (0.0, MAX_COUNT),
    "cuts": (0.0, MAX_COUNT),
    "headroom_cuts": (0.0, MAX_COUNT),
}
"""Each number's range (inclusive; every number must be finite). Redis's reservation
script checks the meter's fields against the same table (``_redis``)."""

RELATIVE: dict[str, tuple[float, float]] = {
    "epoch": (-math.inf, FUTURE_SLACK),
    "last_cut": (-math.inf, FUTURE_SLACK),
}
"""Times that must lie within these offsets (seconds) of the state's ``stamp``. Any
other time may lie anywhere (finite): one long past only means something decayed or
relaxed, and the law's value at the stamp is checked on its own."""

_TIMES = ("epoch", "measured_at", "hint_at", "last_cut")
"""Times on the backend's clock (any finite number; see ``RELATIVE``)."""

_OPTIONAL = frozenset({"hint", "last_cut", "capacity"})
"""Fields that may be ``null``."""

_LATER = {"capacity": None, "tally": 0.0, "tally_refused": 0.0}
"""Fields added after the format's first release: a document without them is still ours."""

_INTEGERS = frozenset({"cuts", "headroom_cuts"})


def _field(data: dict[str, Any], name: str) -> float | None:
    if name in _LATER and name not in data:
        return _LATER[name]
    if name not in data:
        raise DamagedState(f"the field {name!r} is missing")
    raw = data[name]
    if raw is None and name in _OPTIONAL:
        return None
    integer = isinstance(raw, int) and not isinstance(raw, bool)
    if not (integer or (isinstance(raw, float) and name not in _INTEGERS)):
        expected = "an integer" if name in _INTEGERS else "a number"
        raise DamagedState(f"{name} is {raw!r:.40}, not {expected}")
    try:
        value = float(raw)
    except OverflowError:
        value = math.inf
    low, high = RANGES.get(name, (-math.inf, math.inf))
    if not (math.isfinite(value) and low <= value <= high):
        raise DamagedState(f"{name} = {raw!r:.40} is outside [{low:g}, {high:g}]")
    return value


def load(
    data: object, *, shift: float = 0.0, now: float | None = None, clock_skew: float = 0.0
) -> LearnedState:
    """The state in ``data`` (``to_dict``'s form), with ``shift`` idle seconds moved into
    the law's epoch (see ``join``); raises ``DamagedState`` naming the first field that
    is not what this version writes: the format version, a type, a number outside
    ``RANGES``, a time too far from the stamp (``RELATIVE``), or a law whose value at
    the stamp is above twice ``MAX_RATE`` (no transition leaves it above the ceiling,
    a Redis booking on a stale view at most a step). With ``now`` (a clock every
    writer shares), the stamp and ``measured_at`` may lie at most ``clock_skew``
    seconds after it: a stamp ahead of the clock would stop idle time from being seen
    (the law would grow unused), a ``measured_at`` the measured rates from decaying."""
    if not isinstance(data, dict):
        raise DamagedState(f"the state is a {type(data).__name__}, not an object")
    if data.get("v") != _FORMAT:
        raise DamagedState(f"format version {data.get('v')!r:.40}, not {_FORMAT}")
    phase = data.get("phase")
    if phase not in ("start", "probe"):
        raise DamagedState(f"phase is {phase!r:.40}, not 'start' or 'probe'")
    if not (math.isfinite(shift) and shift >= 0.0):
        raise DamagedState(f"the idle shift {shift!r} is not a finite number >= 0")
    values = {name: _field(data, name) for name in (*RANGES, *_TIMES)}
    stamp = values["stamp"]
    assert stamp is not None
    values["epoch"] = values["epoch"] + shift  # type: ignore[operator]
    for name, (low, high) in RELATIVE.items():
        value = values[name]
        if value is not None and not stamp + low <= value <= stamp + high:
            raise DamagedState(f"{name} lies {value - stamp:g} s from the stamp")
    for name in ("stamp", "measured_at"):
        value = values[name]
        if now is not None and value is not None and value > now + clock_skew:
            raise DamagedState(f"{name} lies {value - now:g} s ahead of the clock")
    number = {name: value for name, value in values.items() if value is not None}
    if number["origin"] > number["peak"]:
        raise DamagedState("origin is above peak")
    law = CubicState(
        phase="start" if phase == "start" else "probe",
        origin=number["origin"],
        peak=number["peak"],
        epoch=number["epoch"],
        period=number["period"],
        doubling=number["doubling"],
        cuts=int(number["cuts"]),
    )
    if _cubic.value(law, stamp) > 2.0 * MAX_RATE:
        raise DamagedState(f"the growth law is at {_cubic.value(law, stamp):g}/s at the stamp")
    return LearnedState(
        due=number["due"],
        stamp=stamp,
        law=law,
        latency=number["latency"],
        sent=number["sent"],
        refused=number["refused"],
        measured_at=number["measured_at"],
        window=number["window"],
        hint=values["hint"],
        hint_at=number["hint_at"],
        last_cut=values["last_cut"],
        headroom_cuts=int(number["headroom_cuts"]),
        capacity=values["capacity"],
        tally=number["tally"],
        tally_refused=number["tally_refused"],
    )


def _window(rate: float) -> float:
    """Seconds the measured rates average over (longer at low rates)."""
    return min(PERIOD_MAX, max(MEASURE_SECONDS, MEASURE_REQUESTS / max(rate, MIN_RATE)))


def _period(latency: float, rate: float) -> float:
    period = max(PERIOD_MIN, PERIOD_LATENCIES * latency, PERIOD_REQUESTS / max(rate, MIN_RATE))
    return min(PERIOD_MAX, period)


def fresh(now: float, policy: RatePolicy) -> LearnedState:
    """A new controller: slow start from ``policy.initial``, or (with a ceiling, which
    the user gave as ``rate=``) probing from the ceiling itself."""
    initial = policy.initial if policy.ceiling is None else policy.ceiling
    initial = min(MAX_RATE, max(MIN_RATE, initial))
    law = _cubic.restart(
        value=initial,
        now=now,
        period=_period(DEFAULT_LATENCY, initial),
        doubling=DOUBLING,
    )
    if policy.ceiling is not None:
        law = _cubic.plateau(law, now=now, peak=initial, period=law.period)
    return LearnedState(due=now, stamp=now, law=law, measured_at=now)


def _hint_at(state: LearnedState, now: float) -> float | None:
    """The stated rate as a ceiling at ``now``: held for ``HINT_HOLD`` seconds, then
    rising by ``HINT_RELAX`` per second up to ``MAX_RATE`` (where it stays: a bound on
    the exponent, since ``exp`` overflows after about two hours of relaxing)."""
    if state.hint is None:
        return None
    relax = HINT_RELAX * max(0.0, now - state.hint_at - HINT_HOLD)
    if relax >= math.log(MAX_RATE / state.hint):
        return MAX_RATE
    return state.hint * math.exp(relax)


def _ceiling(state: LearnedState, now: float, policy: RatePolicy) -> float:
    ceiling = MAX_RATE if policy.ceiling is None else min(MAX_RATE, policy.ceiling)
    hint = _hint_at(state, now)
    if hint is not None:
        ceiling = min(ceiling, hint * HINT_SHARE)
    return max(MIN_RATE, ceiling)


def rate_at(state: LearnedState, now: float, policy: RatePolicy) -> float:
    """The bucket's fill rate at ``now``."""
    value = _cubic.value(state.law, now)
    return min(_ceiling(state, now, policy), max(MIN_RATE, value))


def burst_at(state: LearnedState, rate: float, policy: RatePolicy) -> int:
    """The client bucket's capacity at ``rate``: the user's ``burst=``, else learned.

    An agent that never stated its capacity may have none (a burst of 1), so the client
    keeps one spacing between sends. Once it stated a capacity ``C`` (the size of its
    request quota), the client may use ``BURST_SHARE * C`` of it, at most
    ``BURST_SECONDS`` of requests at ``rate`` and ``BURST_MAX``: enough to absorb its
    own event loop's lateness, never enough to outrun the agent's bucket.
    """
    if policy.burst is not None:
        return policy.burst
    if state.capacity is None:
        return 1
    share = math.floor(state.capacity * BURST_SHARE)
    span = math.ceil(rate * BURST_SECONDS)
    return max(1, min(share, span, BURST_MAX))


def _rebase(state: LearnedState, now: float) -> LearnedState:
    """A clock that stepped back (state written under another clock): shift every
    stored time by the step, so ages, the growth law and the bucket are kept."""
    if now >= state.stamp:
        return state
    shift = now - state.stamp
    law = attrs.evolve(state.law, epoch=state.law.epoch + shift)
    return attrs.evolve(
        state,
        due=state.due + shift,
        stamp=now,
        law=law,
        measured_at=state.measured_at + shift,
        hint_at=state.hint_at + shift,
        last_cut=None if state.last_cut is None else state.last_cut + shift,
    )


def _measure(
    state: LearnedState, now: float, policy: RatePolicy, *, sent: int = 0, refused: int = 0
) -> LearnedState:
    current_sent, current_refused = state.smoothed(now)
    window = _window(rate_at(state, now, policy))
    return attrs.evolve(
        state,
        sent=min(MAX_METER_RATE, max(0.0, current_sent + sent / window)),
        refused=min(MAX_METER_RATE, current_refused + refused / window),
        measured_at=max(now, state.measured_at),
        window=window,
    )


def _advance(state: LearnedState, now: float, policy: RatePolicy) -> LearnedState:
    """Move the state to ``now``: time during which the rate held nobody back (the
    caller arrives after the last request's spacing ran out: requests come slower
    than the rate) or the law sat above its ceiling does not count for growth."""
    elapsed = now - state.stamp
    if elapsed <= 0.0:
        return state
    law = state.law
    if now >= state.due:
        # Nothing was queued and the spacing had run out: the rate held nobody back
        # since the last reservation.
        law = _cubic.idle(law, elapsed)
    elif _cubic.value(law, now) > _ceiling(state, now, policy):
        # Capped: the agent's (or the user's) ceiling binds, not the law; hold the law
        # where it is instead of letting it run off above the cap.
        law = _cubic.idle(law, elapsed)
    return attrs.evolve(state, stamp=now, law=law)


MAX_BACKLOG = 3600.0
"""Seconds: shared state whose next send (``due``) lies further ahead than this is
damaged (another process wrote nonsense, or a hostile one did), not a real queue:
the bucket restarts at ``now`` instead of making every request wait for it."""


@attrs.frozen(kw_only=True)
class Pacing:
    """What a reservation needs from the learned part of the state at ``now``: the
    bucket's ``rate`` and ``burst``, whether the law sat above its ``capped`` ceiling
    (that time does not count for growth), and the measuring ``window``. A backend
    that reserves in one atomic step (Redis's script) takes these from the caller, who
    computes them from its last view of the state (see ``book``)."""

    rate: float
    burst: int
    capped: bool
    window: float


def pacing(state: LearnedState, now: float, policy: RatePolicy, *, held: bool = False) -> Pacing:
    """The ``Pacing`` of ``state`` at ``now``, for a reservation that ``book`` makes
    (``held``: see ``book``)."""
    capped = _cubic.value(state.law, now) > _ceiling(state, now, policy)
    law = state.law
    if _idles(state, now, capped=capped, held=held):
        law = _cubic.idle(law, now - state.stamp)
    moved = attrs.evolve(state, law=law)
    rate = rate_at(moved, now, policy)
    return Pacing(
        rate=rate, burst=burst_at(moved, rate, policy), capped=capped, window=_window(rate)
    )


def _idles(state: LearnedState, now: float, *, capped: bool, held: bool = False) -> bool:
    """Time since the last reservation held nobody back (the bucket had room: requests
    came slower than the rate, and none was queued behind it: ``held``), or the law
    sat above its ceiling: it does not count."""
    return now > state.stamp and ((now >= state.due and not held) or capped)


def book(
    state: LearnedState, *, now: float, pacing: Pacing, forfeited: int = 0, held: bool = False
) -> tuple[LearnedState, float]:
    """Reserve one token at ``pacing``'s rate: the new state and the wait (seconds).

    This is the whole per-request step, and nothing in it decides anything about the
    rate: Redis runs the same arithmetic as one Lua script (``_redis``), so every host's
    reservation is one atomic round trip. ``forfeited``: earlier reservations of this
    caller that were never used, taken back out of the measured send rate. ``held``:
    the caller has requests queued behind the rate (waiting to book), so the time
    since the last reservation counts for growth even if the bucket emptied: the
    caller's sends fell behind their tokens (an event loop that wakes the spacing
    turnstile late), not its requests. Without it, a client whose sends keep one
    spacing from each late send never keeps up with its own tokens, every booking
    finds the bucket empty, and after a cut the rate never climbs back (measured at
    100/s x 5 s x burst 1: 12 cuts, 39 refusals, and the rate left at 49/s).
    """
    due = state.due
    if due > now + MAX_BACKLOG:
        due = now  # damaged shared state (see MAX_BACKLOG)
    law = state.law
    if _idles(attrs.evolve(state, due=due), now, capped=pacing.capped, held=held):
        law = _cubic.idle(law, now - state.stamp)
    spacing = 1.0 / pacing.rate
    # ``burst - 1`` spacings may be used ahead of the schedule (at most ``burst`` at once).
    start = max(now, due - (pacing.burst - 1) * spacing)
    keep = 1.0 - 1.0 / TOLERANCE_ATTEMPTS
    decay = math.exp(-max(0.0, now - state.measured_at) / state.window)
    booked = attrs.evolve(
        state,
        law=law,
        stamp=max(now, state.stamp),
        due=max(due, start) + spacing,
        tally=max(0.0, state.tally * keep + 1 - forfeited),
        tally_refused=state.tally_refused * keep,
        sent=min(MAX_METER_RATE, max(0.0, state.sent * decay + (1 - forfeited) / pacing.window)),
        refused=state.refused * decay,
        measured_at=max(now, state.measured_at),
        window=pacing.window,
    )
    return booked, start - now


def reserve(
    state: LearnedState | None,
    *,
    now: float,
    policy: RatePolicy,
    forfeited: int = 0,
    held: bool = False,
) -> tuple[LearnedState, Grant]:
    """Take one token at ``now`` (``pacing`` then ``book`` on a state of one's own);
    ``forfeited`` and ``held``: see ``book``."""
    current = fresh(now, policy) if state is None else _rebase(state, now)
    paced = pacing(current, now, policy, held=held)
    current, wait = book(current, now=now, pacing=paced, forfeited=forfeited, held=held)
    grant = Grant(wait=wait, generation=current.generation, rate=paced.rate, burst=paced.burst)
    return current, grant


def latency_reported(
    state: LearnedState | None, *, now: float, policy: RatePolicy, latency: float
) -> LearnedState:
    """A participant's feedback delay (its attempts' smoothed duration): a learning
    event, reported now and then (``_shared_rate``), never once per request. It sets
    how long the climb back after a cut takes (``_period``: answers must come back to
    be heard); slow start does not wait for it (``DOUBLING``)."""
    current = fresh(now, policy) if state is None else _rebase(state, now)
    if not (latency > 0.0 and math.isfinite(latency)):
        return current
    latency = min(latency, MAX_LATENCY)
    return attrs.evolve(
        current, latency=current.latency + LATENCY_WEIGHT * (latency - current.latency)
    )


METER_FIELDS = (
    "due",
    "stamp",
    "sent",
    "refused",
    "measured_at",
    "window",
    "tally",
    "tally_refused",
)
"""The fields ``book`` changes on every reservation (Redis keeps them as hash fields
beside the JSON document that holds the rest, which changes only on learning events)."""


def split(state: LearnedState) -> tuple[dict[str, Any], dict[str, float]]:
    """``state`` as its learned part (a JSON document) and its meter (numbers)."""
    document = state.to_dict()
    meter = {name: float(document.pop(name)) for name in METER_FIELDS}
    return document, meter


def join(
    document: object, meter: dict[str, float], *, shift: float = 0.0, now: float | None = None
) -> LearnedState:
    """The state stored as ``split``'s two parts, with ``shift`` seconds of idle time
    (counted by the atomic reservation since the document was written) moved into the
    growth law's epoch. With ``now`` (the shared clock's reading), the stamp and
    ``measured_at`` may lie at most ``MAX_BACKLOG`` after it. Raises ``DamagedState``
    when the parts are not a state this version wrote (see ``load``)."""
    if not isinstance(document, dict):
        raise DamagedState(f"the document is a {type(document).__name__}, not an object")
    return load({**document, **meter}, shift=shift, now=now, clock_skew=MAX_BACKLOG)


def _cut(
    state: LearnedState, *, now: float, peak: float, beta: float, policy: RatePolicy
) -> LearnedState:
    state = _advance(state, now, policy)
    peak = min(peak, MAX_RATE)
    law = _cubic.congested(
        state.law,
        now=now,
        peak=peak,
        beta=beta,
        period=_period(state.latency, peak),
        floor=MIN_RATE,
    )
    # Reservations already queued were made at the old rate: forgive them (the limiter
    # re-reserves any whose generation is stale when it wakes), so the new rate
    # applies at once instead of after the queue drains; the next request goes one
    # spacing at the new rate from now, not in a burst.
    due = min(state.due, now + 1.0 / max(MIN_RATE, law.origin))
    # The refusals counted so far were answers at the old rate: the share restarts.
    return attrs.evolve(state, law=law, due=due, last_cut=now, tally_refused=0.0)


def throttled(
    state: LearnedState | None,
    *,
    now: float,
    policy: RatePolicy,
    generation: int,
    rate: float,
) -> tuple[LearnedState, bool]:
    """A rate-limit answer to a request sent under ``generation`` at ``rate``.

    Returns the new state and whether it cut the rate.
    """
    current = fresh(now, policy) if state is None else _rebase(state, now)
    current = _measure(current, now, policy, refused=1)
    current = attrs.evolve(current, tally_refused=min(MAX_COUNT, current.tally_refused + 1.0))
    if generation != current.generation:
        return current, False
    if current.law.phase == "start":
        # Slow start's last doubling overshot: hold at the half (see ``BETA_START``).
        cut = _cut(current, now=now, peak=rate, beta=BETA_START, policy=policy)
        held = max(PERIOD_MIN, EXIT_HOLD_REQUESTS / max(cut.law.origin, MIN_RATE))
        period = min(cut.law.period, held)
        law = _cubic.plateau(cut.law, now=now, peak=cut.law.origin, period=period)
        return attrs.evolve(cut, law=law), True
    sent, refused = current.smoothed(now)
    window = current.window
    saturated = (
        refused * window >= REFUSING_COUNT
        and sent * window >= MEASURE_REQUESTS
        and refused >= REFUSING * sent
    )
    if saturated:
        peak = min(rate, max(MIN_RATE, sent - refused, BETA_START * rate))
        return _cut(current, now=now, peak=peak, beta=BETA, policy=policy), True
    since = math.inf if current.last_cut is None else now - current.last_cut
    if since < HOLD:
        return current, False
    share = current.refused_share
    hint = _hint_at(current, now)
    # Under the stated rate itself, not the HINT_SHARE the learned rate keeps: a capped
    # rate follows a statement that moves by hundredths between answers, and a request
    # sent at 97 % of the last one is a hair over 97 % of the next.
    under = hint is not None and rate <= hint * (1.0 + 1e-9)
    if under and share is not None and share < TOLERANCE:
        # A trickle of refusals under the stated rate: jitter, not a rate too high.
        return current, False
    if since >= SETTLE * current.law.period:
        return _cut(current, now=now, peak=rate, beta=BETA, policy=policy), True
    if sent * window >= LONE_SENT and refused < LONE_SHARE * sent:
        return current, False
    return _cut(current, now=now, peak=rate, beta=BETA_AGAIN, policy=policy), True


def observed(
    state: LearnedState | None,
    *,
    now: float,
    policy: RatePolicy,
    signal: RateLimitSignal,
    generation: int,
) -> tuple[LearnedState, bool]:
    """What an answer (to a request sent under ``generation``) said about the limit.

    Returns the new state and whether it cut the rate (a quota nearly used up).
    """
    current = fresh(now, policy) if state is None else _rebase(state, now)
    capacity = signal.request_capacity
    if capacity is not None and capacity >= 0.0:
        current = attrs.evolve(current, capacity=min(capacity, MAX_CAPACITY))
    stated = signal.request_rate
    if stated is not None and stated > 0.0 and math.isfinite(stated):
        previous = _hint_at(current, now)
        hint = min(MAX_RATE, max(MIN_RATE, stated if previous is None else min(previous, stated)))
        current = _advance(current, now, policy)
        current = attrs.evolve(current, hint=hint, hint_at=now)
        if current.law.phase == "start":
            # The agent told us its rate: no need to find it by doubling into 429s.
            peak = max(MIN_RATE, hint * HINT_SHARE)
            law = _cubic.plateau(
                current.law, now=now, peak=peak, period=_period(current.latency, peak)
            )
            current = attrs.evolve(current, law=law)
    headroom = signal.headroom
    if headroom is not None and headroom < HEADROOM_LOW and generation == current.generation:
        peak = rate_at(current, now, policy)
        cut = _cut(current, now=now, peak=peak, beta=BETA_HEADROOM, policy=policy)
        return attrs.evolve(cut, headroom_cuts=current.headroom_cuts + 1), True
    return current, False
