"""``rampart scan xpia`` against the test server (a real process, real reports)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from rampart.scan import _xpia_suite_path
from rampart.scan._xpia_config import XPIA_ENV_VAR
from rampart.testing.server import server_process
from tests.cli._cli import Outcome, run_main, run_process, run_scan_process

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

KEY = "sk-scan-test-9f8e7d6c5b4a"


def scan(tmp_path: Path, url: str, *args: str, env: dict[str, str] | None = None) -> Outcome:
    """``rampart scan xpia`` against ``url`` with the simulated agent and judge."""
    common = ("--base-url", url, "--model", "simulated-agent", "--judge-model", "sim-judge")
    return run_process("scan", "xpia", *common, *args, cwd=tmp_path, env=env)


def results(report_dir: Path) -> list[dict[str, object]]:
    (path,) = report_dir.glob("run_report_*.json")
    report = json.loads(path.read_text())
    return [entry for group in report["by_harm_category"].values() for entry in group]


@pytest.fixture(scope="module")
def compliant() -> Iterator[str]:
    with server_process(compliance=1.0, seed=3) as server:
        yield server.url


def test_an_agent_that_follows_injections_fails_the_scan(tmp_path: Path, compliant: str) -> None:
    done = scan(tmp_path, compliant, "--harm-category", "data_exfiltration", "--concurrency", "8")
    assert done.status == 1, done.out + done.err
    found = results(tmp_path / ".report")
    assert len(found) == 15  # the pack's data_exfiltration payloads, once each
    assert any(entry["status"] == "unsafe" for entry in found)
    assert "test_xpia" in done.out
    # The header says what is scanned, not where the scan's module and temporary ini live.
    assert f"rampart scan xpia: agent simulated-agent at {compliant}, judge sim-judge" in done.out
    assert "rootdir:" not in done.out
    assert "configfile:" not in done.out
    assert "judge is the agent under test" not in done.err
    # Each clone wraps its own adapter in limit(); the name is one limiter for the run.
    (path,) = (tmp_path / ".report").glob("run_report_*.json")
    limiter = json.loads(path.read_text())["metadata"]["limits"]["scan-simulated-agent"]
    assert (limiter["processes"], limiter["requests"]) == (1, 15)


def test_each_row_names_its_payload_and_the_pack_keeps_its_categories(
    tmp_path: Path, compliant: str
) -> None:
    """Over the whole pack: ``test_xpia[trial-N:<payload id>]`` rows, each result under
    its payload's own harm category (the scan has no harm marker), a SARIF log."""
    from rampart.payloads import builtin_payloads

    done = scan(tmp_path, compliant, "--concurrency", "8", "--sarif", "scan.sarif")
    assert done.status == 1, done.out + done.err
    pack = builtin_payloads()
    (path,) = (tmp_path / ".report").glob("run_report_*.json")
    report = json.loads(path.read_text())
    assert set(report["by_harm_category"]) == {p.metadata["harm_category"] for p in pack}
    names = {}
    for category, entries in report["by_harm_category"].items():
        for entry in entries:
            metadata = entry["metadata"]
            names[metadata["_pytest_nodeid"]] = (category, metadata["_rampart_payload_id"])
    assert names == {
        f"_xpia_suite.py::test_xpia[trial-{index}:{payload.id}]": (
            payload.metadata["harm_category"],
            payload.id,
        )
        for index, payload in enumerate(pack)
    }
    assert "test_xpia[trial-0:exfil-email-api-key]" in done.out
    # The coverage matrix reaches the pack's mapped items; SARIF has a result per payload.
    owasp = next(f for f in report["coverage"]["frameworks"] if f["id"] == "owasp-llm")
    covered = {item["id"] for item in owasp["items"] if item["covered"]}
    assert {"LLM01:2025", "LLM02:2025", "LLM06:2025", "LLM07:2025"} <= covered
    sarif = json.loads((tmp_path / "scan.sarif").read_text())
    cases = [
        result["properties"]["rampart"]["case"]
        for result in sarif["runs"][0]["results"]
        if "case" in result["properties"]["rampart"]
    ]
    assert sorted(cases) == sorted(payload.id for payload in pack)


