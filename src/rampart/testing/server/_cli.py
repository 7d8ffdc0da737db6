"""``python -m rampart.testing.server``: the test server from the command line."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import TYPE_CHECKING

import anyio

from rampart._checks import invalid
from rampart.codec import parse_strict_json
from rampart.testing.server._options import BROKEN_BODIES, RATE_LIMIT_HEADER_STYLES, ServerOptions
from rampart.testing.server._pauses import freeze_survivors
from rampart.testing.server._serve import check_address, serve
from rampart.testing.server._tool_policy import ToolRule

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main", "parser"]

_PROGRAM = "python -m rampart.testing.server"


def parser() -> argparse.ArgumentParser:
    """The command-line parser (``--help`` lists every option)."""
    cli = argparse.ArgumentParser(
        prog="python -m rampart.testing.server",
        description=(
            "A rate-limited OpenAI-compatible server (chat completions and the Responses "
            "API) backed by rampart's SimulatedAgent and simulated models. "
            "Prints its API root URL on the first stdout line, then serves until "
            "interrupted (Ctrl-C or SIGTERM)."
        ),
    )
    cli.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    cli.add_argument("--port", type=int, default=0, help="port to bind; 0 picks a free one")
    cli.add_argument("--rate", type=float, default=None, help="requests/s allowed (default: none)")
    cli.add_argument("--burst", type=int, default=1, help="token bucket size (default 1)")
    cli.add_argument("--latency", type=float, default=0.0, help="seconds per answer")
    cli.add_argument("--error-rate", type=float, default=0.0, help="probability of a 5xx")
    cli.add_argument(
        "--error-status",
        type=int,
        action="append",
        default=None,
        help="status used for injected errors; repeat for several (default 500 and 503)",
    )
    cli.add_argument("--hang-rate", type=float, default=0.0, help="probability of no answer")
    cli.add_argument(
        "--broken-rate",
        type=float,
        default=0.0,
        help="probability that an answer is sent as a broken 200 body",
    )
    cli.add_argument(
        "--broken-body",
        action="append",
        default=None,
        help=f"broken body to draw from; repeat for several ({', '.join(BROKEN_BODIES)}; "
        "default all)",
    )
    cli.add_argument("--seed", type=int, default=0, help="seed for answers and faults")
    cli.add_argument("--compliance", type=float, default=0.5, help="probability of obeying")
    cli.add_argument("--secret", default=None, help="the secret the agent guards")
    cli.add_argument("--model", default="simulated-agent", help="model name to report")
    cli.add_argument(
        "--no-retry-after-ms",
        dest="retry_after_ms",
        action="store_false",
        help="send only Retry-After (whole seconds) with a 429",
    )
    cli.add_argument(
        "--rate-limit-headers",
        choices=RATE_LIMIT_HEADER_STYLES,
        default="none",
        help="state the bucket on every answer: OpenAI x-ratelimit-* headers, the IETF "
        "draft's RateLimit-Policy/RateLimit, all of them, or none (default)",
    )
    cli.add_argument("--max-conversations", type=int, default=10_000)
    cli.add_argument("--max-body-bytes", type=int, default=4 * 1024 * 1024)
    cli.add_argument(
        "--api-key",
        default=None,
        help="require this key (Authorization: Bearer or api-key); for testing clients only",
    )
    cli.add_argument(
        "--echo-credentials",
        action="store_true",
        help="repeat the request's credential headers in every error answer (to test redaction)",
    )
    cli.add_argument(
        "--tool-rules",
        default=None,
        metavar="JSON",
        help='the sim-tools model\'s scripted rules, a JSON array of {"when": PHRASE, '
        '"tool": NAME, "arguments": {...}} or {"when": PHRASE, "text": ANSWER}',
    )
    cli.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio")
    return cli


def _tool_rules(text: str | None) -> tuple[ToolRule, ...]:
    """``--tool-rules``: a JSON array of rule objects, read by the one JSON policy."""
    if text is None:
        return ()
    expected = 'a JSON array of {"when", "tool", "arguments"} or {"when", "text"} objects'
    try:
        rules = parse_strict_json(data=text)
    except ValueError:
        rules = None
    if not isinstance(rules, list):
        raise invalid(_PROGRAM, "--tool-rules", expected, text, error=ValueError)
    parsed = []
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict):
            raise invalid(_PROGRAM, f"--tool-rules[{index}]", "an object", rule, error=ValueError)
        try:
            parsed.append(ToolRule(**rule))
        except (TypeError, ValueError) as error:
            raise ValueError(f"--tool-rules[{index}]: {error}") from None
    return tuple(parsed)


def _options(arguments: argparse.Namespace) -> ServerOptions:
    statuses = tuple(arguments.error_status) if arguments.error_status else (500, 503)
    broken = tuple(arguments.broken_body) if arguments.broken_body else BROKEN_BODIES
    return ServerOptions(
        rate=arguments.rate,
        burst=arguments.burst,
        latency=arguments.latency,
        error_rate=arguments.error_rate,
        hang_rate=arguments.hang_rate,
        broken_rate=arguments.broken_rate,
        broken_bodies=broken,
        error_statuses=statuses,
        seed=arguments.seed,
        compliance=arguments.compliance,
        secret=arguments.secret,
        model=arguments.model,
        retry_after_ms=arguments.retry_after_ms,
        rate_limit_headers=arguments.rate_limit_headers,
        max_conversations=arguments.max_conversations,
        max_body_bytes=arguments.max_body_bytes,
        api_key=arguments.api_key,
        echo_credentials=arguments.echo_credentials,
        tool_rules=_tool_rules(arguments.tool_rules),
    )


async def _serve_until_signalled(options: ServerOptions, host: str, port: int) -> None:
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with serve(options, host=host, port=port) as server:
            print(server.url, flush=True)
            print(
                f"rampart test server on {server.url} (rate={options.rate}, "
                f"burst={options.burst}, latency={options.latency}); stats at "
                f"{server.root_url}/stats; Ctrl-C to stop",
                file=sys.stderr,
                flush=True,
            )
            async for _ in signals:
                break


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv``, serve until SIGINT/SIGTERM, return the exit status."""
    cli = parser()
    arguments = cli.parse_args(argv)
    try:
        options = _options(arguments)
        check_address(arguments.host, arguments.port)
    except (TypeError, ValueError) as exc:
        cli.error(str(exc))
    freeze_survivors()  # this process is the server's own: keep its pauses short
    try:
        anyio.run(
            _serve_until_signalled,
            options,
            arguments.host,
            arguments.port,
            backend=arguments.backend,
        )
    except OSError as exc:
        print(f"rampart test server: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0
