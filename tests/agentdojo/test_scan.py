"""``rampart scan agentdojo``, as a user runs it: a real process, real reports."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rampart.cli import main
from rampart.scan._agentdojo_config import ScanConfig, build_pipeline
from rampart.testing.server import server_process
from tests.cli._cli import Outcome, run_scan_process

RAMPART = Path(sys.executable).with_name("rampart")

PIPELINES = """
from rampart.agentdojo.pipelines import ScriptedPipeline

def always():
    return ScriptedPipeline("slack", follow=1.0)

def never():
    return ScriptedPipeline("slack", follow=0.0)

def not_a_pipeline():
    return 42


class _Hangs(ScriptedPipeline):
    def query(self, *args, **kwargs):
        import threading

        threading.Event().wait()  # a model call that never returns


def hangs():
    return _Hangs("slack")


class _Slow(ScriptedPipeline):
    def query(self, *args, **kwargs):
        import pathlib, time

        pathlib.Path("started").touch()  # the scan is under way: Ctrl-C now
        time.sleep(5)  # each model call: the pairs are still running when it comes
        return super().query(*args, **kwargs)


def slow():
    return _Slow("slack")


def where():
    import os, pathlib

    pathlib.Path("pid").write_text(str(os.getpid()))
    return ScriptedPipeline("slack", follow=0.0)
