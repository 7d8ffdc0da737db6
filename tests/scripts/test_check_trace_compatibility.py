"""scripts/check_trace_compatibility.py against real temporary git repositories."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "check_trace_compatibility.py"
DECLARATION = "schemas/trace-compatibility.json"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


@pytest.fixture(scope="module")
def gate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_trace_compatibility", SCRIPT)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Repo:
    """A throwaway git repository shaped like this project's contract inputs."""

    def __init__(self, root: Path, gate: ModuleType) -> None:
        self.root = root
        self.gate = gate
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "test@example.com")
        self.git("config", "user.name", "Test")
        self.git("config", "commit.gpgsign", "false")
        self.git("config", "core.autocrlf", "false")

    def git(self, *args: str) -> str:
        process = subprocess.run(
            ["git", *args], cwd=self.root, capture_output=True, text=True, check=True
        )
        return process.stdout.strip()

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8", newline="")

    def remove(self, path: str) -> None:
        (self.root / path).unlink()

    def commit(self, message: str = "change") -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def models(self, version: str = "rampart.trace.v2", extra: str = "") -> None:
        for name in ("result", "types", "_population"):
            self.write(f"src/rampart/core/{name}.py", f"# {name}\n{extra}")
        self.write("src/rampart/codec/_schema.py", f"# _schema\n{extra}")
        self.write(
            "src/rampart/codec/_record.py",
            f'from typing import Final\n\nTRACE_SCHEMA_VERSION: Final = "{version}"\n',
        )

    def schema(self, major: int, body: str = "") -> None:
        self.write(f"schemas/trace.v{major}.schema.json", f'{{"major": {major}{body}}}\n')

    def fingerprint(self) -> str:
        result: str = self.gate.Tree(self.root).fingerprint()
        return result

    def declare(self, decision: str, previous: str | None, **extra: Any) -> dict[str, Any]:
        version = extra.pop("version", "rampart.trace.v2")
        data: dict[str, Any] = {
            "version": version,
            "contract_sha256": "0" * 64,
            "previous_contract_sha256": previous,
            "decision": decision,
            "rationale": "because reviewers agreed",
            **extra,
        }
        self.write(DECLARATION, json.dumps(data, indent=2) + "\n")
        data["contract_sha256"] = self.gate.write_fingerprint(self.root)
        return data

    def run(self, *args: str) -> int:
        code: int = self.gate.main(["--root", str(self.root), *args])
        return code


@pytest.fixture
def repo(tmp_path: Path, gate: ModuleType) -> Repo:
    return Repo(tmp_path, gate)


@pytest.fixture
def v2_base(repo: Repo) -> tuple[Repo, str, dict[str, Any]]:
    """A base commit that already publishes v1 and v2 schemas and a declaration."""
    repo.models()
    repo.schema(1)
    repo.schema(2)
    repo.write("docs/trace-schema.md", "# notes\n")
    declaration = repo.declare("initial", None)
    base = repo.commit("base")
    return repo, base, declaration


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err


