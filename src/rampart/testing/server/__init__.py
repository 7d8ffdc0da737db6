"""A rate-limited OpenAI-compatible server on loopback, backed by ``SimulatedAgent``.

It speaks chat completions and the Responses API; behind them sit the simulated agent
and simulated models, among them ``sim-tools``, which uses the tools a request
declares (scriptable with ``ToolRule`` data or a ``ToolPolicy`` callable). Use
``serve(...)`` inside async tests (asyncio or trio), ``server_process(...)`` from
benchmarks, or ``python -m rampart.testing.server`` from a shell. The server needs
hypercorn, imported only when a server starts. See ``docs/test-server.md``.
"""

from rampart.testing.server._app import ChatCompletionsApp
from rampart.testing.server._bucket import TokenBucket
from rampart.testing.server._options import BROKEN_BODIES, ServerOptions
from rampart.testing.server._process import ServerProcess, cli_arguments, server_process
from rampart.testing.server._serve import RunningServer, ServerSettings, serve, serve_asgi
from rampart.testing.server._stats import ServerStatistics
from rampart.testing.server._tool_policy import (
    DeclaredTool,
    ToolConversation,
    ToolMessage,
    ToolPolicy,
    ToolRule,
)

__all__ = [
    "BROKEN_BODIES",
    "ChatCompletionsApp",
    "DeclaredTool",
    "RunningServer",
    "ServerOptions",
    "ServerProcess",
    "ServerSettings",
    "ServerStatistics",
    "TokenBucket",
    "ToolConversation",
    "ToolMessage",
    "ToolPolicy",
    "ToolRule",
    "cli_arguments",
    "serve",
    "serve_asgi",
    "server_process",
]
