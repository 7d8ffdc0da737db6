"""``rampart rescore TRACE...``: re-judge saved trace records with another evaluator.

The records' conversations are judged again by the new evaluator
(``rampart.llm.rescore_records``: the agent is never called); the new records go to a
new JSONL file and a before/after summary is printed. The evaluator is named one of
two ways:

* ``--evaluator MODULE:ATTR`` (or ``path/to/file.py:ATTR``) imports a user evaluator:
  an evaluator instance, or a callable taking no arguments that returns one (a class,
  a factory function);
* ``--judge --objective TEXT`` builds an ``LLMJudge`` whose model comes from
  ``--model`` / ``--endpoint`` / ``--deployment`` or the ``RAMPART_JUDGE_*``
  environment variables; its api key is read from an environment variable only
  (``--api-key-env``, default ``RAMPART_JUDGE_API_KEY``), never from the command line,
  where other users of the machine could read it.

Only JSONL traces can be re-judged: a JSON report leaves out attachments and
injections, so a judge would see less than the agent did.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart.cli import _inputs, _table
from rampart.cli._errors import EXIT_OK, CliError

if TYPE_CHECKING:
    from rampart.codec import ResultRecord
    from rampart.core.evaluator import Evaluator
    from rampart.llm import LLMClient

__all__ = ["JUDGE_ENV", "load_evaluator", "register", "run", "selected"]

JUDGE_ENV = {
    "model": "RAMPART_JUDGE_MODEL",
    "endpoint": "RAMPART_JUDGE_ENDPOINT",
    "deployment": "RAMPART_JUDGE_DEPLOYMENT",
}
_API_KEY_ENV = "RAMPART_JUDGE_API_KEY"
_SHOWN = 20  # changed verdicts listed in the table; --json has all

_DESCRIPTION = """\
Re-judge saved rampart.trace.v2 records (JSONL trace files) with a new evaluator,
without calling the agent again, and write the new records to a new JSONL file.
Records that ended in ERROR or have no turns are kept unchanged: the agent was not
fully observed, so no verdict can be derived from them.
"""

_EPILOG = """\
examples:
  rampart rescore .report/traces.jsonl --evaluator my_checks:strict_exfil
  rampart rescore .report/traces.jsonl --evaluator my_checks:strict_exfil --strategy xpia
  RAMPART_JUDGE_ENDPOINT=https://api.openai.com/v1 RAMPART_JUDGE_API_KEY=... \\
    rampart rescore .report/traces.jsonl --judge --model gpt-4o-mini \\
      --objective 'The agent e-mailed the password to an outside address.'

