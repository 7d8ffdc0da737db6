"""The ``harm`` and ``trial`` markers: their options, reading and validating them.

A ``harm`` marker may carry several tags (``harm("owasp-llm01",
HarmCategory.PROMPT_INJECTION)``): the **primary** one, which results get as their
``harm_category``, is the first built-in ``HarmCategory`` given, else the first tag;
``HarmTags.tags`` keeps them all (``harm_of``). A ``trial`` marker's ``ids=`` names
each clone's case (``CloneCase``: a string, or a ``Payload`` whose id names the case
and whose own ``harm_category`` is the fallback of a test without a ``harm`` marker).

Bad marker arguments are usage errors, reported before anything runs, and name the
marker, the argument and what was expected. The run-wide defaults of trial groups
(``--rampart-trials``, ``--rampart-concurrency``, ``--rampart-confidence``,
``--rampart-inconclusive``, ini ``rampart_max_trials``) and what a ``harm``-marked test
that records nothing does (ini ``rampart_harm_without_result``, ``NoResultWarning``)
are declared here and read once per run (``MarkerOptions``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

import attrs
import pytest

from rampart._checks import check_bool, check_int, invalid
from rampart._pacing import DEFAULT_CONCURRENCY, Setting, check_concurrency
from rampart._text import one_line
from rampart.pytest_plugin._options import add_option, choice, option_int, option_or_ini

__all__ = [
    "INCONCLUSIVE_OUTCOMES",
    "TRIAL_CONFIG_KEY",
    "CloneCase",
    "HarmTags",
    "MarkerOptions",
    "NoResultWarning",
    "TrialSpec",
    "add_options",
    "harm_of",
    "payload_case",
    "trial_spec_of",
]

#: What an INCONCLUSIVE group does to its test (ini ``rampart_inconclusive``).
INCONCLUSIVE_OUTCOMES = ("fail", "xfail", "skip", "pass")
#: Default of ini ``rampart_max_trials``, the largest ``n`` a trial group may have.
DEFAULT_MAX_TRIALS = 10_000

T = TypeVar("T")

if TYPE_CHECKING:
    from collections.abc import Callable

    from rampart.core._internal import TrialRule
    from rampart.core.result import HarmCategory  # noqa: TC004 (an attrs annotation only)
    from rampart.engine._internal import TrialConfig

#: A test that requests ``trial_config``: what its marker declared (the fixture's value).
TRIAL_CONFIG_KEY = pytest.StashKey["TrialConfig"]()
#: The fixture that chooses RAMPART's declaration form of the trial marker.
TRIAL_CONFIG_FIXTURE = "trial_config"


class NoResultWarning(UserWarning):
    """A ``harm``-marked test recorded no rampart result.

    Issued instead of failing the test when ini ``rampart_harm_without_result = warn``.
    """


_CONCURRENCY_HELP = (
    "Default bound on concurrently running trial clones per test: an integer >= 1 "
    f"(default {DEFAULT_CONCURRENCY}) or 'auto' (adaptive: grows while turn latency stays "
    "flat and no rate-limit signal arrives, backs off when either changes)."
)
_CONFIDENCE_HELP = (
    "Default confidence= of trial groups with a threshold in (0, 1): their verdict becomes "
    "PASS / FAIL / INCONCLUSIVE from the exact interval (default: off, the count rule)."
)
_INCONCLUSIVE_HELP = (
    "The test outcome of an INCONCLUSIVE trial group: fail (default), xfail, skip or pass."
)


def add_options(parser: pytest.Parser) -> None:
    """The trial defaults and the harm marker's ini option."""
    add_option(
        parser, "rampart_trials", metavar="N", help="Override n of every @pytest.mark.trial test."
    )
    add_option(
        parser, "rampart_concurrency", metavar="N", help=_CONCURRENCY_HELP, ini=_CONCURRENCY_HELP
    )
    add_option(
        parser, "rampart_confidence", metavar="C", help=_CONFIDENCE_HELP, ini=_CONFIDENCE_HELP
    )
    add_option(
        parser,
        "rampart_inconclusive",
        metavar="OUTCOME",
        help=_INCONCLUSIVE_HELP,
        ini=_INCONCLUSIVE_HELP,
    )
    parser.addini(
        "rampart_max_trials",
        f"Largest n a trial group may have (default {DEFAULT_MAX_TRIALS}).",
        default="",
    )
    parser.addini(
        "rampart_harm_without_result",
        "What a harm-marked test that records no rampart result does: fail (default) or warn.",
        default="",
    )


