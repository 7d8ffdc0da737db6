"""``rampart scan xpia`` against the test server (a real process, real reports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rampart.cli import main
from rampart.testing.server import server_process

if TYPE_CHECKING:
    from collections.abc import Iterator

RAMPART = Path(sys.executable).with_name("rampart")
KEY = "sk-scan-test-9f8e7d6c5b4a"


def scan(
    tmp_path: Path, url: str, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(RAMPART),
            "scan",
            "xpia",
            "--base-url",
            url,
            "--model",
            "simulated-agent",
            "--judge-model",
            "sim-judge",
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **(env or {})},
        check=False,
        timeout=600,
    )


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
    assert done.returncode == 1, done.stdout + done.stderr
    found = results(tmp_path / ".report")
    assert len(found) == 15  # the pack's data_exfiltration payloads, once each
    assert any(entry["status"] == "unsafe" for entry in found)
    assert "test_xpia" in done.stdout


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
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(results(tmp_path / "out")) == 30
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    assert KEY not in done.stdout + done.stderr


def test_an_unset_key_variable_is_a_usage_error(tmp_path: Path, compliant: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "NO_SUCH_KEY_VAR"}
    done = subprocess.run(
        [
            str(RAMPART),
            "scan",
            "xpia",
            "--base-url",
            compliant,
            "--model",
            "m",
            "--api-key-env",
            "NO_SUCH_KEY_VAR",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
        timeout=600,
    )
    assert done.returncode == 2
    assert "--api-key-env: the environment variable NO_SUCH_KEY_VAR is not set" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--base-url", "ftp://x/v1", "--model", "m"),
            "--base-url: expected an http:// or https:// URL",
        ),
        (
            ("--base-url", "http://x/v1", "--model", "m", "--harm-category", "nope"),
            "--harm-category: expected one of",
        ),
        (("--base-url", "http://x/v1", "--model", "m", "--trials", "0"), "--trials must be >= 1"),
        (("--base-url", "http://x/v1", "--model", "m", "--timeout", "0"), "--timeout must be > 0"),
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
    assert main(["scan", "xpia", *args]) == 2
    assert message in capsys.readouterr().err
