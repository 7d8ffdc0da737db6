"""Running the test server as a child process (for benchmarks and CLI tests)."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import urllib.request
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Unpack

import attrs

from rampart._checks import check_choice
from rampart.testing.server._options import BROKEN_BODIES, ServerOptions

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rampart.testing.server._serve import ServerSettings

__all__ = ["ServerProcess", "cli_arguments", "server_process"]


def cli_arguments(options: ServerOptions) -> list[str]:
    """The ``python -m rampart.testing.server`` arguments that reproduce ``options``."""
    arguments: list[str] = []
    if options.rate is not None:
        arguments += ["--rate", repr(options.rate)]
    arguments += ["--burst", str(options.burst), "--latency", repr(options.latency)]
    arguments += ["--error-rate", repr(options.error_rate), "--hang-rate", repr(options.hang_rate)]
    for status in options.error_statuses:
        arguments += ["--error-status", str(status)]
    if options.broken_rate:
        arguments += ["--broken-rate", repr(options.broken_rate)]
    if options.broken_bodies != BROKEN_BODIES:
        for kind in options.broken_bodies:
            arguments += ["--broken-body", kind]
    arguments += ["--seed", str(options.seed), "--compliance", repr(options.compliance)]
    if options.secret is not None:
        arguments += ["--secret", options.secret]
    arguments += ["--model", options.model]
    if not options.retry_after_ms:
        arguments.append("--no-retry-after-ms")
    arguments += ["--rate-limit-headers", options.rate_limit_headers]
    arguments += ["--max-conversations", str(options.max_conversations)]
    arguments += ["--max-body-bytes", str(options.max_body_bytes)]
    if options.api_key is not None:
        arguments += ["--api-key", options.api_key]
    if options.echo_credentials:
        arguments.append("--echo-credentials")
    if options.tool_rules:
        rules = [rule.to_dict() for rule in options.tool_rules]
        arguments += ["--tool-rules", json.dumps(rules, separators=(",", ":"))]
    return arguments


@attrs.frozen(kw_only=True)
class ServerProcess:
    """A test server running in a child process."""

    url: str
    """The API root: ``http://127.0.0.1:PORT/v1``."""
    process: subprocess.Popen[str]

    @property
    def root_url(self) -> str:
        return self.url.removesuffix("/v1")

    def statistics(self) -> dict[str, Any]:
        """``GET /stats`` (blocking; call it from a thread inside async code)."""
        return self._stats("GET")

    def reset_statistics(self) -> dict[str, Any]:
        """``POST /stats/reset``: zero the counters, return the fresh snapshot."""
        return self._stats("POST")

    def _stats(self, method: str) -> dict[str, Any]:
        path = "/stats" if method == "GET" else "/stats/reset"
        request = urllib.request.Request(self.root_url + path, method=method, data=None)
        with urllib.request.urlopen(request, timeout=10) as reply:
            decoded: dict[str, Any] = json.loads(reply.read())
        return decoded


@contextmanager
def server_process(
    options: ServerOptions | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    backend: str = "asyncio",
    python: str = sys.executable,
    startup_timeout: float = 30.0,
    **settings: Unpack[ServerSettings],
) -> Iterator[ServerProcess]:
    """Start ``python -m rampart.testing.server`` and yield once it printed its URL.

    Leaving the block sends SIGTERM and waits (killing it after ten seconds). The
    child's stderr is inherited, so its errors show up in your terminal.
    """
    if options is None:
        options = ServerOptions(**settings)
    elif settings:
        raise TypeError(
            "server_process: give either options or ServerOptions fields, "
            f"not both ({sorted(settings)})"
        )
    check_choice("server_process", "backend", backend, ("asyncio", "trio"))
    command = [python, "-m", "rampart.testing.server", "--host", host, "--port", str(port)]
    command += ["--backend", backend, *cli_arguments(options)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    stdout = process.stdout
    lines: queue.Queue[str] = queue.Queue()
    # A plain readline has no timeout, so one short-lived thread reads the first line.
    reader = threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True)
    reader.start()
    try:
        try:
            url = lines.get(timeout=startup_timeout).strip()
        except queue.Empty:
            raise RuntimeError(
                f"server_process: no URL printed within {startup_timeout:g} s"
            ) from None
        if not url.startswith("http://"):
            raise RuntimeError(
                f"server_process: the server exited (code {process.poll()}) before printing its URL"
            )
        yield ServerProcess(url=url, process=process)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=10)
        stdout.close()