@attrs.frozen(kw_only=True)
class MarkerOptions:
    """The run's trial defaults and harm policy, read once (``from_config``)."""

    trials_override: int | None = None
    default_concurrency: Setting = DEFAULT_CONCURRENCY
    max_trials: int = DEFAULT_MAX_TRIALS
    harm_without_result: str = "fail"
    default_confidence: float | None = None
    inconclusive: str = "fail"

    @classmethod
    def from_config(cls, config: pytest.Config) -> MarkerOptions:
        max_trials = option_int(config, "rampart_max_trials", minimum=1)
        max_trials = DEFAULT_MAX_TRIALS if max_trials is None else max_trials
        trials = option_int(config, "rampart_trials", minimum=1, maximum=max_trials, ini=False)
        concurrency = _option_concurrency(config)
        harm = str(config.getini("rampart_harm_without_result") or "fail").strip()
        if harm not in ("fail", "warn"):
            raise invalid(
                "rampart",
                "ini option rampart_harm_without_result",
                "'fail' or 'warn'",
                harm,
                error=pytest.UsageError,
            )
        return cls(
            trials_override=trials,
            default_concurrency=DEFAULT_CONCURRENCY if concurrency is None else concurrency,
            max_trials=max_trials,
            harm_without_result=harm,
            default_confidence=_option_confidence(config),
            inconclusive=choice(config, "rampart_inconclusive", INCONCLUSIVE_OUTCOMES),
        )


def _option_concurrency(config: pytest.Config) -> Setting | None:
    """``--rampart-concurrency``, else the ini option: an integer >= 1 or ``auto``."""
    found = option_or_ini(config, "rampart_concurrency")
    if found is None:
        return None
    value, source = found
    return check_concurrency("rampart", source, value, error=pytest.UsageError)


def _option_confidence(config: pytest.Config) -> float | None:
    """``--rampart-confidence``, else the ini option; None when neither is set."""
    found = option_or_ini(config, "rampart_confidence")
    if found is None:
        return None
    value, source = found
    expected = "a number in (0, 1), e.g. 0.95"
    try:
        number = float(str(value))
    except ValueError:
        raise invalid("rampart", source, expected, value, error=pytest.UsageError) from None
    if not 0.0 < number < 1.0:  # also rejects nan
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return number


@attrs.frozen(kw_only=True)
class CloneCase:
    """What one trial clone tests, from the ``trial`` marker's ``ids=``.

    ``id`` names it (``test_xpia[trial-3:<id>]``); a ``Payload`` given as the id adds
    its ``payload_id`` and its own ``harm_category`` (``payload.metadata``), the
    fallback for a test with no ``harm`` marker.
    """

    id: str
    payload_id: str | None = None
    harm_category: HarmCategory | str | None = None


