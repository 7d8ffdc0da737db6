"""scripts/generate_trace_schema.py: writes the schema and detects drift."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rampart.codec import ResultRecord

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "generate_trace_schema.py"
OUTDATED = "Trace schema is outdated; run scripts/generate_trace_schema.py"


@pytest.fixture(scope="module")
def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_trace_schema", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class TestGenerateTraceSchema:
    def test_writes_the_versioned_file(self, script: ModuleType, tmp_path: Path) -> None:
        """The file is named after the version, sorted, indented and newline-terminated."""
        assert script.main(["--root", str(tmp_path)]) == 0
        written = tmp_path / "schemas" / "trace.v2.schema.json"
        text = written.read_text(encoding="utf-8")
        assert text.endswith("}\n")
        assert text == json.dumps(ResultRecord.json_schema(), indent=2, sort_keys=True) + "\n"
        assert b"\r\n" not in written.read_bytes()

    def test_check_passes_when_current(self, script: ModuleType, tmp_path: Path) -> None:
        """``--check`` exits 0 right after generation."""
        script.main(["--root", str(tmp_path)])
        assert script.main(["--root", str(tmp_path), "--check"]) == 0

    def test_check_fails_on_drift(
        self, script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A hand edit makes ``--check`` exit 1 with the documented message."""
        script.main(["--root", str(tmp_path)])
        path = tmp_path / "schemas" / "trace.v2.schema.json"
        path.write_text(path.read_text(encoding="utf-8").replace('"title"', '"Title"', 1))
        capsys.readouterr()
        assert script.main(["--root", str(tmp_path), "--check"]) == 1
        assert capsys.readouterr().err.strip() == OUTDATED

    def test_check_fails_when_missing(
        self, script: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A missing schema file is drift too."""
        assert script.main(["--root", str(tmp_path), "--check"]) == 1
        assert OUTDATED in capsys.readouterr().err
        assert not (tmp_path / "schemas").exists()

    def test_check_does_not_write(self, script: ModuleType, tmp_path: Path) -> None:
        """``--check`` never repairs the file it checks."""
        script.main(["--root", str(tmp_path)])
        path = tmp_path / "schemas" / "trace.v2.schema.json"
        path.write_text("{}\n")
        script.main(["--root", str(tmp_path), "--check"])
        assert path.read_text() == "{}\n"

    def test_repository_schema_is_current(self) -> None:
        """The committed schema passes the CI command, run as a real subprocess."""
        process = subprocess.run(
            [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False
        )
        assert process.returncode == 0, process.stderr
