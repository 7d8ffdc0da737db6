"""The plugin's command-line and ini options: declared, then read and validated once.

Bad values are usage errors that name the option and what was expected. The entry
point imports this module, so it imports nothing beyond pytest and the markers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import attrs
import pytest

from rampart._checks import invalid
from rampart._concurrency import CONCURRENCY_EXPECTED, parse_concurrency
from rampart.pytest_plugin._markers import (
    DEFAULT_CONCURRENCY,
    DEFAULT_MAX_TRIALS,
    INCONCLUSIVE_OUTCOMES,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "MIN_MAX_BYTES",
    "Options",
    "PROGRESS_MODES",
    "SUMMARY_MODES",
    "add_options",
]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MIN_MAX_BYTES = 4096

_CONCURRENCY_HELP = (
    "Default bound on concurrently running trial clones per test: an integer >= 1 "
    "(default 10) or 'auto' (adaptive: grows while turn latency stays flat and no "
    "rate-limit signal arrives, backs off when either changes)."
)
_MAX_BYTES_HELP = "Largest serialized result an xdist worker sends (default 16 MiB, min 4096)."
_CONFIDENCE_HELP = (
    "Default confidence= of trial groups with a threshold in (0, 1): their verdict becomes "
    "PASS / FAIL / INCONCLUSIVE from the exact interval (default: off, the count rule)."
)
_INCONCLUSIVE_HELP = (
    "The test outcome of an INCONCLUSIVE trial group: fail (default), xfail, skip or pass."
)
_REPORT_DIR_HELP = (
    "Write the JSON report, the JSONL trace and the HTML report to DIR (in addition to "
    "any pytest_rampart_sinks sinks)."
)
#: ``all``: every result line and every group line (the default); ``groups``: trial
#: groups as one line each, other results line by line; ``failures``: only results
#: and groups that are not SAFE / did not pass.
SUMMARY_MODES = ("all", "groups", "failures")
PROGRESS_MODES = ("auto", "live", "plain", "off")
_PROGRESS_HELP = (
    "Progress of running trial groups: auto (a live line per group on a terminal, plain "
    "lines otherwise; the default), live, plain or off. -q turns it off."
)
_PROGRESS_INTERVAL_HELP = "Seconds between plain progress lines of one trial group (default 5)."
_SUMMARY_HELP = (
    "Terminal safety summary: all (every result and group line, the default), groups "
    "(one line per trial group instead of its clones), failures (only what is not SAFE)."
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
    group.addoption(
        "--rampart-report-dir",
        dest="rampart_report_dir",
        default=None,
        metavar="DIR",
        help=_REPORT_DIR_HELP,
    )
    parser.addini(
        "rampart_report_dir",
        "Directory for the JSON, JSONL and HTML reports, relative to the rootdir (default: none).",
        default="",
    )
    group.addoption(
        "--rampart-summary",
        dest="rampart_summary",
        default=None,
        metavar="MODE",
        help=_SUMMARY_HELP,
    )
    parser.addini("rampart_summary", _SUMMARY_HELP, default="")
    group.addoption(
        "--rampart-progress",
        dest="rampart_progress",
        default=None,
        metavar="MODE",
        help=_PROGRESS_HELP,
    )
    parser.addini("rampart_progress", _PROGRESS_HELP, default="")
    parser.addini("rampart_progress_interval", _PROGRESS_INTERVAL_HELP, default="")
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
    default_concurrency: int | Literal["auto"]
    max_bytes: int
    max_trials: int = DEFAULT_MAX_TRIALS
    harm_without_result: str = "fail"
    report_dir: Path | None = None
    summary: str = "all"
    progress: str = "auto"
    progress_interval: float = 5.0
    default_confidence: float | None = None
    inconclusive: str = "fail"

    @classmethod
    def from_config(cls, config: pytest.Config) -> Options:
        max_trials = _option_int(config, "rampart_max_trials", minimum=1)
        max_trials = DEFAULT_MAX_TRIALS if max_trials is None else max_trials
        trials = _option_int(config, "rampart_trials", minimum=1, maximum=max_trials)
        concurrency = _option_concurrency(config)
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
            report_dir=_report_dir(config),
            summary=_choice(config, "rampart_summary", SUMMARY_MODES),
            progress=_choice(config, "rampart_progress", PROGRESS_MODES),
            progress_interval=_progress_interval(config),
            default_confidence=_option_confidence(config),
            inconclusive=_choice(config, "rampart_inconclusive", INCONCLUSIVE_OUTCOMES),
        )


def _report_dir(config: pytest.Config) -> Path | None:
    """``--rampart-report-dir`` (relative to the current directory), else the ini option
    (relative to the rootdir); None when neither is set."""
    value = config.getoption("rampart_report_dir", None)
    if value is not None:
        if not str(value).strip():
            raise invalid(
                "rampart",
                "--rampart-report-dir",
                "a directory path",
                value,
                error=pytest.UsageError,
            )
        return Path(value).absolute()
    raw = config.getini("rampart_report_dir")
    if not isinstance(raw, str) or not raw.strip():
        return None
    return (config.rootpath / raw.strip()).absolute()


def _choice(config: pytest.Config, name: str, choices: tuple[str, ...]) -> str:
    """A mode option from the command line, else the ini file; the first choice when unset."""
    value = config.getoption(name, None)
    source = f"--{name.replace('_', '-')}"
    if value is None:
        value, source = config.getini(name) or choices[0], f"ini option {name}"
    mode = str(value).strip().lower()
    if mode not in choices:
        expected = "one of " + ", ".join(choices)
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return mode


def _progress_interval(config: pytest.Config) -> float:
    raw = config.getini("rampart_progress_interval")
    if raw in ("", None):
        return 5.0
    try:
        seconds = float(str(raw))
    except ValueError:
        seconds = -1.0
    if not seconds >= 0 or seconds == float("inf"):
        raise invalid(
            "rampart",
            "ini option rampart_progress_interval",
            "a number of seconds >= 0",
            raw,
            error=pytest.UsageError,
        )
    return seconds


def _option_concurrency(config: pytest.Config) -> int | Literal["auto"] | None:
    """``--rampart-concurrency``, else the ini option: an integer >= 1 or ``auto``."""
    value = config.getoption("rampart_concurrency", None)
    source = "--rampart-concurrency"
    if value is None:
        value, source = config.getini("rampart_concurrency"), "ini option rampart_concurrency"
        if value in ("", None):
            return None
    concurrency = parse_concurrency(value)
    if concurrency is None:
        raise invalid("rampart", source, CONCURRENCY_EXPECTED, value, error=pytest.UsageError)
    return concurrency


def _option_confidence(config: pytest.Config) -> float | None:
    """``--rampart-confidence``, else the ini option; None when neither is set."""
    value = config.getoption("rampart_confidence", None)
    source = "--rampart-confidence"
    if value is None:
        value, source = config.getini("rampart_confidence"), "ini option rampart_confidence"
        if value in ("", None):
            return None
    expected = "a number in (0, 1), e.g. 0.95"
    try:
        number = float(str(value))
    except ValueError:
        raise invalid("rampart", source, expected, value, error=pytest.UsageError) from None
    if not 0.0 < number < 1.0:  # also rejects nan
        raise invalid("rampart", source, expected, value, error=pytest.UsageError)
    return number


_INI_OPTIONS = frozenset({"rampart_concurrency", "rampart_xdist_max_bytes", "rampart_max_trials"})


def _option_int(
    config: pytest.Config,
    name: str,
    *,
    minimum: int,
    maximum: int | None = None,
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
