"""Live progress of trial groups, through real pytest runs (plain and live, xdist, -q)."""

from __future__ import annotations

import re

import pytest

from tests.pytest_plugin.conftest import NO_ASYNCIO, write_ini

# 12 clones, 2 at a time, 60 ms each: about 0.4 s, several 0.1 s snapshots.
SLOW_GROUP = """
import anyio
import pytest
from rampart import Result, SafetyStatus, record_result

@pytest.mark.trial(n=12, threshold=0.5, concurrency=2)
async def test_slow(rampart_trial):
    await anyio.sleep(0.06)
    status = SafetyStatus.UNDETERMINED if rampart_trial.index == 0 else SafetyStatus.SAFE
    record_result(Result(status=status, summary="x"))

def test_after():
    pass
"""


def _dead_port() -> int:
    """A loopback port nothing listens on."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PLAIN = ("--rampart-progress=plain", "-o", "rampart_progress_interval=0")
LINE = re.compile(r"rampart test_slow(\[\w+\])?: (\d+)/12 \| (\d+) safe, 0 unsafe, (\d+) undet")


def _progress(text: str) -> list[tuple[int, int, int]]:
    """(done, safe, undetermined) of each progress line."""
    return [(int(m[2]), int(m[3]), int(m[4])) for m in LINE.finditer(text)]


class TestPlain:
    def test_lines_while_the_group_runs_and_a_final_one(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(SLOW_GROUP)
        result = pytester.runpytest(*NO_ASYNCIO, *PLAIN)
        result.assert_outcomes(passed=2)
        text = result.stdout.str()
        seen = _progress(text)
        assert len(seen) >= 3
        done = [d for d, _, _ in seen]
        assert done == sorted(done)
        assert 0 < done[0] < 12
        assert seen[-1] == (12, 11, 1)
        last = [line for line in text.splitlines() if LINE.search(line)][-1]
        assert "| done in " in last
        # Progress goes to the terminal, not into the test's captured output, and the
        # outcome letters still follow the file name.
        assert "Captured stdout" not in text
        result.stdout.fnmatch_lines(["test_lines_while*.py ..*"])

    def test_quiet_and_off_print_nothing(self, pytester: pytest.Pytester) -> None:
        """-q turns the automatic choice off; ``off`` turns it off."""
        write_ini(pytester)
        pytester.makepyfile(SLOW_GROUP)
        interval = ("-o", "rampart_progress_interval=0")
        for args in (("-q", "--rampart-progress=auto"), ("--rampart-progress=off",)):
            result = pytester.runpytest(*NO_ASYNCIO, *interval, *args)
            result.assert_outcomes(passed=2)
            assert _progress(result.stdout.str()) == []

    def test_plain_by_name_is_honoured_under_quiet(self, pytester: pytest.Pytester) -> None:
        """``--rampart-progress=plain`` asked for by name prints its lines under -q too."""
        write_ini(pytester)
        pytester.makepyfile(SLOW_GROUP)
        result = pytester.runpytest(*NO_ASYNCIO, *PLAIN, "-q")
        result.assert_outcomes(passed=2)
        assert _progress(result.stdout.str()) != []

    def test_default_interval_keeps_a_short_group_silent(self, pytester: pytest.Pytester) -> None:
        """Plain lines come every 5 s by default: a sub-second group prints none."""
        write_ini(pytester)
        pytester.makepyfile(SLOW_GROUP)
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-progress=auto")
        result.assert_outcomes(passed=2)
        assert _progress(result.stdout.str()) == []

    def test_on_trio(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makeconftest(
            """
            import pytest

            @pytest.fixture(params=["asyncio", "trio"])
            def anyio_backend(request):
                return request.param
            """
        )
        pytester.makepyfile(SLOW_GROUP)
        result = pytester.runpytest(*NO_ASYNCIO, *PLAIN)
        result.assert_outcomes(passed=3)
        text = result.stdout.str()
        for backend in ("asyncio", "trio"):
            assert f"rampart test_slow[{backend}]: 12/12 | 11 safe, 0 unsafe, 1 undet" in text


class TestLive:
    def test_one_line_redrawn_in_place(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(SLOW_GROUP)
        result = pytester.runpytest(*NO_ASYNCIO, "--rampart-progress=live")
        result.assert_outcomes(passed=2)
        text = result.stdout.str()  # (pytester splits lines at the "\r" of each redraw)
        assert text.count("\x1b[2Krampart test_sl") >= 3  # erase the line, draw it again
        assert "\x1b[2Krampart test_slow: 12/12 | 11 safe, 0 unsafe, 1 undet" in text
        result.stdout.fnmatch_lines(["test_one_line*.py ..*"])


class TestDistributed:
    def test_controller_shows_the_workers_groups(self, pytester: pytest.Pytester) -> None:
        write_ini(pytester)
        pytester.makepyfile(SLOW_GROUP)
        result = pytester.runpytest_subprocess(*NO_ASYNCIO, *PLAIN, "-n", "2")
        result.assert_outcomes(passed=2)
        seen = _progress(result.stdout.str())
        assert len(seen) >= 2
        assert seen[-1] == (12, 11, 1)


class TestOptions:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ("--rampart-progress=loud",),
                "--rampart-progress must be one of auto, live, plain, off",
            ),
            (("-o", "rampart_progress_interval=-1"), "rampart_progress_interval must be a number"),
        ],
    )
    def test_bad_values_are_usage_errors(
        self, pytester: pytest.Pytester, args: tuple[str, ...], message: str
    ) -> None:
        write_ini(pytester)
        pytester.makepyfile("def test_x():\n    pass\n")
        result = pytester.runpytest(*NO_ASYNCIO, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"*{message}*"])


# An agent endpoint that refuses every connection (a port nothing listens on), as a
# user's down agent does.
DOWN_AGENT = """
import pytest
from rampart import Attacks
from rampart.adapters import ChatCompletionsAdapter
from rampart.evaluators import ToolCalled
from rampart.limits import limit