class TestFingerprint:
    def test_covers_inputs_only(self, repo: Repo) -> None:
        """Contract modules and schema files count; other files do not."""
        repo.models()
        repo.schema(2)
        before = repo.fingerprint()
        repo.write("src/rampart/core/adapter.py", "# not part of the contract\n")
        repo.write("schemas/other.json", "{}\n")
        repo.write("docs/x.md", "x\n")
        assert repo.fingerprint() == before
        repo.write("src/rampart/core/types.py", "# changed\n")
        assert repo.fingerprint() != before

    def test_watches_codec_modules(self, repo: Repo) -> None:
        """Private ``_codec*.py`` modules hold contract policy and are inputs too."""
        repo.models()
        before = repo.fingerprint()
        repo.write("src/rampart/codec/_codec.py", "# policy\n")
        assert repo.fingerprint() != before

    def test_line_endings_do_not_matter(self, repo: Repo) -> None:
        """CRLF checkouts fingerprint like LF ones."""
        repo.models()
        repo.schema(2)
        before = repo.fingerprint()
        repo.write("src/rampart/core/result.py", "# result\r\n")
        assert repo.fingerprint() == before

    def test_matches_the_documented_recipe(self, repo: Repo) -> None:
        """SHA-256 over sorted, deterministic JSON of path -> text."""
        import hashlib

        repo.models()
        repo.schema(2)
        contents = {
            path: (repo.root / path).read_text(encoding="utf-8")
            for path in repo.gate.Tree(repo.root).contract_inputs()
        }
        digest = hashlib.sha256(json.dumps(contents, sort_keys=True).encode()).hexdigest()
        assert repo.fingerprint() == digest
        assert len(contents) == 6

    def test_git_tree_and_working_tree_agree(self, repo: Repo) -> None:
        """Reading a commit with ``git show`` gives the same fingerprint as the checkout."""
        repo.models()
        repo.schema(2)
        head = repo.commit()
        assert repo.gate.Tree(repo.root, head).fingerprint() == repo.fingerprint()

    def test_print_option(self, repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
        """``--fingerprint`` prints the 64-hex fingerprint and exits 0."""
        repo.models()
        assert repo.run("--fingerprint") == 0
        assert capsys.readouterr().out.strip() == repo.fingerprint()

    def test_write_option_changes_only_the_fingerprint(self, repo: Repo) -> None:
        """``--write`` refreshes contract_sha256 and leaves every other field alone."""
        repo.models()
        repo.schema(2)
        repo.write("docs/trace-schema.md", "# notes\n")
        repo.declare("initial", None, migration_note="docs/trace-schema.md")
        before = json.loads((repo.root / DECLARATION).read_text())
        repo.write("src/rampart/core/types.py", "# edited\n")
        assert repo.run("--write") == 0
        after = json.loads((repo.root / DECLARATION).read_text())
        assert after["contract_sha256"] == repo.fingerprint() != before["contract_sha256"]
        assert {k: v for k, v in after.items() if k != "contract_sha256"} == {
            k: v for k, v in before.items() if k != "contract_sha256"
        }
        assert list(after) == list(before)


class TestWithoutBase:
    def test_current_declaration_passes(self, repo: Repo) -> None:
        """Version and fingerprint agree: exit 0."""
        repo.models()
        repo.schema(2)
        repo.declare("initial", None)
        assert repo.run() == 0

    def test_stale_fingerprint_fails(self, repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
        """Editing a contract input without refreshing the declaration fails."""
        repo.models()
        repo.schema(2)
        repo.declare("initial", None)
        repo.write("src/rampart/core/result.py", "# edited\n")
        assert repo.run() == 1
        assert "contract_sha256 is stale" in _error(capsys)

    def test_version_mismatch_fails(self, repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
        """The declared version must be TRACE_SCHEMA_VERSION."""
        repo.models(version="rampart.trace.v3")
        repo.schema(3)
        repo.declare("initial", None)
        assert repo.run() == 1
        assert "does not match TRACE_SCHEMA_VERSION" in _error(capsys)

    def test_missing_declaration_fails(
        self, repo: Repo, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """No declaration, no pass."""
        repo.models()
        repo.schema(2)
        assert repo.run() == 1
        assert "trace-compatibility.json is missing" in _error(capsys)

    def test_missing_active_schema_fails(
        self, repo: Repo, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The active major's schema file must exist."""
        repo.models()
        repo.declare("initial", None)
        assert repo.run() == 1
        assert "schemas/trace.v2.schema.json is missing" in _error(capsys)

    @pytest.mark.parametrize(
        ("changes", "message"),
        [
            ({"decision": "maybe"}, "'decision' must be one of"),
            ({"rationale": "   "}, "'rationale' must be a non-blank string"),
            ({"surprise": 1}, "unknown field(s) surprise"),
            ({"version": "trace-2"}, "'version' must look like"),
            ({"previous_contract_sha256": "a" * 64}, "'initial' decision has no previous"),
            ({"migration_note": "/etc/passwd"}, "repository-relative path"),
            ({"migration_note": "../outside.md"}, "repository-relative path"),
            ({"migration_note": "docs/absent.md"}, "is not a non-empty file"),
            ({"migration_note": "docs/empty.md"}, "is not a non-empty file"),
            ({"contract_sha256": "XYZ"}, "64 lowercase hex digits"),
        ],
    )
    def test_declaration_shape(
        self,
        repo: Repo,
        capsys: pytest.CaptureFixture[str],
        changes: dict[str, Any],
        message: str,
    ) -> None:
        """Malformed declarations fail with a message naming the field."""
        repo.models()
        repo.schema(2)
        repo.write("docs/empty.md", "\n")
        data = repo.declare("initial", None)
        data.update(changes)
        repo.write(DECLARATION, json.dumps(data))
        assert repo.run() == 1
        assert message in _error(capsys)

    def test_missing_required_field(self, repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
        """Each required field must be present."""
        repo.models()
        repo.schema(2)
        data = repo.declare("initial", None)
        del data["rationale"]
        repo.write(DECLARATION, json.dumps(data))
        assert repo.run() == 1
        assert "missing required field 'rationale'" in _error(capsys)


class TestAgainstBase:
    def test_initial_when_base_has_no_schema(self, repo: Repo) -> None:
        """The first contract on top of a schema-less base is 'initial'."""
        repo.write("README.md", "hello\n")
        base = repo.commit("base")
        repo.models()
        repo.schema(2)
        repo.declare("initial", None)
        assert repo.run("--base-ref", base) == 0

    def test_base_without_schema_rejects_other_decisions(
        self, repo: Repo, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Anything but 'initial' is wrong when nothing was published before."""
        repo.models()
        base = repo.commit("base: models but no schema")
        repo.write("src/rampart/core/types.py", "# typed\n")
        repo.schema(2)
        repo.declare("compatible", "a" * 64)
        assert repo.run("--base-ref", base) == 1
        assert "must be 'initial'" in _error(capsys)

    def test_compatible_change(self, v2_base: tuple[Repo, str, dict[str, Any]]) -> None:
        """A same-major change with the base's fingerprint as previous passes."""
        repo, base, declaration = v2_base
        repo.write("src/rampart/core/types.py", "# new optional field\n")
        repo.schema(2, ', "added": true')
        repo.declare("compatible", declaration["contract_sha256"])
        assert repo.run("--base-ref", base) == 0

    def test_stale_previous_fingerprint(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A declaration written against an older base fails even if it is self-consistent."""
        repo, base, _ = v2_base
        repo.write("src/rampart/core/types.py", "# change\n")
        repo.declare("compatible", "f" * 64)
        assert repo.run("--base-ref", base) == 1
        assert "previous_contract_sha256 must be the base declaration's" in _error(capsys)

    def test_compatible_requires_previous(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A 'compatible' decision without a previous fingerprint is malformed."""
        repo, base, _ = v2_base
        repo.write("src/rampart/core/types.py", "# change\n")
        repo.declare("compatible", None)
        assert repo.run("--base-ref", base) == 1
        assert "needs 'previous_contract_sha256'" in _error(capsys)

    def test_initial_is_wrong_once_published(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Re-declaring 'initial' over a published schema fails."""
        repo, base, _ = v2_base
        repo.write("src/rampart/core/types.py", "# change\n")
        repo.declare("initial", None)
        assert repo.run("--base-ref", base) == 1
        assert "already publishes a trace schema" in _error(capsys)

    def test_new_major_without_a_bump_fails(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """'new-major' needs the major to move."""
        repo, base, declaration = v2_base
        repo.write("src/rampart/core/types.py", "# change\n")
        repo.declare(
            "new-major", declaration["contract_sha256"], migration_note="docs/trace-schema.md"
        )
        assert repo.run("--base-ref", base) == 1
        assert "must be 'compatible'" in _error(capsys)

    def test_new_major(self, v2_base: tuple[Repo, str, dict[str, Any]]) -> None:
        """v2 -> v3 with a new schema file, old files kept and a migration note passes."""
        repo, base, declaration = v2_base
        repo.models(version="rampart.trace.v3", extra="# renamed a field\n")
        repo.schema(3)
        repo.declare(
            "new-major",
            declaration["contract_sha256"],
            version="rampart.trace.v3",
            migration_note="docs/trace-schema.md",
        )
        assert repo.run("--base-ref", base) == 0

    def test_major_change_declared_compatible_fails(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A major bump cannot be called compatible."""
        repo, base, declaration = v2_base
        repo.models(version="rampart.trace.v3")
        repo.schema(3)
        repo.declare("compatible", declaration["contract_sha256"], version="rampart.trace.v3")
        assert repo.run("--base-ref", base) == 1
        assert "must be 'new-major'" in _error(capsys)

    def test_new_major_needs_a_migration_note(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A break without migration instructions fails."""
        repo, base, declaration = v2_base
        repo.models(version="rampart.trace.v3")
        repo.schema(3)
        repo.declare("new-major", declaration["contract_sha256"], version="rampart.trace.v3")
        assert repo.run("--base-ref", base) == 1
        assert "needs a 'migration_note'" in _error(capsys)

    def test_major_skips_fail(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The major moves by exactly one."""
        repo, base, declaration = v2_base
        repo.models(version="rampart.trace.v4")
        repo.schema(4)
        repo.declare(
            "new-major",
            declaration["contract_sha256"],
            version="rampart.trace.v4",
            migration_note="docs/trace-schema.md",
        )
        assert repo.run("--base-ref", base) == 1
        assert "exactly one" in _error(capsys)

    def test_new_major_keeps_the_previous_schema(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A major bump preserves the old active schema byte for byte."""
        repo, base, declaration = v2_base
        repo.models(version="rampart.trace.v3")
        repo.schema(3)
        repo.schema(2, ', "edited": true')
        repo.declare(
            "new-major",
            declaration["contract_sha256"],
            version="rampart.trace.v3",
            migration_note="docs/trace-schema.md",
        )
        assert repo.run("--base-ref", base) == 1
        assert "schemas/trace.v2.schema.json was published at the base" in _error(capsys)

    def test_changed_historical_schema_fails(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Under 'compatible', an earlier major's schema file must not change."""
        repo, base, declaration = v2_base
        repo.schema(1, ', "tidied": true')
        repo.declare("compatible", declaration["contract_sha256"])
        assert repo.run("--base-ref", base) == 1
        assert "schemas/trace.v1.schema.json was published at the base" in _error(capsys)

    def test_removed_historical_schema_fails(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Published schema files are never deleted."""
        repo, base, declaration = v2_base
        repo.remove("schemas/trace.v1.schema.json")
        repo.declare("compatible", declaration["contract_sha256"])
        assert repo.run("--base-ref", base) == 1
        assert "must not be removed" in _error(capsys)

    def test_unchanged_contract_needs_no_new_decision(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Unrelated changes keep the base's declaration valid as it is."""
        repo, base, _ = v2_base
        repo.write("src/rampart/core/adapter.py", "# unrelated\n")
        repo.write("README.md", "docs\n")
        assert repo.run("--base-ref", base) == 0
        assert "no new decision needed" in capsys.readouterr().out

    def test_unknown_ref_fails(
        self, v2_base: tuple[Repo, str, dict[str, Any]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A base ref that does not resolve is a clear error."""
        repo, _, _ = v2_base
        assert repo.run("--base-ref", "no-such-branch") == 1
        assert "cannot resolve base ref 'no-such-branch'" in _error(capsys)

    def test_command_line(self, v2_base: tuple[Repo, str, dict[str, Any]]) -> None:
        """The script runs as a program and reports failures on stderr with exit 1."""
        import sys

        repo, base, _ = v2_base
        repo.write("src/rampart/core/types.py", "# change\n")
        process = subprocess.run(
            [sys.executable, str(SCRIPT), "--root", str(repo.root), "--base-ref", base],
            capture_output=True,
            text=True,
            check=False,
        )
        assert process.returncode == 1
        assert process.stderr.startswith("error: ")


class TestRepositoryDeclaration:
    def test_committed_declaration_is_well_formed(self, gate: ModuleType) -> None:
        """This repository is on v2 (never a new major yet), with a migration note."""
        data = json.loads((ROOT / DECLARATION).read_text(encoding="utf-8"))
        gate.validate_declaration(data)
        assert data["version"] == "rampart.trace.v2"
        assert data["decision"] in ("initial", "compatible")
        assert (data["previous_contract_sha256"] is None) == (data["decision"] == "initial")
        assert (ROOT / data["migration_note"]).is_file()


def test_this_checkout_declares_its_contract() -> None:
    """The checked-in declaration is bound to this checkout's contract: a change to the
    model or codec modules without a reviewed decision fails here, in the suite, and not
    only in the Makefile's schema-check."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
