"""The plugin's command-line and ini options: declared, then read and validated once.

Bad values are usage errors that name the option and what was expected. The entry
point imports this module, so it imports nothing beyond pytest and the markers.
"""

from __future__ import annotations

import attrs
import pytest

from rampart._checks import invalid
from rampart.pytest_plugin._markers import DEFAULT_CONCURRENCY, INCONCLUSIVE_OUTCOMES

__all__ = ["DEFAULT_MAX_BYTES", "MIN_MAX_BYTES", "Options", "add_options"]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MIN_MAX_BYTES = 4096

_CONCURRENCY_HELP = "Default bound on concurrently running trial clones per test (default 10)."
_MAX_BYTES_HELP = "Largest serialized result an xdist worker sends (default 16 MiB, min 4096)."
_CONFIDENCE_HELP = (
    "Default confidence= of trial groups with a threshold in (0, 1): their verdict becomes "
    "PASS / FAIL / INCONCLUSIVE from the exact interval (default: off, the count rule)."
)
_INCONCLUSIVE_HELP = (
    "The test outcome of an INCONCLUSIVE trial group: fail (default), xfail, skip or pass."
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("rampart", "rampart safety testing")
    group.addoption(
        "--rampart-trials",
        dest="rampart_trials",
        default=None,
        metavar="N",
        help="Override n of every @pytest.mark.trial test.",
    )
    group.addoption(
        "--rampart-concurrency",
        dest="rampart_concurrency",
        default=None,
        metavar="N",
        help=_CONCURRENCY_HELP,
    )
    parser.addini("rampart_concurrency", _CONCURRENCY_HELP, default="")
    group.addoption(
        "--rampart-xdist-max-bytes",
        dest="rampart_xdist_max_bytes",
        default=None,
        metavar="BYTES",
        help=_MAX_BYTES_HELP,
    )
    parser.addini("rampart_xdist_max_bytes", _MAX_BYTES_HELP, default="")
    group.addoption(
        "--rampart-confidence",
        dest="rampart_confidence",
        default=None,
        metavar="C",
        help=_CONFIDENCE_HELP,
    )
    parser.addini("rampart_confidence", _CONFIDENCE_HELP, default="")
    group.addoption(
        "--rampart-inconclusive",
        dest="rampart_inconclusive",
        default=None,
        metavar="OUTCOME",
        help=_INCONCLUSIVE_HELP,
    )
    parser.addini("rampart_inconclusive", _INCONCLUSIVE_HELP, default="")
    group.addoption(
        "--rampart-llm-cache",
        dest="rampart_llm_cache",
        default=None,
        metavar="DIR",
        help="Cache LLM judge/attacker/generator replies on disk in DIR (default: off).",
    )
    parser.addini(
        "rampart_llm_cache",
        "Directory of the on-disk LLM response cache, relative to the rootdir (default: off).",
        default="",
    )


@attrs.frozen(kw_only=True)
class Options:
    """The effective option values of this run."""

    trials_override: int | None
    default_concurrency: int
    max_bytes: int
    default_confidence: float | None = None
    inconclusive: str = "fail"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        trials = _option_int(config, "rampart_trials", minimum=1)
        concurrency = _option_int(config, "rampart_concurrency", minimum=1)
        max_bytes = _option_int(config, "rampart_xdist_max_bytes", minimum=MIN_MAX_BYTES)
        return cls(
            trials_override=trials,
            default_concurrency=DEFAULT_CONCURRENCY if concurrency is None else concurrency,
            max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
            default_confidence=_option_confidence(config),
            inconclusive=_option_inconclusive(config),
        )


_INI_OPTIONS = frozenset(
    {
        "rampart_concurrency",
        "rampart_xdist_max_bytes",
        "rampart_confidence",
        "rampart_inconclusive",
    }
)


def _raw_option(config: pytest.Config, name: str) -> tuple[object, str] | None:
    """The option's raw value and where it came from: the command line, else the ini file."""
    value = config.getoption(name, None)
    if value is not None:
        return value, f"--{name.replace('_', '-')}"
    raw = config.getini(name) if name in _INI_OPTIONS else ""
    if raw in ("", None):
        return None
    return raw, f"ini option {name}"


def _option_confidence(config: pytest.Config) -> float | None:
    found = _raw_option(config, "rampart_confidence")
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


def _option_inconclusive(config: pytest.Config) -> str:
    found = _raw_option(config, "rampart_inconclusive")
    if found is None:
        return "fail"
    value, source = found
    text = str(value).strip()
    if text not in INCONCLUSIVE_OUTCOMES:
        listed = ", ".join(INCONCLUSIVE_OUTCOMES)
        raise invalid("rampart", source, f"one of {listed}", value, error=pytest.UsageError)
    return text


def _option_int(config: pytest.Config, name: str, *, minimum: int) -> int | None:
    """An integer option from the command line, else the ini file; None when unset."""
    value = config.getoption(name, None)
    source = f"--{name.replace('_', '-')}"
    if value is None:
        raw = config.getini(name) if name in _INI_OPTIONS else ""
        if raw in ("", None):
            return None
        value, source = raw, f"ini option {name}"
    expected = f"an integer >= {minimum}"
    try:
        number = int(str(value))
    except ValueError:
        raise invalid("rampart", source, expected, value, error=pytest.UsageError) from None
    if number < minimum:
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return number
