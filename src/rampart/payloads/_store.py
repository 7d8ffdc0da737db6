"""``PayloadStore``: named payload collections on disk, saved atomically, loaded synchronously.

Layout (RAMPART's)::

    <root>/<name>/manifest.json      {"collection", "count", "formats", "provenance"}
    <root>/<name>/payloads.jsonl     {"id", "content", "format", "metadata"[, "artifact"]}
    <root>/<name>/artifacts/<id><ext>   binary payloads' files

Names (and payload ids, which name artifact files) must match
``^[A-Za-z0-9._-]{1,128}$`` and not be ``.`` or ``..``.

``save`` never leaves a half-written collection: everything is written to a
temporary directory ``<root>/.<name>_*`` and renamed into place. Replacing an existing
collection renames the old one aside first and removes it after the new one is in
place (a concurrent reader may briefly find no collection, never a partial one); an
exclusive lock file (``<root>/.lock``, POSIX ``flock``) serialises writers across
processes. ``load`` is synchronous, so a test module can load payloads at import time
for ``pytest.mark.parametrize``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rampart._checks import (
    check_choice,
    check_instance,
    check_items,
    check_optional_instance,
    check_path,
    describe,
    invalid,
)
from rampart.core.payload_ids import PAYLOAD_ID_PATTERN, validate_payload_id
from rampart.core.types import Payload, PayloadFormat

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

__all__ = ["DEFAULT_ROOT", "PayloadStore"]

DEFAULT_ROOT = Path(".rampart/payloads")
_MANIFEST = "manifest.json"
_PAYLOADS = "payloads.jsonl"
_ARTIFACTS = "artifacts"
_OWNER = "PayloadStore"
_FORMATS = {fmt.value: fmt for fmt in PayloadFormat}


def _name(name: object) -> str:
    return validate_payload_id(name, owner=_OWNER, name="collection name")


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """An exclusive lock on ``root`` for writers (a no-op where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(root / ".lock", "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _record(index: int, payload: Payload, artifact: str | None) -> str:
    record: dict[str, Any] = {
        "id": payload.id,
        "content": payload.content,
        "format": payload.format.value,
        "metadata": payload.metadata,
    }
    if artifact is not None:
        record["artifact"] = artifact
    try:
        return json.dumps(record, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise invalid(
            f"{_OWNER}.save",
            f"payloads[{index}].metadata",
            "JSON-serialisable",
            payload.metadata,
            error=ValueError,
            shown=f"{describe(payload.metadata)} ({exc})",
        ) from None


def _check_payload(name: str, value: object) -> Payload:
    payload = check_instance(f"{_OWNER}.save", name, value, Payload, expected="a Payload")
    validate_payload_id(payload.id, owner=f"{_OWNER}.save", name=f"{name}.id")
    return payload


class PayloadStore:
    """Payload collections under ``root`` (default ``.rampart/payloads``); see the module."""

    DEFAULT_ROOT = DEFAULT_ROOT

    def __init__(self, *, root: str | os.PathLike[str] | None = None) -> None:
        self._root = DEFAULT_ROOT if root is None else check_path(_OWNER, "root", root)

    def __repr__(self) -> str:
        return f"PayloadStore(root={str(self._root)!r})"

    @property
    def root(self) -> Path:
        return self._root

    def path(self, name: str) -> Path:
        """The directory of collection ``name`` (it may not exist)."""
        return self._root / _name(name)

    # -- writing -----------------------------------------------------------------------

    def save(
        self,
        name: str,
        *,
        payloads: Sequence[Payload],
        provenance: dict[str, Any] | None = None,
    ) -> Path:
        """Write ``payloads`` as collection ``name`` (replacing any), atomically; its path."""
        owner = f"{_OWNER}.save"
        name = _name(name)
        payloads = check_items(
            owner, "payloads", payloads, _check_payload, expected="a list of Payload"
        )
        if not payloads:
            raise ValueError(f"{owner}: payloads is empty; there is nothing to save")
        provenance = check_optional_instance(
            owner, "provenance", provenance, dict, expected="a dict"
        )
        if provenance is None:
            provenance = {}
        manifest = {
            "collection": name,
            "count": len(payloads),
            "formats": sorted({payload.format.value for payload in payloads}),
            "provenance": provenance,
        }
        try:
            manifest_text = json.dumps(manifest, indent=2, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise invalid(
                owner,
                "provenance",
                "JSON-serialisable",
                provenance,
                error=ValueError,
                shown=f"{describe(provenance)} ({exc})",
            ) from None
        self._root.mkdir(parents=True, exist_ok=True)
        target = self._root / name
        with _locked(self._root):
            staging = Path(tempfile.mkdtemp(prefix=f".{name}_", dir=self._root))
            try:
                self._write(staging, payloads, manifest_text)
                self._swap(staging, target)
            except BaseException:
                shutil.rmtree(staging, ignore_errors=True)
                raise
        return target

    def _write(self, directory: Path, payloads: Sequence[Payload], manifest: str) -> None:
        lines = []
        used: set[str] = set()
        for index, payload in enumerate(payloads):
            artifact = None
            if payload.artifact is not None:
                source = Path(payload.artifact)
                if not source.is_file():
                    raise FileNotFoundError(
                        f"{_OWNER}.save: payload {payload.id!r} artifact {str(source)!r} "
                        "does not exist"
                    )
                filename = f"{payload.id}{payload.format.extension}"
                number = 1
                while filename in used:
                    number += 1
                    filename = f"{payload.id}-{number}{payload.format.extension}"
                used.add(filename)
                (directory / _ARTIFACTS).mkdir(exist_ok=True)
                shutil.copyfile(source, directory / _ARTIFACTS / filename)
                artifact = f"{_ARTIFACTS}/{filename}"
            lines.append(_record(index, payload, artifact))
        from rampart.codec._internal import jsonl_line  # the codec's one JSONL writer

        (directory / _PAYLOADS).write_text("".join(map(jsonl_line, lines)), encoding="utf-8")
        (directory / _MANIFEST).write_text(manifest + "\n", encoding="utf-8")

    def _swap(self, staging: Path, target: Path) -> None:
        if not target.exists():
            os.rename(staging, target)
            return
        aside = self._root / f".{target.name}_old_{uuid.uuid4().hex[:12]}"
        os.rename(target, aside)
        try:
            os.rename(staging, target)
        except BaseException:
            os.rename(aside, target)
            raise
        shutil.rmtree(aside, ignore_errors=True)

    def delete(self, name: str) -> None:
        """Remove collection ``name`` (``FileNotFoundError`` if there is none)."""
        target = self._existing(name)
        with _locked(self._root):
            aside = self._root / f".{target.name}_deleted_{uuid.uuid4().hex[:12]}"
            os.rename(target, aside)
            shutil.rmtree(aside, ignore_errors=True)

    # -- reading -----------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        """Whether collection ``name`` has a ``payloads.jsonl`` (RAMPART's test)."""
        return (self.path(name) / _PAYLOADS).is_file()

    def list_collections(self) -> list[str]:
        """The saved collections' names, sorted (temporary and hidden directories skipped)."""
        if not self._root.is_dir():
            return []
        return sorted(
            entry.name
            for entry in self._root.iterdir()
            if not entry.name.startswith(".") and (entry / _PAYLOADS).is_file()
        )

    def _existing(self, name: str) -> Path:
        directory = self.path(name)
        if not (directory / _PAYLOADS).is_file():
            saved = ", ".join(self.list_collections()) or "none"
            raise FileNotFoundError(
                f"{_OWNER}: payload collection {name!r} not found under {str(self._root)!r} "
                f"(saved: {saved}); create it with PayloadStore.save(...) or check the root"
            )
        return directory

    def manifest(self, name: str) -> dict[str, Any]:
        """The collection's ``manifest.json`` as a dict."""
        from rampart.codec import parse_strict_json  # the one JSON reading policy

        path = self.path(name) / _MANIFEST
        if not path.is_file():
            raise FileNotFoundError(
                f"{_OWNER}: No manifest for collection {name!r} under {str(self._root)!r}"
            )
        try:
            document = parse_strict_json(data=path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise ValueError(f"{_OWNER}: {name}/{_MANIFEST}: {exc}") from None
        if not isinstance(document, dict):
            raise ValueError(f"{_OWNER}: {name}/{_MANIFEST} is not a JSON object")
        return document

    def load(self, name: str, *, format_filter: PayloadFormat | None = None) -> list[Payload]:
        """The payloads of collection ``name``, in saved order (only ``format_filter``'s).

        Binary payloads get the absolute path of their artifact; a missing artifact
        raises ``FileNotFoundError``.
        """
        directory = self._existing(name)
        check_optional_instance(
            f"{_OWNER}.load",
            "format_filter",
            format_filter,
            PayloadFormat,
            expected="a PayloadFormat",
        )
        from rampart.codec._internal import split_jsonl  # the codec's one JSONL reader

        payloads = []
        text = (directory / _PAYLOADS).read_text(encoding="utf-8")
        for line in split_jsonl(text):
            where = f"{name}/{_PAYLOADS} line {line.number}"
            payload = self._payload(directory, line.text(), where)
            if format_filter is None or payload.format is format_filter:
                payloads.append(payload)
        return payloads

    def _payload(self, directory: Path, line: str, where: str) -> Payload:
        from rampart.codec import parse_strict_json

        try:
            record = parse_strict_json(data=line)
        except ValueError as exc:
            raise ValueError(f"{_OWNER}: {where}: not JSON the store reads ({exc})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{_OWNER}: {where}: not a JSON object")
        payload_id = validate_payload_id(record.get("id"), owner=_OWNER, name=f"{where}: id")
        content = record.get("content")
        if not isinstance(content, str):
            raise invalid(_OWNER, f"{where}: content", "a string", content, error=ValueError)
        fmt = PayloadFormat(
            check_choice(_OWNER, f"{where}: format", record.get("format"), sorted(_FORMATS))
        )
        metadata = record.get("metadata", {})
        if not isinstance(metadata, dict):
            raise invalid(_OWNER, f"{where}: metadata", "an object", metadata, error=ValueError)
        artifact = None
        if "artifact" in record:
            artifact = _artifact(directory, record["artifact"], where, payload_id)
        try:
            return Payload(
                id=payload_id, content=content, format=fmt, artifact=artifact, metadata=metadata
            )
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{_OWNER}: {where}: {exc}") from None


def _artifact(directory: Path, reference: object, where: str, payload_id: str) -> Path:
    """The absolute path of a record's ``artifact`` (``artifacts/<file>``), checked.

    The store reads nothing outside the collection's ``artifacts/`` folder: a
    reference that is not a string of that form, or a symbolic link (the file or the
    folder) that leads out of it, is refused, never followed.
    """
    folder, _, filename = reference.partition("/") if isinstance(reference, str) else ("", "", "")
    if (
        folder != _ARTIFACTS
        or PAYLOAD_ID_PATTERN.fullmatch(filename) is None
        or filename
        in {
            ".",
            "..",
        }
    ):
        raise ValueError(
            f"{_OWNER}: {where}: Invalid artifact path {describe(reference)} for payload "
            f"{payload_id!r}; the store writes 'artifacts/<file name>'"
        )
    folder_path = (directory / _ARTIFACTS).resolve()
    if folder_path != directory.resolve() / _ARTIFACTS:
        raise ValueError(
            f"{_OWNER}: {where}: the artifacts directory of artifact {reference!r} of payload "
            f"{payload_id!r} escapes the collection: it resolves outside it (a symbolic "
            "link?); refused"
        )
    artifact = (directory / _ARTIFACTS / filename).resolve()
    if not artifact.is_relative_to(folder_path):
        raise ValueError(
            f"{_OWNER}: {where}: artifact {reference!r} of payload {payload_id!r} escapes "
            "the collection's artifacts/ folder: it resolves outside it (a symbolic link?); "
            "refused"
        )
    if not artifact.is_file():
        raise FileNotFoundError(
            f"{_OWNER}: {where}: Missing artifact: the file of artifact {reference!r} of "
            f"payload {payload_id!r} does not exist"
        )
    return artifact