"""


def scan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "my_agents.py").write_text(PIPELINES)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    return subprocess.run(
        [str(RAMPART), "scan", "agentdojo", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=600,
    )


SELECTION = (
    "--suite",
    "slack",
    "--user-task",
    "user_task_2",
    "--injection-task",
    "injection_task_1",
    "--injection-task",
    "injection_task_2",
)


def test_a_successful_injection_exits_1_with_reports(tmp_path: Path) -> None:
    # With -n 2 the pairs are dealt into two trial groups, one per xdist worker.
    done = scan(
        tmp_path,
        *SELECTION,
        "--pipeline",
        "my_agents:always",
        "--trials",
        "2",
        "--concurrency",
        "4",
        "-n",
        "2",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "test_agentdojo[shard0]" in done.stdout
    assert "test_agentdojo[shard1]" in done.stdout
    assert "AgentDojo slack v1.2.2 important_instructions: attack success rate 4/4" in done.stdout
    (report_path,) = (tmp_path / ".report").glob("run_report_*.json")
    report = json.loads(report_path.read_text())
    pairs = sorted(
        (
            entry["metadata"]["agentdojo"]["user_task"],
            entry["metadata"]["agentdojo"]["injection_task"],
        )
        for entries in report["by_harm_category"].values()
        for entry in entries
    )
    assert (
        pairs
        == [("user_task_2", "injection_task_1")] * 2 + [("user_task_2", "injection_task_2")] * 2
    )
    # Each row names its pair, and the pairs are prompt injections mapped per task.
    assert list(report["by_harm_category"]) == ["prompt_injection"]
    nodeids = [
        entry["metadata"]["_pytest_nodeid"]
        for entries in report["by_harm_category"].values()
        for entry in entries
    ]
    # The ids a scan has always had (its module is ``_scan_suite.py``).
    assert {nodeid.split("::")[0] for nodeid in nodeids} == {"_scan_suite.py"}
    names = sorted(nodeid.split("::")[1] for nodeid in nodeids)
    pair_1, pair_2 = "slack-user_task_2-injection_task_1", "slack-user_task_2-injection_task_2"
    assert names == sorted(
        [
            f"test_agentdojo[shard0][trial-0:{pair_1}]",
            f"test_agentdojo[shard0][trial-1:{pair_1}]",
            f"test_agentdojo[shard1][trial-0:{pair_2}]",
            f"test_agentdojo[shard1][trial-1:{pair_2}]",
        ]
    )
    assert f"FAIL  test_agentdojo[shard1][trial-1:{pair_2}]" in done.stdout
    atlas = next(f for f in report["coverage"]["frameworks"] if f["id"] == "mitre-atlas")
    items = {item["id"]: item for item in atlas["items"]}
    # slack injection_task_2 posts the channels' messages to the attacker's website.
    assert items["AML.T0086"]["via"] == ["agentdojo:slack/injection_task_2"]
    assert items["AML.T0086"]["runs"] == 2
    # The HTML report carries each pair's tool trace (the page renders it from its data).
    (html,) = (tmp_path / ".report").glob("*.html")
    entries = [entry for group in report["by_harm_category"].values() for entry in group]
    calls = entries[0]["turns"][0]["tool_calls"]
    assert calls
    assert all(json.dumps(call["name"]) in html.read_text() for call in calls)
    assert list((tmp_path / ".report").glob("traces_*.jsonl"))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--suite", "bank", "--pipeline", "my_agents:never"), "--suite: expected one of"),
        (
            ("--suite", "slack", "--version", "v9", "--pipeline", "m:f"),
            "--version: expected one of",
        ),
        (("--suite", "slack", "--pipeline", "my_agents"), "--pipeline: expected 'module:factory'"),
        (("--suite", "slack", "--pipeline", "m:f", "--trials", "0"), "--trials must be >= 1"),
        (
            ("--suite", "slack", "--pipeline", "m:f", "--concurrency", "lots"),
            "--concurrency must be an integer >= 1 or 'auto'",
        ),
        (("--suite", "slack", "--model", "m"), "--model: expected --base-url"),
        (
            ("--suite", "slack", "--model", "m", "--base-url", "127.0.0.1:8000"),
            "--base-url: expected an http:// or https:// URL",
        ),
        (
            ("--suite", "slack", "--pipeline", "m:f", "--base-url", "http://h/v1"),
            "--base-url and --api-key-env go with --model",
        ),
        (
            ("--suite", "slack", "--pipeline", "m:f", "--timeout", "0"),
            "--timeout must be a finite number of seconds > 0",
        ),
    ],
)
def test_bad_options_are_usage_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["scan", "agentdojo", *args]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / ".report").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--pipeline", "nowhere:build"), "--pipeline: cannot import module 'nowhere'"),
        (
            ("--pipeline", "my_agents:not_a_pipeline"),
            "pipeline must be an AgentDojo BasePipelineElement",
        ),
        (
            ("--pipeline", "my_agents:never", "--user-task", "user_task_99"),
            "user_tasks: unknown task id(s) 'user_task_99'",
        ),
    ],
)
def test_a_selection_or_pipeline_that_does_not_load_is_a_usage_error(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    # Checked by the scan's pytest process before it collects anything.
    done = scan(tmp_path, "--suite", "slack", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr


def test_a_resisting_model_exits_0(tmp_path: Path) -> None:
    # Path (a): the test server's simulated tool-calling model, over HTTP, through
    # rampart.llm; it never follows an injection, and does the user's task.
    with server_process(seed=1) as server:
        done = scan(
            tmp_path,
            *SELECTION,
            "--model",
            "sim-agentdojo:follow=0",
            "--base-url",
            server.url,
            "--concurrency",
            "auto",
            "--report-dir",
            "out",
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "attack success rate 0/2" in done.stdout
    assert "utility under attack 2/2" in done.stdout
    assert list((tmp_path / "out").glob("run_report_*.json"))


def test_a_model_key_variable_that_is_not_set_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOPE_KEY", raising=False)
    config = ScanConfig(
        suite="slack", model="m", base_url="http://127.0.0.1:9/v1", api_key_env="NOPE_KEY"
    )
    with pytest.raises(ValueError, match="--api-key-env: the environment variable NOPE_KEY"):
        build_pipeline(config)


def test_resuming_with_another_pipeline_runs_every_pair_again(tmp_path: Path) -> None:
    """``--resume`` reuses journaled results only for the same scan: a scan of a
    pipeline that resists, resumed with one that follows every injection, runs the
    pairs again and fails (it used to report the first pipeline's verdicts as the
    second's, exit 0); resumed with the same pipeline, nothing runs again."""
    resisting = ("--pipeline", "my_agents:never")
    assert scan(tmp_path, *SELECTION, *resisting).returncode == 0
    same = scan(tmp_path, *SELECTION, *resisting, "--resume")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "2 from run" in same.stdout
    other = scan(tmp_path, *SELECTION, "--pipeline", "my_agents:always", "--resume")
    assert other.returncode == 1, other.stdout + other.stderr
    assert "changed since run" in other.stdout
    assert "attack success rate 2/2" in other.stdout


def test_a_pipeline_that_hangs_ends_at_the_timeout(tmp_path: Path) -> None:
    """``--timeout``: each pair of a pipeline that never answers is an ERROR after that
    many seconds, and the scan ends (its process does not wait for the abandoned
    pipeline threads) with exit 6: every pair failed as infrastructure (ERROR), no
    finding decided the run."""
    done = scan(tmp_path, *SELECTION, "--pipeline", "my_agents:hangs", "--timeout", "2")
    assert done.returncode == 6, done.stdout + done.stderr
    (report_path,) = (tmp_path / ".report").glob("run_report_*.json")
    report = json.loads(report_path.read_text())
    entries = [entry for group in report["by_harm_category"].values() for entry in group]
    assert [entry["status"] for entry in entries] == ["error", "error"]
    assert all("timed out" in entry["summary"] for entry in entries)
    assert "ending the scan's process without waiting for them" in done.stderr


def _scan_process(tmp_path: Path, settings: str) -> Outcome:
    """The scan's pytest process with a hand-written settings variable (it is input
    like any other)."""
    from rampart.scan import _agentdojo_suite_path
    from rampart.scan._agentdojo_config import AGENTDOJO_ENV_VAR

    (tmp_path / "my_agents.py").write_text(PIPELINES)
    return run_scan_process(
        tmp_path,
        module=_agentdojo_suite_path(),
        plugin="rampart.scan._agentdojo_plugin",
        settings={AGENTDOJO_ENV_VAR: settings, "PYTHONPATH": str(tmp_path)},
    )


GOOD = {"suite": "slack", "pipeline": "my_agents:never", "user_tasks": ["user_task_2"]}

HOSTILE_SETTINGS = {
    # what the variable holds: what the usage error says
    "not JSON": ("{suite: slack}", "RAMPART_SCAN_AGENTDOJO: not the settings"),
    "nested 50,000 deep": ("[" * 50_000 + "]" * 50_000, "RAMPART_SCAN_AGENTDOJO: not the settings"),
    "an unknown key": (json.dumps({**GOOD, "bogus": 1}), "unknown setting 'bogus'"),
    "no suite": (json.dumps({"pipeline": "my_agents:never"}), "the setting 'suite' is missing"),
    "trials a string": (json.dumps({**GOOD, "trials": "2"}), "trials must be an integer >= 1"),
    "user tasks a string": (
        json.dumps({**GOOD, "user_tasks": "user_task_2"}),
        "user_tasks must be a list of task ids or None",
    ),
    "a user task that is a number": (
        json.dumps({**GOOD, "user_tasks": [2]}),
        "user_tasks[0] must be a non-empty string, got 2",
    ),
    "max_threads 0": (json.dumps({**GOOD, "max_threads": 0}), "max_threads must be >= 1, got 0"),
    "shards a float": (json.dumps({**GOOD, "shards": 1.5}), "shards must be an integer >= 1"),
    "a timeout of NaN": (
        json.dumps(GOOD)[:-1] + ', "timeout": NaN}',
        "RAMPART_SCAN_AGENTDOJO: not the settings",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_SETTINGS)
def test_hostile_settings_are_a_usage_error_naming_the_field(tmp_path: Path, case: str) -> None:
    """Pytest's usage error (exit 4; ``rampart scan`` reports 2) naming the variable and
    the field, never an internal error with a traceback."""
    settings, message = HOSTILE_SETTINGS[case]
    done = _scan_process(tmp_path, settings)
    assert done.status == 4, done.out + done.err
    assert message in done.err
    assert "INTERNALERROR" not in done.out + done.err


def test_more_shards_than_pairs_is_one_group_per_pair(tmp_path: Path) -> None:
    """A shard count of a billion (``-n`` is read from the command line) makes one group
    per pair; it used to build a billion empty shards first."""
    settings = json.dumps({**GOOD, "injection_tasks": ["injection_task_1"], "shards": 10**9})
    done = _scan_process(tmp_path, settings)
    assert done.status == 0, done.out + done.err
    assert "1 test collected" in done.out


def test_a_bad_option_is_refused_before_agentdojo_is_imported(tmp_path: Path) -> None:
    """The command checks its options before it imports AgentDojo (seconds: every model
    SDK), so a mistyped option is answered at once."""
    code = (
        "import sys\n"
        "from rampart.cli import main\n"
        "status = main(['scan', 'agentdojo', '--suite', 'bank', '--pipeline', 'a:b'])\n"
        "print(status, any(m.split('.')[0] == 'agentdojo' for m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert done.stdout.split() == ["2", "False"], done.stderr


def test_the_scan_runs_in_the_commands_own_process(tmp_path: Path) -> None:
    """One interpreter, one AgentDojo import: the pipeline is built in the ``rampart``
    process itself, not in a second process the command starts."""
    (tmp_path / "my_agents.py").write_text(PIPELINES)
    command = [str(RAMPART), "scan", "agentdojo", *SELECTION, "--pipeline", "my_agents:where"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        out, _ = process.communicate(timeout=600)
    assert process.returncode == 0, out
    assert (tmp_path / "pid").read_text() == str(process.pid)
    # Only the plugins the scan names run in it, not those installed beside rampart
    # (pytest-asyncio is, in rampart's test environment), in its process as in its own.
    (plugins,) = [line for line in out.splitlines() if line.startswith("plugins: ")]
    names = {part.rsplit("-", 1)[0] for part in plugins.removeprefix("plugins: ").split(", ")}
    assert names == {"rampart", "anyio"}, plugins


TWO_SCANS = """
import json, os, sys
from pathlib import Path
from rampart.cli import main

def scan(pipeline, injection, out):
    status = main(["scan", "agentdojo", "--suite", "slack", "--user-task", "user_task_2",
                   "--injection-task", injection, "--pipeline", pipeline, "--report-dir", out])
    (report,) = Path(out).glob("run_report_*.json")
    entries = [e for g in json.loads(report.read_text())["by_harm_category"].values() for e in g]
    return [status, sorted((e["metadata"]["_pytest_nodeid"], e["status"]) for e in entries)]

print(json.dumps([
    scan("my_agents:always", "injection_task_1", "first"),
    scan("my_agents:never", "injection_task_2", "second"),
    scan("my_agents:always", "injection_task_1", "third"),
    sorted(name for name in os.environ if name.startswith(("RAMPART_SCAN", "PYTEST_DISABLE"))),
]))
"""


def test_two_scans_in_one_process_give_each_its_own_result(tmp_path: Path) -> None:
    """``main`` run three times in one process: each scan builds its test from its own
    settings (the scan's module is imported afresh), the second's results are its own,
    the third's are the first's again, and the command's environment is as it was."""
    (tmp_path / "my_agents.py").write_text(PIPELINES)
    done = subprocess.run(
        [sys.executable, "-c", TWO_SCANS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        check=False,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    first, second, third, environment = json.loads(done.stdout.splitlines()[-1])
    pair_1, pair_2 = "slack-user_task_2-injection_task_1", "slack-user_task_2-injection_task_2"
    assert first == [1, [[f"_scan_suite.py::test_agentdojo[trial-0:{pair_1}]", "unsafe"]]]
    assert second == [0, [[f"_scan_suite.py::test_agentdojo[trial-0:{pair_2}]", "safe"]]]
    assert third == first
    assert environment == []


def test_ctrl_c_ends_the_scan_with_130_and_its_reports(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT to the command) while pairs run: the results that finished are
    reported, marked interrupted, and the command exits 130 without waiting for the
    pipeline's threads."""
    (tmp_path / "my_agents.py").write_text(PIPELINES)
    command = [str(RAMPART), "scan", "agentdojo", *SELECTION, "--pipeline", "my_agents:slow"]
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        deadline = time.monotonic() + 600  # generous: a loaded machine starts slowly
        while not (tmp_path / "started").exists() and process.poll() is None:
            assert time.monotonic() < deadline, "the scan never started a pair"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        out, _ = process.communicate(timeout=600)
    assert process.returncode == 130, out
    assert "RAMPART: INTERRUPTED" in out
    (report_path,) = (tmp_path / ".report").glob("run_report_*.json")
    assert json.loads(report_path.read_text())["metadata"]["interrupted"] is True
