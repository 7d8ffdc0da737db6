"""``rampart scan KIND ...``: config-only scans, run through pytest and the plugin.

Each kind is a ready-made test module that the command runs with ``pytest.main``, in
its own process (so the terminal summary, the JSON, JSONL and HTML reports, the
journal, ``--resume`` and ``-n`` work exactly as in a suite, and the scan pays one
interpreter's start and one import of its framework), with its settings handed over
in one environment variable, set for the run and restored after it:

* ``agentdojo``: AgentDojo's injection suites against an AgentDojo pipeline or an
  OpenAI-compatible model (``rampart.scan._agentdojo._scan_suite``);
* ``xpia``: the built-in payload pack against an OpenAI-compatible agent endpoint,
  judged by an LLM judge (``rampart.scan._xpia_suite``).

The items to attack run as one trial group, so they are in flight concurrently under
``--concurrency``. The exit status is pytest's: 1 when anything was not SAFE, 0 when
every attack was resisted, 6 when the only failures were ERRORs (the agent or the judge
unreachable: nothing was learned); a usage error (here or in the scan's own checks before
collection, pytest's 4) is 2; an interrupted scan (Ctrl-C: its reports are written,
marked interrupted) is 130, as for every command.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart._pacing import (
    AUTO,
    CONCURRENCY_EXPECTED,
    DEFAULT_CONCURRENCY,
    Setting,
    parse_concurrency,
)
from rampart.cli._errors import EXIT_INTERRUPTED, EXIT_USAGE, CliError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["SCAN_ENVIRONMENT", "pytest_arguments", "register", "run_agentdojo", "run_xpia"]

#: The scan's pytest run loads only the plugins it names (``pytest_arguments``): the
#: other plugins installed beside rampart (hypothesis, pytest-asyncio, langsmith's, ...)
#: would add their imports to every scan's start, and their options and output to the
#: scan's, and nothing to the scan. Set for the run, as the settings are, so ``-n``'s
#: worker processes inherit both.
SCAN_ENVIRONMENT = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

_DESCRIPTION = """\
Scan an agent without writing a test. The attacks run concurrently through pytest and
rampart's plugin: the summary, the reports, the journal and --resume work as in a suite.
"""

_EPILOG = """\
examples:
  rampart scan agentdojo --suite banking --pipeline my_agents:build --concurrency 32
  rampart scan agentdojo --suite slack --model gpt-4o --base-url https://api.openai.com/v1 \
      --api-key-env OPENAI_API_KEY
  rampart scan xpia --base-url http://127.0.0.1:8000/v1 --model my-agent

