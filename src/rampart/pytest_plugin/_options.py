"""The plugin's command-line and ini options: declared, then read and validated once.

Bad values are usage errors that name the option and what was expected. The entry
point imports this module, so it imports nothing beyond pytest and the markers.
"""

from __future__ import annotations

import attrs
import pytest

from rampart._checks import invalid
from rampart.pytest_plugin._markers import DEFAULT_CONCURRENCY, DEFAULT_MAX_TRIALS

__all__ = ["DEFAULT_MAX_BYTES", "MIN_MAX_BYTES", "Options", "add_options"]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MIN_MAX_BYTES = 4096

_CONCURRENCY_HELP = "Default bound on concurrently running trial clones per test (default 10)."
_MAX_BYTES_HELP = "Largest serialized result an xdist worker sends (default 16 MiB, min 4096)."


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
    _add_robustness_options(parser, group)


def _add_robustness_options(parser: pytest.Parser, group: pytest.OptionGroup) -> None:
    """Bounds, the run journal and resume (docs/pytest-plugin.md: Limits, Journal and resume)."""
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
    journal_help = (
        "Directory of the run journal (one JSONL file per run; default "
        "<rootdir>/.rampart/journal), or 'off'."
    )
    group.addoption(
        "--rampart-journal", dest="rampart_journal", default=None, metavar="DIR", help=journal_help
    )
    parser.addini("rampart_journal", journal_help, default="")
    group.addoption(
        "--rampart-resume",
        dest="rampart_resume",
        nargs="?",
        const="",
        default=None,
        metavar="JOURNAL",
        help="Reuse the results a run journal holds and run only the rest (JOURNAL: a "
        "journal file or directory; default: the newest journal in the journal directory).",
    )


@attrs.frozen(kw_only=True)
class Options:
    """The effective option values of this run."""

    trials_override: int | None
    default_concurrency: int
    max_bytes: int
    max_trials: int = DEFAULT_MAX_TRIALS
    harm_without_result: str = "fail"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        max_trials = _option_int(config, "rampart_max_trials", minimum=1)
        max_trials = DEFAULT_MAX_TRIALS if max_trials is None else max_trials
        trials = _option_int(config, "rampart_trials", minimum=1, maximum=max_trials)
        concurrency = _option_int(config, "rampart_concurrency", minimum=1)
        max_bytes = _option_int(config, "rampart_xdist_max_bytes", minimum=MIN_MAX_BYTES)
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
            max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
            max_trials=max_trials,
            harm_without_result=harm,
        )


_INI_OPTIONS = frozenset({"rampart_concurrency", "rampart_xdist_max_bytes", "rampart_max_trials"})


def _option_int(
    config: pytest.Config, name: str, *, minimum: int, maximum: int | None = None
) -> int | None:
    """An integer option from the command line, else the ini file; None when unset."""
    value = config.getoption(name, None)
    source = f"--{name.replace('_', '-')}"
    if value is None:
        raw = config.getini(name) if name in _INI_OPTIONS else ""
        if raw in ("", None):
            return None
        value, source = raw, f"ini option {name}"
    expected = f"an integer >= {minimum}"
    if maximum is not None:
        expected = f"an integer from {minimum} to {maximum} (ini rampart_max_trials)"
    try:
        number = int(str(value))
    except ValueError:
        raise invalid("rampart", source, expected, value, error=pytest.UsageError) from None
    if number < minimum or (maximum is not None and number > maximum):
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return number