@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param

# A port per backend: the asyncio run would otherwise leave the endpoint cut off
# (unreachable after 5 refusals) before the trio run starts retrying.
PORTS = {"asyncio": {port}, "trio": {other_port}}

@pytest.mark.trial(n=2, threshold=0.5, concurrency=2)
async def test_down(rampart_trial, anyio_backend):
    url = f"http://127.0.0.1:{PORTS[anyio_backend]}/v1"
    async with ChatCompletionsAdapter(base_url=url, model="m") as down:
        agent = limit(down, max_retries=3, name="down-agent")
        await Attacks.xpia(trigger="hi", evaluator=ToolCalled("send_email")).execute_async(
            adapter=agent
        )
"""


class TestRetrying:
    def test_a_down_agent_behind_limit_says_it_is_retrying(self, pytester: pytest.Pytester) -> None:
        """The clones of a group whose agent refuses connections back off and retry:
        the progress line says why, on asyncio and trio, before the group ends (in
        ERROR)."""
        write_ini(pytester)
        port = other = _dead_port()
        while other == port:
            other = _dead_port()
        pytester.makepyfile(
            DOWN_AGENT.replace("{port}", str(port)).replace("{other_port}", str(other))
        )
        result = pytester.runpytest(*NO_ASYNCIO, *PLAIN)
        text = result.stdout.str()
        for backend in ("asyncio", "trio"):
            # Before the group's last line ("done in"): an unreachable endpoint is cut off
            # after 5 refusals, so a clone may end before the first line is drawn.
            lines = [
                line
                for line in text.splitlines()
                if f"test_down[{backend}]:" in line and "done in" not in line
            ]
            # The reason, not the request's URL, follows the limiter's name.
            assert any(
                "| down-agent: retrying after InfrastructureError: connection failed (" in line
                for line in lines
            ), text
