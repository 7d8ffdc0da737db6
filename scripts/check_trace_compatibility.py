"""Check the ``rampart.trace`` compatibility declaration (``schemas/trace-compatibility.json``).

Schema drift checking cannot tell a compatible change from a breaking one, so every
change to the trace contract needs a checked-in decision, bound to the contract by a
SHA-256 fingerprint of its inputs: the model and codec modules and every published
``schemas/trace.v*.schema.json``.

    python scripts/check_trace_compatibility.py --fingerprint      # print the fingerprint
    python scripts/check_trace_compatibility.py --write            # refresh contract_sha256
    python scripts/check_trace_compatibility.py                    # version + fingerprint
    python scripts/check_trace_compatibility.py --base-ref <sha>   # the PR gate

With ``--base-ref`` the declaration is compared with the base commit (read with
``git show``): a base without a trace schema needs ``initial``; a change within the
major needs ``compatible``; a major bump needs ``new-major`` (exactly +1) with a
migration note; ``previous_contract_sha256`` must be the base declaration's
fingerprint; schema files published at the base stay unchanged (``compatible`` may
update only the active major's file). An unchanged contract needs no new decision.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
DECLARATION = "schemas/trace-compatibility.json"
SERIALIZATION = "src/rampart/codec/_record.py"
# The model modules whose classes are the record's body.
CONTRACT_MODULES = (
    "src/rampart/core/result.py",
    "src/rampart/core/types.py",
    "src/rampart/core/_population.py",
)
# Every module of the codec package holds contract policy.
CODEC_MODULES = re.compile(r"^src/rampart/codec/[^/]*\.py$")
WATCHED_FOLDERS = ("src/rampart/core", "src/rampart/codec", "schemas")
SCHEMA_FILE = re.compile(r"^schemas/trace\.v([1-9][0-9]*)\.schema\.json$")
VERSION = re.compile(r"^rampart\.trace\.v([1-9][0-9]*)$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
DECISIONS = ("initial", "compatible", "new-major")
FIELDS = (
    "version",
    "contract_sha256",
    "previous_contract_sha256",
    "decision",
    "rationale",
    "migration_note",
)


class GateError(Exception):
    """A failed check; the message says what to fix."""


# --------------------------------------------------------------------------- sources


class Tree:
    """The contract files of the working tree or of a git revision."""

    def __init__(self, root: Path, ref: str | None = None) -> None:
        self.root = root
        self.ref = ref
        self._paths = self._list()

    def _git(self, *args: str) -> bytes:
        process = subprocess.run(["git", *args], cwd=self.root, capture_output=True, check=False)
        if process.returncode != 0:
            detail = process.stderr.decode("utf-8", "replace").strip()
            raise GateError(f"git {' '.join(args)} failed: {detail}")
        return process.stdout

    def _list(self) -> list[str]:
        if self.ref is None:
            candidates = [
                path.relative_to(self.root).as_posix()
                for folder in WATCHED_FOLDERS
                if (self.root / folder).is_dir()
                for path in (self.root / folder).iterdir()
                if path.is_file()
            ]
        else:
            try:
                self._git("rev-parse", "--verify", "--quiet", f"{self.ref}^{{commit}}")
            except GateError:
                raise GateError(f"cannot resolve base ref {self.ref!r} to a commit") from None
            listing = self._git("ls-tree", "-r", "--name-only", self.ref, "--", *WATCHED_FOLDERS)
            candidates = listing.decode("utf-8").splitlines()
        return sorted(candidates)

    def exists(self, path: str) -> bool:
        return path in self._paths

    def read_bytes(self, path: str) -> bytes:
        if self.ref is None:
            return (self.root / path).read_bytes()
        return self._git("show", f"{self.ref}:{path}")

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8").replace("\r\n", "\n")

    def schema_files(self) -> dict[str, int]:
        """Published schema files and their majors."""
        return {
            path: int(match.group(1)) for path in self._paths if (match := SCHEMA_FILE.match(path))
        }

    def contract_inputs(self) -> list[str]:
        modules = [path for path in CONTRACT_MODULES if self.exists(path)]
        modules += [path for path in self._paths if CODEC_MODULES.match(path)]
        return sorted({*modules, *self.schema_files()})

    def fingerprint(self) -> str:
        """SHA-256 of deterministic JSON mapping each input path to its LF text."""
        contents = {path: self.read_text(path) for path in self.contract_inputs()}
        payload = json.dumps(contents, sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def trace_version(self) -> str | None:
        """``TRACE_SCHEMA_VERSION`` as assigned in the serialization module."""
        if not self.exists(SERIALIZATION):
            return None
        tree = ast.parse(self.read_text(SERIALIZATION))
        for node in tree.body:
            target = value = None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            if (
                isinstance(target, ast.Name)
                and target.id == "TRACE_SCHEMA_VERSION"
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                return value.value
        raise GateError(f"{SERIALIZATION}: no TRACE_SCHEMA_VERSION string assignment found")

    def declaration(self) -> dict[str, Any] | None:
        if not self.exists(DECLARATION):
            return None
        try:
            data = json.loads(self.read_text(DECLARATION))
        except json.JSONDecodeError as exc:
            raise GateError(f"{DECLARATION}: not valid JSON ({exc.msg})") from None
        return validate_declaration(data)


def major_of(version: str) -> int:
    match = VERSION.match(version)
    if match is None:
        raise GateError(f"version {version!r} does not look like 'rampart.trace.vN'")
    return int(match.group(1))


# --------------------------------------------------------------------------- declaration


def validate_declaration(data: object) -> dict[str, Any]:
    """The declaration's shape: exact keys, strict types, decision-specific fields."""
    if not isinstance(data, dict):
        raise GateError(f"{DECLARATION}: expected a JSON object")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise GateError(f"{DECLARATION}: unknown field(s) {', '.join(unknown)}")
    for name in ("version", "contract_sha256", "decision", "rationale"):
        if name not in data:
            raise GateError(f"{DECLARATION}: missing required field {name!r}")
    if not isinstance(data["version"], str) or VERSION.match(data["version"]) is None:
        raise GateError(f"{DECLARATION}: 'version' must look like 'rampart.trace.vN'")
    if not isinstance(data["contract_sha256"], str) or not SHA256.match(data["contract_sha256"]):
        raise GateError(f"{DECLARATION}: 'contract_sha256' must be 64 lowercase hex digits")
    decision = data["decision"]
    if decision not in DECISIONS:
        raise GateError(f"{DECLARATION}: 'decision' must be one of {', '.join(DECISIONS)}")
    previous = data.get("previous_contract_sha256")
    if decision == "initial":
        if previous is not None:
            raise GateError(f"{DECLARATION}: an 'initial' decision has no previous contract")
    elif not isinstance(previous, str) or not SHA256.match(previous):
        raise GateError(
            f"{DECLARATION}: a {decision!r} decision needs 'previous_contract_sha256' "
            "(64 lowercase hex digits: the base declaration's contract_sha256)"
        )
    if not isinstance(data["rationale"], str) or not data["rationale"].strip():
        raise GateError(f"{DECLARATION}: 'rationale' must be a non-blank string")
    note = data.get("migration_note")
    if decision == "new-major" and note is None:
        raise GateError(f"{DECLARATION}: a 'new-major' decision needs a 'migration_note'")
    if note is not None and (
        not isinstance(note, str)
        or not note.strip()
        or PurePosixPath(note).is_absolute()
        or ".." in PurePosixPath(note).parts
        or "\\" in note
    ):
        raise GateError(
            f"{DECLARATION}: 'migration_note' must be a repository-relative path "
            "(for example docs/trace-schema.md)"
        )
    return data