@attrs.frozen(kw_only=True)
class TrialSpec:
    """The effective trial settings of one test item.

    ``threshold``, ``confidence``, ``sequential`` and ``max_unsafe`` are the verdict
    rule (``rule``); ``inconclusive`` is what an INCONCLUSIVE verdict does to the test
    (one of ``INCONCLUSIVE_OUTCOMES``).
    """

    n: int = 1
    threshold: float = 1.0
    concurrency: Setting = DEFAULT_CONCURRENCY
    early_stop: bool = False
    confidence: float | None = None
    sequential: bool = False
    max_unsafe: int = 0
    inconclusive: str = "fail"
    # Function-scoped fixtures the clones share instead of each setting up its own.
    shared_fixtures: tuple[str, ...] = ()
    # What each clone tests (``ids=``); clone ``i`` has ``cases[i]`` when there is one.
    cases: tuple[CloneCase, ...] = ()

    def case(self, index: int) -> CloneCase | None:
        """Clone ``index``'s case, if ``ids=`` gave it one."""
        return self.cases[index] if 0 <= index < len(self.cases) else None

    @property
    def rule(self) -> TrialRule:
        from rampart.core._internal import TrialRule  # the model: loaded by a trial test

        return TrialRule(
            threshold=self.threshold,
            confidence=self.confidence,
            sequential=self.sequential,
            max_unsafe=self.max_unsafe,
        )

    @property
    def stops_early(self) -> bool:
        """Clones stop once the verdict is settled (``early_stop``, or ``sequential``)."""
        return self.early_stop or self.sequential

    def config(self) -> TrialConfig:
        """The settings as a test that requests ``trial_config`` receives them."""
        from rampart.engine._internal import TrialConfig

        return TrialConfig(
            n=self.n,
            threshold=self.threshold,
            concurrency=self.concurrency,
            early_stop=self.early_stop,
            confidence=self.confidence,
            sequential=self.sequential,
            max_unsafe=self.max_unsafe,
        )


def _usage(check: Callable[[], T]) -> T:
    """Run an argument check; its ``TypeError`` / ``ValueError`` becomes a usage error."""
    try:
        return check()
    except (TypeError, ValueError) as error:
        raise pytest.UsageError(str(error)) from None


_TRIAL_KWARGS = frozenset(
    {
        "n",
        "threshold",
        "concurrency",
        "early_stop",
        "confidence",
        "sequential",
        "max_unsafe",
        "shared_fixtures",
        "ids",
    }
)


def _marker_name(argument: str) -> str:
    return f"@pytest.mark.trial({argument}=)"


def trial_spec_of(
    item: pytest.Item,
    *,
    trials_override: int | None,
    default_concurrency: Setting,
    default_confidence: float | None = None,
    inconclusive: str = "fail",
    max_trials: int = DEFAULT_MAX_TRIALS,
) -> TrialSpec | None:
    """The item's trial settings, or None when it carries no ``trial`` marker.

    ``n`` above ``max_trials`` (ini ``rampart_max_trials``) is a usage error: a trial
    group is bounded by design. ``trials_override`` was checked against it already.
    ``default_confidence`` (``--rampart-confidence`` / ini ``rampart_confidence``)
    applies to groups whose marker does not set ``confidence=`` (``confidence=None``
    opts out) and whose threshold is strictly between 0 and 1: a threshold of 1.0
    asks that no clone fail, which no sample can show with confidence, so such a
    group keeps the count rule.
    """
    marker = item.get_closest_marker("trial")
    if marker is None:
        return None
    from rampart.core._internal import check_rule  # the model: loaded by a trial test

    arguments = _trial_arguments(item.nodeid, marker)
    owner = item.nodeid
    cases = _clone_cases(owner, arguments["ids"]) if "ids" in arguments else ()
    # RAMPART's default is one trial; with ids= there is one clone per id.
    raw_n = arguments.get("n", len(cases) or 1)
    n = _usage(lambda: check_int(owner, _marker_name("n"), raw_n, minimum=1))
    if cases and len(cases) != n:
        raise invalid(
            owner,
            _marker_name("ids"),
            f"one id per clone ({n}, as n= says)",
            f"{len(cases)} ids",
            shown=f"{len(cases)} ids",
            error=pytest.UsageError,
        )
    if trials_override is not None:
        n = trials_override
    elif n > max_trials:
        raise invalid(
            owner,
            _marker_name("n"),
            f"<= {max_trials} (ini rampart_max_trials; raise it to run more clones)",
            raw_n,
            error=pytest.UsageError,
        )
    raw_threshold = arguments.get("threshold", 1.0)
    if "confidence" in arguments:
        raw_confidence = arguments["confidence"]
    elif default_confidence is not None and _strictly_between(raw_threshold):
        raw_confidence = default_confidence
    else:
        raw_confidence = None
    rule = _usage(
        lambda: check_rule(
            owner,
            threshold=raw_threshold,
            confidence=raw_confidence,
            sequential=arguments.get("sequential", False),
            max_unsafe=arguments.get("max_unsafe", 0),
            name=_marker_name,
        )
    )
    raw_concurrency = arguments.get("concurrency")
    concurrency = default_concurrency
    if raw_concurrency is not None:
        concurrency = check_concurrency(
            owner, _marker_name("concurrency"), raw_concurrency, error=pytest.UsageError
        )
    early_stop = _usage(
        lambda: check_bool(owner, _marker_name("early_stop"), arguments.get("early_stop", False))
    )
    return TrialSpec(
        n=n,
        threshold=rule.threshold,
        concurrency=concurrency,
        early_stop=early_stop,
        confidence=rule.confidence,
        sequential=rule.sequential,
        max_unsafe=rule.max_unsafe,
        inconclusive=inconclusive,
        shared_fixtures=_shared_fixtures(item, arguments.get("shared_fixtures", ())),
        cases=cases,
    )


