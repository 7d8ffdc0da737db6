"""``rampart scan agentdojo ...``: a config-only scan, run through pytest and the plugin.

The selected AgentDojo pairs run as one trial group of the ready-made test module
``rampart.agentdojo._scan_suite`` in a fresh ``python -m pytest`` process, so the
terminal summary, the JSON, JSONL and HTML reports, the journal, ``--resume`` and
``-n`` work exactly as in a suite. The exit status is pytest's: 1 when any pair is
UNSAFE (or not SAFE), 0 when every pair resisted.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rampart.cli._errors import EXIT_USAGE, CliError

__all__ = ["register", "run"]

pytest_usage_error = 4

_DESCRIPTION = """\
Scan an agent without writing a test. 'agentdojo' runs AgentDojo's injection suites
(pip install 'rampart[agentdojo]') against an AgentDojo pipeline: every selected
(user task, injection task) pair is attacked with AgentDojo's attack and judged by
AgentDojo's own checks, concurrently, through pytest and rampart's plugin (summary,
reports, journal and resume as in a suite).
"""

_EPILOG = """\
example:
  rampart scan agentdojo --suite banking --pipeline my_agents:build --concurrency 32

exit status: 0 every pair resisted; 1 an injection succeeded (or a pair was not SAFE);
2 usage error (a bad option, an unknown suite, task or attack, a pipeline that does
not load).
"""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "scan",
        help="scan an agent without writing a test (AgentDojo's suites)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(title="what to scan with", dest="kind", metavar="KIND")
    kinds.required = True
    agentdojo = kinds.add_parser(
        "agentdojo",
        help="AgentDojo's injection suites against an AgentDojo pipeline",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agentdojo.add_argument("--suite", required=True, help="workspace, travel, banking or slack")
    agentdojo.add_argument(
        "--version", default=None, help="AgentDojo benchmark version (default v1.2.2)"
    )
    agentdojo.add_argument(
        "--attack", default=None, help="an AgentDojo attack (default important_instructions)"
    )
    agentdojo.add_argument(
        "--pipeline",
        required=True,
        metavar="MODULE:FACTORY",
        help="a zero-argument callable returning an AgentDojo BasePipelineElement",
    )
    agentdojo.add_argument(
        "--trials", type=int, default=1, metavar="N", help="runs of each pair (default 1)"
    )
    agentdojo.add_argument(
        "--concurrency", default="10", metavar="N|auto", help="pairs in flight (default 10)"
    )
    agentdojo.add_argument(
        "--user-task",
        action="append",
        dest="user_tasks",
        metavar="ID",
        help="only this user task (exact id; repeatable)",
    )
    agentdojo.add_argument(
        "--injection-task",
        action="append",
        dest="injection_tasks",
        metavar="ID",
        help="only this injection task (exact id; repeatable)",
    )
    agentdojo.add_argument(
        "--report-dir",
        default=".report",
        metavar="DIR",
        help="where the reports go (default .report)",
    )
    agentdojo.add_argument(
        "--resume",
        action="store_true",
        help="run only the pairs the last interrupted scan did not finish",
    )
    agentdojo.add_argument("-n", dest="workers", metavar="N", help="pytest-xdist worker processes")
    agentdojo.set_defaults(run=run)


def _check(args: argparse.Namespace) -> Any:
    """The checks that need no AgentDojo import; the scan's pytest process makes the
    rest (tasks, attack, the pipeline itself) before it collects anything, so the
    command pays AgentDojo's import (seconds: it loads every model SDK) once."""
    from rampart.agentdojo._scan_config import ScanConfig
    from rampart.agentdojo._suites import DEFAULT_ATTACK, DEFAULT_VERSION, SUITE_NAMES, VERSIONS

    if args.trials < 1:
        raise CliError(f"--trials must be >= 1, got {args.trials}")
    concurrency = args.concurrency
    if concurrency != "auto" and not (concurrency.isdigit() and int(concurrency) >= 1):
        raise CliError(f"--concurrency: expected an integer >= 1 or 'auto', got {concurrency!r}")
    if args.suite not in SUITE_NAMES:
        raise CliError(f"--suite: expected one of {', '.join(SUITE_NAMES)}; got {args.suite!r}")
    version = args.version or DEFAULT_VERSION
    if version not in VERSIONS:
        raise CliError(f"--version: expected one of {', '.join(VERSIONS)}; got {version!r}")
    module, sep, factory = args.pipeline.partition(":")
    if not (module and sep and factory):
        raise CliError(f"--pipeline: expected 'module:factory', got {args.pipeline!r}")
    return ScanConfig(
        suite=args.suite,
        version=version,
        attack=args.attack or DEFAULT_ATTACK,
        pipeline=args.pipeline,
        trials=args.trials,
        user_tasks=args.user_tasks,
        injection_tasks=args.injection_tasks,
        max_threads=64 if concurrency == "auto" else int(concurrency),
    )


def run(args: argparse.Namespace) -> int:
    from rampart.agentdojo import _scan_suite_path
    from rampart.agentdojo._scan_config import ENV_VAR

    config = _check(args)
    report_dir = Path(args.report_dir)
    with tempfile.TemporaryDirectory(prefix="rampart-scan-") as scratch:
        ini = Path(scratch, "pytest.ini")
        # The scan's own pytest configuration: the user's project ini must not add
        # options to (or take the rampart plugin away from) the scan's run.
        ini.write_text("[pytest]\n", encoding="utf-8")
        command = [
            sys.executable,
            "-m",
            "pytest",
            str(_scan_suite_path()),
            "-c",
            str(ini),
            "--rootdir",
            os.getcwd(),
            "--import-mode=importlib",
            "-p",
            "no:cacheprovider",
            "-p",
            "rampart.agentdojo._scan_plugin",
            "--rampart-report-dir",
            str(report_dir),
            "--rampart-concurrency",
            args.concurrency,
        ]
        if args.resume:
            command.append("--rampart-resume")
        if args.workers:
            command += ["-n", args.workers]
        env = dict(os.environ, **{ENV_VAR: config.to_env()})
        status = subprocess.call(command, env=env)
    # pytest's 4 is a usage error (the scan plugin's checks: an unknown task id or
    # attack, a pipeline that does not load): the command's own 2.
    return EXIT_USAGE if status == pytest_usage_error else status