exit status: 0 every attack was resisted; 1 an attack succeeded (or a result was not
SAFE); 2 usage error (a bad option, an unknown suite, task or attack, a pipeline that
does not load, an API key variable that is not set); 6 only infrastructure failures (every
failing result an ERROR: the agent or the judge down), nothing was found.
"""


def _common(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--trials", type=int, default=1, metavar="N", help=f"runs of each {what} (default 1)"
    )
    parser.add_argument(
        "--concurrency",
        default=str(DEFAULT_CONCURRENCY),
        metavar="N|auto",
        help=f"{what}s in flight (default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--report-dir", default=".report", metavar="DIR", help="where the reports go (.report)"
    )
    parser.add_argument(
        "--sarif", metavar="PATH", help="also write the findings as a SARIF 2.1.0 log to PATH"
    )
    parser.add_argument(
        "--risk-map",
        metavar="FILE",
        help="a risk map file extending the built-in mapping to framework items",
    )
    parser.add_argument(
        "--resume", action="store_true", help="finish what the last interrupted scan did not"
    )
    parser.add_argument("-n", dest="workers", metavar="N", help="pytest-xdist worker processes")


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "scan",
        help="scan an agent without writing a test (AgentDojo, the payload pack)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(title="what to scan with", dest="kind", metavar="KIND")
    kinds.required = True
    agentdojo = kinds.add_parser(
        "agentdojo",
        help="AgentDojo's injection suites against an AgentDojo pipeline or a model",
        description="AgentDojo's injection suites (pip install 'rampart[agentdojo]') "
        "against an AgentDojo pipeline or an OpenAI-compatible model (its tool loop run "
        "by rampart, rate-limited at a learned rate), judged by AgentDojo's own checks.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agentdojo.add_argument("--suite", required=True, help="workspace, travel, banking or slack")
    agentdojo.add_argument("--version", default=None, help="benchmark version (default v1.2.2)")
    agentdojo.add_argument(
        "--attack", default=None, help="an AgentDojo attack (default important_instructions)"
    )
    agent = agentdojo.add_mutually_exclusive_group(required=True)
    agent.add_argument(
        "--pipeline",
        metavar="MODULE:FACTORY",
        help="a zero-argument callable returning an AgentDojo BasePipelineElement",
    )
    agent.add_argument("--model", help="an OpenAI-compatible model as the agent (with --base-url)")
    agentdojo.add_argument("--base-url", help="the model's API root (.../v1), with --model")
    agentdojo.add_argument(
        "--api-key-env", metavar="VAR", help="environment variable with the model's key"
    )
    agentdojo.add_argument(
        "--user-task", action="append", dest="user_tasks", metavar="ID", help="exact id, repeatable"
    )
    agentdojo.add_argument(
        "--injection-task",
        action="append",
        dest="injection_tasks",
        metavar="ID",
        help="exact id, repeatable",
    )
    agentdojo.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="seconds per pair; a pair that takes longer (a pipeline that hangs) is an "
        "ERROR (default: no limit)",
    )
    _common(agentdojo, "pair")
    agentdojo.set_defaults(run=run_agentdojo)

    xpia = kinds.add_parser(
        "xpia",
        help="the built-in payload pack against an OpenAI-compatible agent endpoint",
        description="The built-in payload pack (rampart-xpia-v1), each payload attached to "
        "the trigger and sent to an OpenAI-compatible agent endpoint, judged by an LLM judge.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    xpia.add_argument("--base-url", required=True, help="the agent's API root (.../v1)")
    xpia.add_argument("--model", required=True, help="the agent's model name")
    xpia.add_argument("--api-key-env", metavar="VAR", help="environment variable with its key")
    xpia.add_argument("--judge-model", help="the judge's model (default: --model)")
    xpia.add_argument("--judge-base-url", help="the judge's API root (default: --base-url)")
    xpia.add_argument(
        "--judge-api-key-env", metavar="VAR", help="its key's variable (default: --api-key-env)"
    )
    xpia.add_argument("--harm-category", help="only the payloads of this category")
    xpia.add_argument("--trigger", help="what the user asks, with the payload attached")
    xpia.add_argument(
        "--timeout", type=float, default=120.0, help="seconds per attack (default 120)"
    )
    _common(xpia, "payload")
    xpia.set_defaults(run=run_xpia)


def _check_common(args: argparse.Namespace) -> Setting:
    """``--trials`` and ``--concurrency`` (read by the plugin's own rule, so the command
    and its pytest run agree)."""
    if args.trials < 1:
        raise CliError(f"--trials must be >= 1, got {args.trials}")
    concurrency = parse_concurrency(args.concurrency)
    if concurrency is None:
        raise CliError(f"--concurrency must be {CONCURRENCY_EXPECTED}, got {args.concurrency!r}")
    return concurrency


def _check_url(option: str, url: str | None) -> None:
    if url is not None and not url.startswith(("http://", "https://")):
        raise CliError(f"{option}: expected an http:// or https:// URL, got {url!r}")


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise CliError(f"--timeout must be a finite number of seconds > 0, got {timeout}")


def _workers(value: str | None) -> int:
    """How many xdist workers ``-n`` asks for (xdist itself checks the value)."""
    if value == "auto":
        return os.cpu_count() or 1
    return int(value) if value is not None and value.isdigit() and int(value) > 0 else 1


def _agentdojo_config(args: argparse.Namespace) -> Any:
    """The checks that need no AgentDojo import, so a mistyped option is answered at
    once; the scan's pytest run makes the rest (tasks, attack, the pipeline itself)
    before it collects anything, importing AgentDojo (seconds: every model SDK) once."""
    from rampart.agentdojo._internal import DEFAULT_ATTACK, DEFAULT_VERSION, SUITE_NAMES, VERSIONS
    from rampart.scan._internal import ScanConfig

    concurrency = _check_common(args)
    if args.suite not in SUITE_NAMES:
        raise CliError(f"--suite: expected one of {', '.join(SUITE_NAMES)}; got {args.suite!r}")
    version = args.version or DEFAULT_VERSION
    if version not in VERSIONS:
        raise CliError(f"--version: expected one of {', '.join(VERSIONS)}; got {version!r}")
    if args.pipeline is not None:
        module, sep, factory = args.pipeline.partition(":")
        if not (module and sep and factory):
            raise CliError(f"--pipeline: expected 'module:factory', got {args.pipeline!r}")
        if args.base_url is not None or args.api_key_env is not None:
            raise CliError("--base-url and --api-key-env go with --model, not --pipeline")
    elif args.base_url is None:
        raise CliError("--model: expected --base-url (the model's API root) beside it")
    _check_url("--base-url", args.base_url)
    _check_timeout(args.timeout)
    return ScanConfig(
        suite=args.suite,
        version=version,
        attack=args.attack or DEFAULT_ATTACK,
        pipeline=args.pipeline,
        model=args.model,
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        trials=args.trials,
        user_tasks=args.user_tasks,
        injection_tasks=args.injection_tasks,
        max_threads=64 if concurrency == AUTO else concurrency,
        shards=_workers(args.workers),
        timeout=args.timeout,
    )


def run_agentdojo(args: argparse.Namespace) -> int:
    from rampart.scan import _agentdojo_suite_path
    from rampart.scan._internal import AGENTDOJO_ENV_VAR

    config = _agentdojo_config(args)
    plugin = "rampart.scan._agentdojo_plugin"
    return _run_pytest(args, _agentdojo_suite_path(), plugin, {AGENTDOJO_ENV_VAR: config.to_env()})


def run_xpia(args: argparse.Namespace) -> int:
    from rampart.core.types import HarmCategory
    from rampart.scan import _xpia_suite_path
    from rampart.scan._internal import DEFAULT_TRIGGER, XPIA_ENV_VAR, XpiaScanConfig

    _check_common(args)
    for option, url in (("--base-url", args.base_url), ("--judge-base-url", args.judge_base_url)):
        _check_url(option, url)
    if args.harm_category is not None and args.harm_category not in {
        category.value for category in HarmCategory
    }:
        known = ", ".join(category.value for category in HarmCategory)
        raise CliError(f"--harm-category: expected one of {known}; got {args.harm_category!r}")
    _check_timeout(args.timeout)
    judge_model = args.judge_model or args.model
    judge_base_url = args.judge_base_url or args.base_url
    if (judge_model, judge_base_url.rstrip("/")) == (args.model, args.base_url.rstrip("/")):
        # Not refused (it is the documented default), but said: the agent under attack
        # would grade its own answers, and an agent that followed an injection, or that
        # answers every prompt as an agent, gives no verdict worth reading.
        print(
            "rampart scan xpia: warning: the judge is the agent under test (model "
            f"{args.model!r} at the same --base-url): an attacked agent would judge its own "
            "answers; give --judge-model (and --judge-base-url) a separate judge model",
            file=sys.stderr,
        )
    config = XpiaScanConfig(
        base_url=args.base_url,
        model=args.model,
        api_key_env=args.api_key_env,
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        judge_api_key_env=args.judge_api_key_env or args.api_key_env,
        harm_category=args.harm_category,
        trigger=args.trigger or DEFAULT_TRIGGER,
        trials=args.trials,
        timeout=args.timeout,
    )
    return _run_pytest(
        args, _xpia_suite_path(), "rampart.scan._xpia_plugin", {XPIA_ENV_VAR: config.to_env()}
    )


def pytest_arguments(module: Path, plugin: str, ini: Path) -> list[str]:
    """The scan's pytest run: ``module`` with ``plugin``, under the scan's own ``ini``
    (the user's project ini must not add options to, or take the rampart plugin away
    from, the scan's run); the options of the run follow it. With ``SCAN_ENVIRONMENT``
    it loads rampart's plugin, anyio's (the scan's test is async) and ``plugin`` alone;
    ``-n`` adds xdist's. The module is imported by pytest's ``importlib`` mode (no
    ``sys.path`` change), afresh for each run (``_fresh``)."""
    return [
        str(module),
        "-c",
        str(ini),
        "--rootdir",
        str(module.parent),
        "--import-mode=importlib",
        # The scan's asserts carry their own messages (the result's summary), so pytest's
        # assert rewriting would change nothing in its output, and it costs: its import
        # hook sits in front of AgentDojo's thousands of modules and rewrites each of
        # rampart's (about 15 % of a small scan's CPU).
        "--assert=plain",
        "-p",
        "no:cacheprovider",
        "-p",
        "rampart",
        "-p",
        "anyio",
        "-p",
        plugin,
    ]


@contextlib.contextmanager
def _environment(variables: dict[str, str]) -> Iterator[None]:
    """``variables`` set in this process's environment for the run, then restored."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def _fresh(module: Path) -> Iterator[None]:
    """``module`` imported afresh by the run and forgotten after it: the scan's test is
    built from the settings when its module is imported, and pytest would reuse a module
    a previous run in this process left in ``sys.modules``."""
    target = os.path.realpath(module)

    def forget() -> None:
        for name, loaded in list(sys.modules.items()):
            path = getattr(loaded, "__file__", None)
            if (
                isinstance(path, str)
                and os.path.basename(path) == module.name
                and os.path.realpath(path) == target
            ):
                del sys.modules[name]
                package, _, attribute = name.rpartition(".")
                if getattr(sys.modules.get(package), attribute, None) is loaded:
                    delattr(sys.modules[package], attribute)

    forget()
    try:
        yield
    finally:
        forget()


def _run_pytest(args: argparse.Namespace, module: Path, plugin: str, env: dict[str, str]) -> int:
    import pytest

    from rampart.scan import _end_if_threads_left

    with tempfile.TemporaryDirectory(prefix="rampart-scan-") as scratch:
        ini = Path(scratch, "pytest.ini")
        ini.write_text("[pytest]\n", encoding="utf-8")
        arguments = [
            *pytest_arguments(module, plugin, ini),
            "--rampart-report-dir",
            str(Path(args.report_dir).resolve()),
            "--rampart-concurrency",
            args.concurrency,
        ]
        for option, value in (
            ("--rampart-sarif", args.sarif),
            ("--rampart-risk-map", args.risk_map),
        ):
            if value:
                arguments += [option, str(Path(value).resolve())]
        if args.resume:
            arguments.append("--rampart-resume")
        if args.workers:
            arguments += ["-p", "xdist", "-n", args.workers]
        with _environment({**SCAN_ENVIRONMENT, **env}), _fresh(module):
            status = int(pytest.main(arguments))
    # pytest's usage error is one the scan's own checks found before collection; its
    # interrupted is Ctrl-C (the reports are written), 130 as for every command (``main``).
    interrupted = status == pytest.ExitCode.INTERRUPTED
    if interrupted:
        status = EXIT_INTERRUPTED
    elif status == pytest.ExitCode.USAGE_ERROR:
        status = EXIT_USAGE
    _end_if_threads_left(status, f"rampart scan {args.kind}")
    if interrupted:
        raise KeyboardInterrupt
    return status