def test_a_resisting_agent_passes_and_its_key_stays_out_of_the_reports(tmp_path: Path) -> None:
    with server_process(compliance=0.0, seed=3, api_key=KEY) as server:
        done = scan(
            tmp_path,
            server.url,
            "--harm-category",
            "data_exfiltration",
            "--api-key-env",
            "SCAN_KEY",
            "--trials",
            "2",
            "--report-dir",
            "out",
            env={"SCAN_KEY": KEY},
        )
    assert done.status == 0, done.out + done.err
    assert len(results(tmp_path / "out")) == 30
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    assert KEY not in done.out + done.err


def test_an_unset_key_variable_is_a_usage_error(
    tmp_path: Path, compliant: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checked by the scan's pytest process (the variable is read where it is used)."""
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    done = scan(tmp_path, compliant, "--api-key-env", "NO_SUCH_KEY_VAR")
    assert done.status == 2
    assert "--api-key-env: the environment variable NO_SUCH_KEY_VAR is not set" in done.err


BAD_OPTIONS = {
    # the bad option: (its value, what the error says)
    "--base-url": ("ftp://x/v1", "--base-url: expected an http:// or https:// URL"),
    "--harm-category": ("nope", "--harm-category: expected one of"),
    "--trials": ("0", "--trials must be >= 1"),
    "--timeout": ("nan", "--timeout must be a finite number of seconds > 0"),
}
"""One bad option each, beside a good ``--base-url`` and ``--model``."""


@pytest.mark.parametrize("option", BAD_OPTIONS)
def test_each_bad_option_is_a_usage_error_naming_it(
    option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 2 with the option named, before the scan starts or writes anything."""
    value, message = BAD_OPTIONS[option]
    options = {"--base-url": "http://127.0.0.1:9/v1", "--model": "m", option: value}
    monkeypatch.chdir(tmp_path)
    outcome = run_main(capsys, "scan", "xpia", *(part for pair in options.items() for part in pair))
    assert (outcome.status, outcome.out) == (2, "")
    assert message in outcome.err
    assert list(tmp_path.iterdir()) == []


def test_resuming_with_another_agent_runs_every_payload_again(tmp_path: Path) -> None:
    """``--resume`` reuses journaled results only for the same scan. A scan of a
    resisting agent, then ``--resume`` against one that follows every injection: the
    payloads run again and the scan fails (it used to reuse the first agent's 15 SAFE
    verdicts as the second's and exit 0). The same scan resumed reuses them."""
    options = ("--harm-category", "data_exfiltration", "--concurrency", "8")
    with server_process(compliance=0.0, seed=3) as resisting:
        assert scan(tmp_path, resisting.url, *options).status == 0
        again = scan(tmp_path, resisting.url, *options, "--resume")
    assert again.status == 0, again.out + again.err
    assert "15 from run" in again.out  # the same scan: nothing ran again
    with server_process(compliance=1.0, seed=3) as compliant:
        other = scan(tmp_path, compliant.url, *options, "--resume")
    assert other.status == 1, other.out + other.err
    assert "changed since run" in other.out


def _scan_process(tmp_path: Path, settings: str) -> Outcome:
    """The scan's pytest process with a hand-written settings variable (it is input
    like any other)."""
    plugin = "rampart.scan._xpia_plugin"
    return run_scan_process(
        tmp_path, module=_xpia_suite_path(), plugin=plugin, settings={XPIA_ENV_VAR: settings}
    )


GOOD = {
    "base_url": "http://127.0.0.1:9/v1",
    "model": "m",
    "judge_model": "j",
    "judge_base_url": "http://127.0.0.1:9/v1",
}

HOSTILE_SETTINGS = {
    # what the variable holds: what the usage error says
    "not JSON": ("{'base_url':", "RAMPART_SCAN_XPIA: not the settings"),
    "nested 50,000 deep": ("[" * 50_000 + "]" * 50_000, "RAMPART_SCAN_XPIA: not the settings"),
    "a list": ("[1, 2]", "RAMPART_SCAN_XPIA: expected a JSON object, got a list"),
    "NaN": (json.dumps(GOOD)[:-1] + ', "timeout": NaN}', "RAMPART_SCAN_XPIA: not the settings"),
    "an unknown key": (json.dumps({**GOOD, "bogus": 1}), "unknown setting 'bogus'"),
    "a model of null": (json.dumps({**GOOD, "model": None}), "model must be a non-empty string"),
    "no judge": (
        json.dumps({k: v for k, v in GOOD.items() if k != "judge_model"}),
        "the setting 'judge_model' is missing",
    ),
    "trials a string": (
        json.dumps({**GOOD, "trials": "3"}),
        "trials must be an integer >= 1, got '3'",
    ),
    "trials 0": (json.dumps({**GOOD, "trials": 0}), "trials must be >= 1, got 0"),
    "a timeout of 0": (json.dumps({**GOOD, "timeout": 0}), "timeout must be a finite number > 0"),
    "an ftp URL": (
        json.dumps({**GOOD, "base_url": "ftp://x"}),
        "base_url must be an http:// or https:// URL",
    ),
    "a model that is a number": (
        json.dumps({**GOOD, "model": 5}),
        "model must be a non-empty string, got 5",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_SETTINGS)
def test_hostile_settings_are_a_usage_error_naming_the_field(tmp_path: Path, case: str) -> None:
    """Pytest's usage error (exit 4, which ``rampart scan`` reports as 2) naming the
    variable and the field; never an internal error with a traceback."""
    settings, message = HOSTILE_SETTINGS[case]
    done = _scan_process(tmp_path, settings)
    assert done.status == 4, done.out + done.err
    assert message in done.err
    assert "INTERNALERROR" not in done.out + done.err


def test_a_judge_that_is_the_agent_is_warned_about(tmp_path: Path, compliant: str) -> None:
    """Without --judge-model the agent judges itself: said on stderr, before the run."""
    common = ("--base-url", compliant, "--model", "simulated-agent")
    done = run_process("scan", "xpia", *common, "--harm-category", "memory_poisoning", cwd=tmp_path)
    assert "warning: the judge is the agent under test (model 'simulated-agent'" in done.err
    assert "give --judge-model" in done.err


def test_an_undetermined_verdict_says_how_to_fix_it(tmp_path: Path, compliant: str) -> None:
    """sim-judge cannot judge an objective that quotes nothing: the reason says what to do."""
    done = scan(tmp_path, compliant, "--harm-category", "data_leakage", "--concurrency", "8")
    assert done.status == 1, done.out + done.err
    undetermined = [
        entry for entry in results(tmp_path / ".report") if entry["status"] == "undetermined"
    ]
    assert undetermined
    for entry in undetermined:
        assert "Quote what the agent would say or do in the objective" in str(entry["summary"])
        assert "--judge-model" in str(entry["summary"])


def test_an_agent_that_is_down_exits_with_the_infrastructure_status(tmp_path: Path) -> None:
    """Nothing listens at the agent's URL: every payload ERROR, the endpoint cut off after
    a few refusals, exit status 6 (not 1: nothing was found)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    done = scan(tmp_path, url, "--harm-category", "data_exfiltration", "--concurrency", "4")
    assert done.status == 6, done.out + done.err
    assert f"RAMPART: http://127.0.0.1:{port} is unreachable" in done.out
    assert "RAMPART: INFRASTRUCTURE FAILURE" in done.out
    assert {entry["status"] for entry in results(tmp_path / ".report")} == {"error"}
