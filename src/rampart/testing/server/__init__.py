"""A rate-limited chat-completions server on loopback, backed by ``SimulatedAgent``.

Use ``serve(...)`` inside async tests (asyncio or trio), ``server_process(...)`` from
benchmarks, or ``python -m rampart.testing.server`` from a shell. The server needs
hypercorn, imported only when a server starts. See ``docs/test-server.md``.
"""

from rampart.testing.server._app import ChatCompletionsApp
from rampart.testing.server._bucket import TokenBucket
from rampart.testing.server._options import BROKEN_BODIES, ServerOptions
from rampart.testing.server._process import ServerProcess, cli_arguments, server_process
from rampart.testing.server._serve import RunningServer, ServerSettings, serve, serve_asgi
from rampart.testing.server._stats import ServerStatistics

__all__ = [
    "BROKEN_BODIES",
    "ChatCompletionsApp",
    "RunningServer",
    "ServerOptions",
    "ServerProcess",
    "ServerSettings",
    "ServerStatistics",
    "TokenBucket",
    "cli_arguments",
    "serve",
    "serve_asgi",
    "server_process",
]
