from __future__ import annotations

import gc
import json
import subprocess
import sys
import urllib.request

import anyio
import pytest

from rampart.testing.server import ServerOptions, serve, server_process
from rampart.testing.server._pauses import _around_full_collection

COMPLETION = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]}).encode()


def _post(url: str) -> dict[str, object]:
    request = urllib.request.Request(
        url + "/chat/completions", data=COMPLETION, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        decoded: dict[str, object] = json.loads(reply.read())
    return decoded


class TestCommandLine:
    def test_prints_url_serves_and_stops_on_sigterm(self) -> None:
        """The CLI prints its URL first, answers a request, and exits 0 on SIGTERM."""
        command = [sys.executable, "-m", "rampart.testing.server", "--port", "0"]
        command += ["--rate", "50", "--burst", "10", "--latency", "0.05"]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        try:
            assert process.stdout is not None
            url = process.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            assert url.endswith("/v1")
            reply = _post(url)
            assert reply["object"] == "chat.completion"
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=20)
        assert process.returncode == 0
        assert "rate=50.0, burst=10" in stderr

    def test_bad_option_is_a_usage_error(self) -> None:
        """An invalid value exits with status 2 and names the option."""
        result = subprocess.run(
            [sys.executable, "-m", "rampart.testing.server", "--burst", "0"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 2
        assert "ServerOptions: burst must be >= 1, got 0" in result.stderr
        assert result.stdout == ""


class TestServerProcess:
    @pytest.mark.parametrize("backend", ["asyncio", "trio"])
    def test_statistics_over_http(self, backend: str) -> None:
        """server_process starts the CLI, and its statistics come from GET /stats."""
        with server_process(rate=0.01, burst=1, backend=backend) as server:
            _post(server.url)
            with pytest.raises(urllib.error.HTTPError) as refused:
                _post(server.url)
            refused.value.close()
            statistics = server.statistics()
            reset = server.reset_statistics()
            process = server.process
        assert refused.value.code == 429
        assert (statistics["served"], statistics["rate_limited"]) == (1, 1)
        assert reset["requests"] == 0
        assert process.returncode == 0

    def test_bad_arguments(self) -> None:
        """Options and fields cannot be mixed, and the backend is checked."""
        with pytest.raises(TypeError, match="not both"), server_process(ServerOptions(), rate=1.0):
            pass
        with pytest.raises(ValueError, match="backend"), server_process(backend="curio"):
            pass


class TestShortPauses:
    def test_the_server_process_freezes_what_survives_a_full_collection(self) -> None:
        """``main`` (the server's own process) installs ``freeze_survivors`` once, and
        after a full collection the survivors are frozen, so the next full collection
        does not walk the conversations the server remembers."""
        code = (
            "import gc, sys\n"
            "import rampart.testing.server._cli as cli\n"
            "from rampart.testing.server._pauses import freeze_survivors,"
            " _around_full_collection\n"
            "def fake_run(*args, **kwargs):\n"
            "    assert gc.get_freeze_count() == 0\n"
            "    freeze_survivors()\n"
            "    gc.collect(1)\n"
            "    young = gc.get_freeze_count()\n"
            "    gc.collect()\n"
            "    print(gc.callbacks.count(_around_full_collection), young,"
            " gc.get_freeze_count() > 0)\n"
            "cli.anyio.run = fake_run\n"
            "sys.exit(cli.main(['--port', '0']))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["1", "0", "True"]

    def test_dead_frozen_cycles_are_freed_once_the_frozen_set_doubles(self) -> None:
        """A cycle frozen while alive (a connection's objects) stays when it dies, but
        only until the frozen set has doubled since the last full walk: then the next
        full collection walks everything and frees it, so memory stays bounded."""
        code = (
            "import gc, weakref\n"
            "from rampart.testing.server._pauses import freeze_survivors\n"
            "class Node: pass\n"
            "def cycles(count):\n"
            "    nodes = [Node() for _ in range(count)]\n"
            "    for node in nodes: node.me = node\n"
            "    return nodes\n"
            "freeze_survivors()\n"
            "gc.collect()\n"
            "base = gc.get_freeze_count()\n"
            "few = cycles(base // 8)\n"
            "gc.collect()\n"
            "probe = weakref.ref(few[0])\n"
            "del few\n"
            "gc.collect()\n"
            "pinned = probe() is not None\n"
            "many = cycles(base)\n"
            "gc.collect()\n"
            "del many\n"
            "gc.collect()\n"
            "print(pinned, probe() is None, gc.get_freeze_count() < 1.5 * base)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["True", "True", "True"]

    def test_serving_inside_a_process_leaves_its_collector_alone(self) -> None:
        """``serve(...)`` in someone else's process (a test) installs nothing."""

        async def main() -> None:
            async with serve(rate=50, burst=10, latency=0.0) as server:
                await anyio.to_thread.run_sync(_post, server.url)

        anyio.run(main)
        assert _around_full_collection not in gc.callbacks