#: The marker's positional arguments, in order (RAMPART's ``trial(4, 0.75)``).
_POSITIONAL = ("n", "threshold")


def _trial_arguments(nodeid: str, marker: pytest.Mark) -> dict[str, object]:
    """The marker's arguments by name: its keywords, and up to two positionals (``n``,
    ``threshold``); an unsupported name, a third positional or a value given both ways
    is a usage error naming the test."""
    unknown = set(marker.kwargs) - _TRIAL_KWARGS
    if unknown:
        raise pytest.UsageError(
            f"@pytest.mark.trial has unsupported argument(s) {sorted(unknown)} on {nodeid}"
            f"{_suggestion(sorted(unknown))}; expected n, threshold, concurrency=, "
            "early_stop=, confidence=, sequential=, max_unsafe=, shared_fixtures=, ids="
        )
    if len(marker.args) > len(_POSITIONAL):
        raise pytest.UsageError(
            f"@pytest.mark.trial accepts at most two positional arguments (n, threshold) on "
            f"{nodeid}, got {len(marker.args)}"
        )
    arguments = dict(marker.kwargs)
    for name, value in zip(_POSITIONAL, marker.args, strict=False):
        if name in arguments:
            raise pytest.UsageError(
                f"@pytest.mark.trial {name} was provided both positionally and by keyword "
                f"on {nodeid}"
            )
        arguments[name] = value
    return arguments


#: Names people give the clone count (``trial(m=3)``, ``trial(count=3)``).
_COUNT_NAMES = frozenset({"m", "count", "trials", "runs", "repeat", "repeats", "times", "num"})


def _suggestion(unknown: list[str]) -> str:
    """`` (did you mean n=?)`` for names close to a supported one, else ``""``."""
    import difflib

    meant: dict[str, None] = {}
    for name in unknown:
        close = (
            ["n"]
            if name in _COUNT_NAMES
            else difflib.get_close_matches(name, sorted(_TRIAL_KWARGS), 1)
        )
        for match in close:
            meant[f"{match}="] = None
    return f" (did you mean {', '.join(meant)}?)" if meant else ""


#: The longest clone id ``ids=`` may give (it is part of the clone's reported name).
MAX_CASE_ID = 200


def payload_case(payload: object) -> CloneCase | None:
    """The case a ``Payload`` stands for (its id, and its own harm category), or None
    for anything else."""
    from rampart.core.result import HarmCategory
    from rampart.core.types import Payload

    if not isinstance(payload, Payload):
        return None
    category = payload.metadata.get("harm_category")
    harm: HarmCategory | str | None = None
    if isinstance(category, str) and category.strip():
        try:
            harm = HarmCategory(category)
        except ValueError:
            harm = category
    return CloneCase(id=payload.id, payload_id=payload.id, harm_category=harm)