def check_current(root: Path) -> dict[str, Any]:
    """Checks that need no base: declaration shape, version, fingerprint, note."""
    tree = Tree(root)
    declaration = tree.declaration()
    if declaration is None:
        raise GateError(f"{DECLARATION} is missing; see docs/trace-schema.md")
    version = tree.trace_version()
    if declaration["version"] != version:
        raise GateError(
            f"{DECLARATION}: version {declaration['version']!r} does not match "
            f"TRACE_SCHEMA_VERSION {version!r}"
        )
    active = f"schemas/{declaration['version'].removeprefix('rampart.')}.schema.json"
    if not tree.exists(active):
        raise GateError(f"{active} is missing; run scripts/generate_trace_schema.py")
    fingerprint = tree.fingerprint()
    if declaration["contract_sha256"] != fingerprint:
        raise GateError(
            f"{DECLARATION}: contract_sha256 is stale (the contract is now {fingerprint}); "
            "review the change, update the decision and rationale, then run "
            "scripts/check_trace_compatibility.py --write"
        )
    note = declaration.get("migration_note")
    if note is not None:
        path = root / note
        if not path.is_file() or not path.read_text(encoding="utf-8").strip():
            raise GateError(f"{DECLARATION}: migration_note {note!r} is not a non-empty file")
    return declaration