environment (for --judge): RAMPART_JUDGE_MODEL, RAMPART_JUDGE_ENDPOINT,
RAMPART_JUDGE_DEPLOYMENT, and the api key in RAMPART_JUDGE_API_KEY (or the variable
--api-key-env names). RAMPART_LLM_CACHE turns the response cache on, as in a run.
"""


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "rescore",
        help="re-judge saved trace records with another evaluator (the agent is not called)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("traces", nargs="+", metavar="TRACE", help="JSONL trace files")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--evaluator",
        metavar="MODULE:ATTR",
        help="a user evaluator: an instance, or a no-argument callable returning one "
        "(MODULE may also be a path to a .py file)",
    )
    which.add_argument(
        "--judge", action="store_true", help="an LLMJudge (needs --objective and a model)"
    )
    judge = parser.add_argument_group("LLM judge (with --judge)")
    judge.add_argument("--objective", help="what the judge decides happened (DETECTED)")
    judge.add_argument("--model", help=f"the judge model (default: ${JUDGE_ENV['model']})")
    judge.add_argument(
        "--endpoint", help=f"an OpenAI-compatible or Azure URL (default: ${JUDGE_ENV['endpoint']})"
    )
    judge.add_argument(
        "--deployment", help=f"an Azure deployment (default: ${JUDGE_ENV['deployment']})"
    )
    judge.add_argument(
        "--api-key-env",
        default=_API_KEY_ENV,
        metavar="VAR",
        help=f"the environment variable holding the api key (default: {_API_KEY_ENV})",
    )
    judge.add_argument("--temperature", type=float, help="generation temperature (e.g. 0)")
    judge.add_argument("--seed", type=int, help="generation seed")
    judge.add_argument(
        "--scope",
        choices=("full", "current_turn"),
        default="full",
        help="how much of the transcript the judge reads (default: full)",
    )
    judge.add_argument("--rate", type=float, help="judge requests per second (default: no limit)")
    judge.add_argument(
        "--max-retries",
        type=int,
        default=6,
        metavar="N",
        help="retries of a failed judge request (429, 5xx, connection) (default: 6)",
    )
    judge.add_argument("--cache", metavar="DIR", help="cache judge replies in DIR")
    parser.add_argument(
        "--polarity",
        choices=("attack", "probe"),
        help="what DETECTED means for records whose strategy is not xpia or probe "
        "(attack: UNSAFE; probe: SAFE)",
    )
    parser.add_argument(
        "-k",
        dest="keywords",
        action="append",
        default=[],
        metavar="TEXT",
        help="re-judge only records whose test id contains TEXT (case-insensitive; "
        "repeatable: any of them); the others are written unchanged",
    )
    parser.add_argument(
        "--strategy",
        dest="strategies",
        action="append",
        default=[],
        metavar="NAME",
        help="re-judge only records of this strategy (xpia, probe, ...; repeatable); "
        "the others are written unchanged",
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="records judged at once (default: 8)"
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        help="the new JSONL file, or a directory for rescored_<UTC time>.jsonl (default: "
        "the first trace's directory); a taken name gets a random suffix, never replaced",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.set_defaults(run=run)


# --------------------------------------------------------------------------- evaluator


def _import_target(module_name: str) -> Any:
    if module_name.endswith(".py") or os.sep in module_name or "/" in module_name:
        path = Path(module_name)
        if not path.is_file():
            raise CliError(f"--evaluator: no such file {str(path)!r}")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
            raise CliError(f"--evaluator: cannot load {str(path)!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: the current directory
    return importlib.import_module(module_name)


def load_evaluator(spec: str) -> Evaluator:
    """The evaluator ``MODULE:ATTR`` names (see the module); :class:`CliError` if none."""
    from rampart.core._internal import check_evaluator

    module_name, colon, attribute = spec.rpartition(":")
    if not colon or not module_name or not attribute:
        raise CliError(f"--evaluator must be MODULE:ATTR (e.g. my_checks:judge), got {spec!r}")
    try:
        module = _import_target(module_name)
    except CliError:
        raise
    except Exception as error:  # the user's module failed to import
        raise CliError(
            f"--evaluator: importing {module_name!r} failed: {type(error).__name__}: {error}"
        ) from error
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise CliError(f"--evaluator: {module_name!r} has no attribute {attribute!r}") from None
    candidate = target
    if isinstance(target, type) or (callable(target) and not hasattr(target, "evaluate_async")):
        try:
            candidate = target()
        except Exception as error:
            raise CliError(
                f"--evaluator: calling {spec} failed: {type(error).__name__}: {error}"
            ) from error
    try:
        return check_evaluator("rampart rescore", "--evaluator", candidate)
    except TypeError as error:
        raise CliError(str(error)) from None


def _judge(args: argparse.Namespace) -> tuple[Evaluator, LLMClient]:
    from rampart.core.llm import LLMConfig
    from rampart.evaluators import LLMJudge, TranscriptScope
    from rampart.llm import LLMClient

    if not args.objective:
        raise CliError("--judge needs --objective TEXT: what the judge decides happened")
    settings = {
        name: getattr(args, name) or os.environ.get(variable, "").strip() or None
        for name, variable in JUDGE_ENV.items()
    }
    for name in ("model", "endpoint"):
        if not settings[name]:
            raise CliError(f"--judge needs --{name} or ${JUDGE_ENV[name]}")
    api_key = os.environ.get(args.api_key_env, "").strip() or None
    metadata: dict[str, Any] = {}
    if args.temperature is not None:
        metadata["temperature"] = args.temperature
    if args.seed is not None:
        metadata["seed"] = args.seed
    try:
        config = LLMConfig(
            model=str(settings["model"]),
            endpoint=str(settings["endpoint"]),
            api_key=api_key,
            deployment=settings["deployment"],
            metadata=metadata,
        )
        client = LLMClient(
            config,
            max_concurrency=args.concurrency,
            rate=args.rate,
            max_retries=args.max_retries,
            cache=args.cache if args.cache else None,
        )
        judge = LLMJudge(objective=args.objective, llm=client, scope=TranscriptScope(args.scope))
    except (TypeError, ValueError) as error:  # messages never show the api key
        raise CliError(str(error)) from None
    return judge, client


# --------------------------------------------------------------------------- running


def _read_records(names: list[str]) -> tuple[list[ResultRecord], Path]:
    records: list[ResultRecord] = []
    first: Path | None = None
    for name in names:
        path, text = _inputs.read_text(name)
        if _inputs.sniff(path, text) != "trace":
            raise CliError(
                f"{path}: is a JSON report; rescore needs a JSONL trace file (the report "
                "leaves out attachments and injections, so a judge would see less than "
                "the agent did)"
            )
        records.extend(_inputs.load_run(path).records)
        first = first or path
    assert first is not None
    return records, first


def _output_path(args: argparse.Namespace, first: Path) -> tuple[Path, str, str]:
    from rampart.reporting._internal import utc_timestamp

    default = f"rescored_{utc_timestamp()}"
    if args.output is None:
        return first.parent, default, ".jsonl"
    target = Path(args.output)
    if target.is_dir() or args.output.endswith(("/", os.sep)):
        return target, default, ".jsonl"
    return target.parent, target.stem, target.suffix or ".jsonl"


def selected(record: ResultRecord, keywords: list[str], strategies: list[str]) -> bool:
    """Whether ``-k`` and ``--strategy`` select ``record`` (each filter given must match)."""
    if keywords:
        nodeid = (record.pytest_nodeid or "").casefold()
        if not any(keyword.casefold() in nodeid for keyword in keywords):
            return False
    return not strategies or record.result.strategy in strategies


def _jsonl(records: list[ResultRecord]) -> bytes:
    from rampart.codec._internal import jsonl_records

    return jsonl_records(records)


def _summary(
    before: list[ResultRecord], after: list[ResultRecord], evaluator: object, output: Path
) -> dict[str, Any]:
    from rampart._text import safe_str

    statuses = ("safe", "unsafe", "undetermined", "error")
    counts = {
        "before": dict.fromkeys(statuses, 0),
        "after": dict.fromkeys(statuses, 0),
    }
    changed = []
    kept = 0
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        counts["before"][old.result.status.value] += 1
        counts["after"][new.result.status.value] += 1
        if new.result is old.result:
            kept += 1
        if old.result.status is not new.result.status:
            changed.append(
                {
                    "record": index,
                    "pytest_nodeid": old.pytest_nodeid,
                    "before": old.result.status.value,
                    "after": new.result.status.value,
                    "summary": new.result.summary,
                }
            )
    described = safe_str(evaluator)
    return {
        "evaluator": described if len(described) <= 300 else described[:300] + "...",
        "records": len(before),
        "not_rejudged": kept,
        "counts": counts,
        "changed": changed,
        "output": str(output),
    }


def _print_summary(summary: dict[str, Any]) -> None:
    print(f"re-judged {summary['records']} records with {_table.cell(summary['evaluator'])}")
    rows = [
        [status.upper(), summary["counts"]["before"][status], summary["counts"]["after"][status]]
        for status in ("safe", "unsafe", "undetermined", "error")
    ]
    for line in _table.format_table(["status", "before", "after"], rows, right=(1, 2)):
        print(f"  {line}")
    if summary.get("not_selected"):
        print(f"{summary['not_selected']} not selected by -k / --strategy, kept as they were")
    if summary["not_rejudged"]:
        print(
            f"{summary['not_rejudged']} kept as they were (ERROR or no turns: the agent "
            "was not fully observed)"
        )
    changed = summary["changed"]
    if changed:
        print(f"{len(changed)} verdict{'s' * (len(changed) != 1)} changed:")
        rows = [
            [item["pytest_nodeid"] or f"record {item['record']}", item["before"], item["after"]]
            for item in changed[:_SHOWN]
        ]
        for line in _table.format_table(["test", "before", "after"], rows):
            print(f"  {line}")
        if len(changed) > _SHOWN:
            print(f"  ... and {len(changed) - _SHOWN} more (--json lists every one)")
    else:
        print("no verdict changed")
    judge = summary.get("judge")
    if judge is not None:
        print(
            f"judge: {judge['calls']} calls, {judge['requests']} requests, "
            f"{judge['cache_hits']} cache hits, {judge['failures']} failures, "
            f"{judge['prompt_tokens'] + judge['completion_tokens']} tokens"
        )
    print(f"wrote {summary['output']}")


def run(args: argparse.Namespace) -> int:
    import anyio

    from rampart.llm import rescore_records

    if args.concurrency < 1:
        raise CliError(f"--concurrency must be an integer >= 1, got {args.concurrency}")
    records, first = _read_records(args.traces)
    directory, stem, suffix = _output_path(args, first)
    if args.output is not None and not directory.is_dir():
        # Checked before any judging; a folder the user named is never created for them.
        raise CliError(
            f"--output: the folder {directory} does not exist (it is not created for you)"
        )
    client = None
    if args.judge:
        evaluator, client = _judge(args)
    else:
        evaluator = load_evaluator(args.evaluator)

    chosen = [
        index
        for index, record in enumerate(records)
        if selected(record, args.keywords, args.strategies)
    ]
    if not chosen:
        raise CliError("-k / --strategy: no record matches; nothing to re-judge")

    async def rescore() -> list[ResultRecord]:
        return await rescore_records(
            [records[index] for index in chosen],
            evaluator=evaluator,
            polarity=args.polarity,
            concurrency=args.concurrency,
        )

    try:
        judged = anyio.run(rescore)
    except ValueError as error:  # a strategy without a known polarity
        raise CliError(str(error)) from None
    rescored = list(records)  # records not selected are written as they were
    for index, record in zip(chosen, judged, strict=True):
        rescored[index] = record
    try:
        output = _table.write_new(directory, stem=stem, suffix=suffix, data=_jsonl(rescored))
    except OSError as error:
        raise CliError(f"cannot write the new trace file in {directory}: {error}") from None
    summary = _summary(records, rescored, evaluator, output)
    summary["not_selected"] = len(records) - len(chosen)
    summary["not_rejudged"] -= summary["not_selected"]
    if client is not None:
        stats = client.statistics()
        summary["judge"] = {
            "calls": stats.calls,
            "requests": stats.requests,
            "cache_hits": stats.cache_hits,
            "failures": stats.failures,
            "prompt_tokens": stats.prompt_tokens,
            "completion_tokens": stats.completion_tokens,
        }
    if args.json:
        print(_table.dump_json(summary), end="")
    else:
        _print_summary(summary)
    return EXIT_OK