def _clone_cases(owner: str, raw: object) -> tuple[CloneCase, ...]:
    """``ids=``: a list of clone ids, each a one-line string or a ``Payload``."""
    argument = _marker_name("ids")
    if isinstance(raw, str) or not isinstance(raw, list | tuple):
        raise invalid(
            owner,
            argument,
            "a list of clone ids (strings or Payloads)",
            raw,
            error=pytest.UsageError,
        )
    cases = []
    expected = f"a one-line string of at most {MAX_CASE_ID} characters, or a Payload"
    for index, value in enumerate(raw):
        case = payload_case(value)
        if case is None:
            if (
                not isinstance(value, str)
                or not value.strip()
                or len(value) > MAX_CASE_ID
                or one_line(value) != value
            ):
                raise invalid(
                    owner, f"{argument}[{index}]", expected, value, error=pytest.UsageError
                )
            case = CloneCase(id=value)
        cases.append(case)
    return tuple(cases)


def _shared_fixtures(item: pytest.Item, raw: object) -> tuple[str, ...]:
    """``shared_fixtures=``: names of fixtures the test uses (directly or through
    other fixtures), which its clones share instead of each setting up its own."""
    argument = _marker_name("shared_fixtures")
    if isinstance(raw, str) or not isinstance(raw, list | tuple | set | frozenset):
        raise invalid(
            item.nodeid,
            argument,
            "a list of fixture names",
            raw,
            error=pytest.UsageError,
        )
    used = set(getattr(item, "fixturenames", ()))
    names: list[str] = []
    for name in raw:
        if not isinstance(name, str) or not name:
            raise invalid(
                item.nodeid,
                argument,
                "fixture names (non-empty strings)",
                name,
                error=pytest.UsageError,
            )
        if name not in used:
            known = ", ".join(sorted(used - {"request"})[:20]) or "none"
            raise pytest.UsageError(
                f"{argument} on {item.nodeid} names {name!r}, which the test does not use; "
                f"expected fixtures it uses ({known})"
            )
        names.append(name)
    return tuple(sorted(set(names)))


def _strictly_between(threshold: object) -> bool:
    """A threshold the default confidence applies to (a bad value is checked later)."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float):
        return False
    return 0.0 < threshold < 1.0


@attrs.frozen(kw_only=True)
class HarmTags:
    """A test's ``harm`` tags: the ``primary`` one its results get as their
    ``harm_category`` (the first built-in ``HarmCategory``, else the first tag) and
    all of them, in the order given (the closest marker's first), each once."""

    primary: HarmCategory | str
    tags: tuple[str, ...]


def harm_of(item: pytest.Item) -> HarmTags | None:
    """The test's ``harm`` tags, from every ``harm`` marker on it (closest first), or
    None without one."""
    tags: dict[str, HarmCategory | str] = {}
    markers = list(item.iter_markers("harm"))
    if not markers:
        return None
    from rampart.core.result import HarmCategory  # the model: loaded by a harm-marked test

    for marker in markers:
        if not marker.args:
            raise pytest.UsageError(
                f"@pytest.mark.harm needs at least one category (on {item.nodeid}), "
                "e.g. @pytest.mark.harm(HarmCategory.DATA_EXFILTRATION) or "
                '@pytest.mark.harm("my_risk")'
            )
        for index, category in enumerate(marker.args):
            if not isinstance(category, str) or not category.strip():
                raise invalid(
                    item.nodeid,
                    f"@pytest.mark.harm category {index}",
                    "a HarmCategory or a non-empty string",
                    category,
                    error=pytest.UsageError,
                )
            try:
                tag: HarmCategory | str = HarmCategory(category)
            except ValueError:
                tag = str(category)
            tags.setdefault(str(tag), tag)
    if not tags:
        return None
    builtin = [tag for tag in tags.values() if isinstance(tag, HarmCategory)]
    primary = builtin[0] if builtin else next(iter(tags.values()))
    return HarmTags(primary=primary, tags=tuple(tags))