def check_against_base(root: Path, ref: str) -> str:
    """The PR gate: the declared decision must fit the change from ``ref``."""
    declaration = check_current(root)
    current, base = Tree(root), Tree(root, ref)
    if current.fingerprint() == base.fingerprint():
        return "contract unchanged from the base; no new decision needed"
    decision = declaration["decision"]
    base_schemas = base.schema_files()
    if not base_schemas:
        if decision != "initial":
            raise GateError(
                f"the base ({ref}) publishes no trace schema, so the decision must be "
                f"'initial', not {decision!r}"
            )
        return "initial contract"
    if decision == "initial":
        raise GateError(
            f"the base ({ref}) already publishes a trace schema; declare 'compatible' or "
            "'new-major' instead of 'initial'"
        )
    base_declaration = base.declaration()
    if base_declaration is None:
        raise GateError(f"the base ({ref}) publishes a trace schema but no {DECLARATION}")
    if declaration["previous_contract_sha256"] != base_declaration["contract_sha256"]:
        raise GateError(
            f"{DECLARATION}: previous_contract_sha256 must be the base declaration's "
            f"contract_sha256 ({base_declaration['contract_sha256']}); the declaration is "
            "stale against this base"
        )
    base_major = major_of(base.trace_version() or base_declaration["version"])
    major = major_of(declaration["version"])
    if major == base_major and decision != "compatible":
        raise GateError(
            f"the major is unchanged (v{major}), so the decision must be 'compatible', "
            f"not {decision!r}"
        )
    if major != base_major:
        if major != base_major + 1:
            raise GateError(
                f"the major may only increase by exactly one (base v{base_major}, now v{major})"
            )
        if decision != "new-major":
            raise GateError(
                f"the major changed (v{base_major} -> v{major}), so the decision must be "
                f"'new-major', not {decision!r}"
            )
    for path, schema_major in sorted(base_schemas.items()):
        if decision == "compatible" and schema_major == major:
            continue
        if not current.exists(path):
            raise GateError(f"{path} was published at the base and must not be removed")
        if current.read_text(path) != base.read_text(path):
            raise GateError(
                f"{path} was published at the base and must stay unchanged; "
                "historical schema files are never edited"
            )
    return f"{decision} change from v{base_major} to v{major}"


def write_fingerprint(root: Path) -> str:
    """Rewrite only ``contract_sha256`` of the declaration with the current fingerprint."""
    path = root / DECLARATION
    data = json.loads(path.read_text(encoding="utf-8"))
    fingerprint = Tree(root).fingerprint()
    data["contract_sha256"] = fingerprint
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8", newline="\n")
    return fingerprint


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--fingerprint", action="store_true", help="print the fingerprint")
    action.add_argument(
        "--write", action="store_true", help="rewrite contract_sha256 in the declaration"
    )
    action.add_argument("--base-ref", metavar="REF", help="the PR base commit to compare with")
    parser.add_argument(
        "--root", type=Path, default=REPO_ROOT, help="repository root (default: this checkout)"
    )
    args = parser.parse_args(argv)
    try:
        if args.fingerprint:
            print(Tree(args.root).fingerprint())
        elif args.write:
            print(f"{DECLARATION}: contract_sha256 = {write_fingerprint(args.root)}")
        elif args.base_ref:
            outcome = check_against_base(args.root, args.base_ref)
            print(f"Trace compatibility declaration OK against {args.base_ref}: {outcome}")
        else:
            declaration = check_current(args.root)
            print(
                f"Trace compatibility declaration OK: {declaration['version']}, "
                f"decision {declaration['decision']!r}"
            )
    except GateError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
