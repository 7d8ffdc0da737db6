"""Serving an ASGI app on loopback with hypercorn, on whichever backend is running.

The listening socket is bound and put in listening state *before* hypercorn starts, so
the URL is known (even for port 0) and a client connecting at once is queued in the
backlog instead of refused. hypercorn is imported here, lazily: the app itself needs
no server library.
"""

from __future__ import annotations

import logging
import os
import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypedDict, Unpack, cast

import anyio
import attrs

from rampart._checks import check_callable, check_int, check_text
from rampart.testing.server._app import ChatCompletionsApp
from rampart.testing.server._options import ServerOptions

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from rampart.testing._surface import InMemorySurface
    from rampart.testing.server._stats import ServerStatistics
    from rampart.testing.server._tool_policy import ToolPolicy, ToolRule
    from rampart.testing.server._wire import ASGIApp

__all__ = ["RunningServer", "ServerSettings", "serve", "serve_asgi"]

_LOGGER = logging.getLogger("rampart.testing.server")
_GRACEFUL_SECONDS = 2.0


class ServerSettings(TypedDict, total=False):
    """``ServerOptions`` fields, accepted as keyword arguments by ``serve``."""

    rate: float | None
    burst: int
    latency: float
    error_rate: float
    hang_rate: float
    broken_rate: float
    broken_bodies: tuple[str, ...]
    error_statuses: tuple[int, ...]
    seed: int
    compliance: float
    secret: str | None
    model: str
    retry_after_ms: bool
    rate_limit_headers: str
    max_conversations: int
    max_body_bytes: int
    api_key: str | None
    echo_credentials: bool
    tool_rules: tuple[ToolRule, ...]


def check_address(host: object, port: object) -> None:
    """``TypeError`` / ``ValueError`` naming ``host`` or ``port`` unless they can be bound."""
    check_text("serve", "host", host)
    check_int("serve", "port", port, minimum=0, maximum=65535)


def _listen(host: str, port: int) -> tuple[int, int]:
    """A listening TCP socket on ``host:port``: ``(file descriptor, bound port)``."""
    check_address(host, port)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # A deep backlog: hundreds of clients connecting at once (a benchmark, a trial
        # group of hundreds) must queue, not be reset when the accept queue overflows.
        sock.listen(4096)
        bound = int(sock.getsockname()[1])
    except BaseException:
        sock.close()
        raise
    return sock.detach(), bound


def _root_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


async def _run_hypercorn(app: ASGIApp, fd: int, stop: anyio.Event) -> None:
    import sniffio
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"fd://{fd}"]
    config.graceful_timeout = _GRACEFUL_SECONDS
    config.accesslog = None
    config.errorlog = _LOGGER
    framework = cast("Any", app)
    if sniffio.current_async_library() == "trio":
        from hypercorn.trio import serve as serve_trio

        await serve_trio(framework, config, shutdown_trigger=stop.wait)
    else:
        from hypercorn.asyncio import serve as serve_asyncio

        await serve_asyncio(framework, config, shutdown_trigger=stop.wait)


@asynccontextmanager
async def serve_asgi(app: ASGIApp, *, host: str = "127.0.0.1", port: int = 0) -> AsyncIterator[str]:
    """Serve ``app`` with hypercorn on ``host:port``; yields the root URL (``http://h:p``).

    Works on asyncio and trio. Leaving the block stops the server gracefully (requests
    still running get up to two seconds) and waits until it has stopped.
    """
    check_callable("serve_asgi", "app", app, expected="an ASGI callable")
    fd, bound = _listen(host, port)
    stop = anyio.Event()
    # An error raised by the caller's block is re-raised after the server has stopped,
    # outside the task group, so it reaches the caller as itself rather than wrapped in
    # an exception group (and the server still shuts down gracefully).
    body_error: Exception | None = None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_run_hypercorn, app, fd, stop)
            fd = -1  # hypercorn owns the socket now
            try:
                yield _root_url(host, bound)
            except Exception as exc:
                body_error = exc
            finally:
                stop.set()
    finally:
        if fd >= 0:
            os.close(fd)
    if body_error is not None:
        raise body_error


@attrs.frozen(kw_only=True)
class RunningServer:
    """A test server started by ``serve``: where it listens and what it has done."""

    url: str
    """The API root to give an adapter: ``http://127.0.0.1:PORT/v1``."""
    root_url: str
    """The server root (``GET {root_url}/stats``)."""
    port: int
    app: ChatCompletionsApp

    @property
    def surface(self) -> InMemorySurface:
        """The inbox the simulated agents read; plant documents here in-process."""
        return self.app.surface

    def statistics(self) -> ServerStatistics:
        return self.app.statistics()

    def reset_statistics(self) -> None:
        self.app.reset_statistics()


@asynccontextmanager
async def serve(
    options: ServerOptions | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    surface: InMemorySurface | None = None,
    tool_policy: ToolPolicy | None = None,
    **settings: Unpack[ServerSettings],
) -> AsyncIterator[RunningServer]:
    """Run the chat-completions test server in this event loop (asyncio or trio).

    Give either ``options`` or ``ServerOptions`` fields as keyword arguments
    (``serve(rate=50, burst=10, latency=0.05)``). Yields a ``RunningServer`` whose
    ``url`` is the API root; the server stops when the block exits (hanging requests
    are released first). ``tool_policy`` scripts the ``sim-tools`` model (in-process
    only: a callable cannot cross to ``server_process``).
    """
    if options is None:
        options = ServerOptions(**settings)
    elif settings:
        raise TypeError(
            f"serve: give either options or ServerOptions fields, not both ({sorted(settings)})"
        )
    app = ChatCompletionsApp(options, surface=surface, tool_policy=tool_policy)
    async with serve_asgi(app, host=host, port=port) as root:
        port_text = root.rsplit(":", 1)[1]
        try:
            yield RunningServer(url=f"{root}/v1", root_url=root, port=int(port_text), app=app)
        finally:
            app.close()
