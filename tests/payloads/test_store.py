"""``PayloadStore``: RAMPART's layout, name checks, atomic saves and synchronous loads."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from rampart.core.types import Payload, PayloadFormat
from rampart.payloads import DEFAULT_ROOT, PayloadStore


def _payloads(tmp_path: Path) -> list[Payload]:
    artifact = tmp_path / "source.docx"
    artifact.write_bytes(b"PK fake docx")
    return [
        Payload(content="one", id="p-1", metadata={"k": [1, 2]}),
        Payload(content="two", id="p-2", format=PayloadFormat.MARKDOWN),
        Payload(content="three", id="p-3", format=PayloadFormat.DOCX, artifact=artifact),
    ]


class TestLayout:
    def test_save_writes_rampart_layout(self, tmp_path: Path) -> None:
        """manifest.json (indent 2), payloads.jsonl and artifacts/<id><ext>."""
        store = PayloadStore(root=tmp_path / "store")
        path = store.save("suite", payloads=_payloads(tmp_path), provenance={"by": "test"})
        assert path == tmp_path / "store" / "suite"
        manifest = json.loads((path / "manifest.json").read_text())
        assert manifest == {
            "collection": "suite",
            "count": 3,
            "formats": ["docx", "markdown", "text"],
            "provenance": {"by": "test"},
        }
        assert (path / "manifest.json").read_text().startswith('{\n  "collection"')
        lines = [json.loads(line) for line in (path / "payloads.jsonl").read_text().splitlines()]
        assert lines[0] == {
            "id": "p-1",
            "content": "one",
            "format": "text",
            "metadata": {"k": [1, 2]},
        }
        assert lines[2]["artifact"] == "artifacts/p-3.docx"
        assert (path / "artifacts" / "p-3.docx").read_bytes() == b"PK fake docx"

    def test_round_trip(self, tmp_path: Path) -> None:
        """load gives the payloads back, artifacts as absolute paths inside the collection."""
        store = PayloadStore(root=tmp_path / "store")
        store.save("suite", payloads=_payloads(tmp_path))
        loaded = store.load("suite")
        assert [(p.id, p.content, p.format) for p in loaded] == [
            ("p-1", "one", PayloadFormat.TEXT),
            ("p-2", "two", PayloadFormat.MARKDOWN),
            ("p-3", "three", PayloadFormat.DOCX),
        ]
        assert loaded[0].metadata == {"k": [1, 2]}
        artifact = loaded[2].artifact
        assert artifact is not None
        assert artifact.is_absolute()
        assert artifact.parent == (tmp_path / "store" / "suite" / "artifacts").resolve()

    def test_format_filter(self, tmp_path: Path) -> None:
        """``format_filter`` keeps only payloads of that format."""
        store = PayloadStore(root=tmp_path)
        store.save("suite", payloads=_payloads(tmp_path))
        assert [p.id for p in store.load("suite", format_filter=PayloadFormat.MARKDOWN)] == ["p-2"]

    def test_duplicate_artifact_ids_get_distinct_files(self, tmp_path: Path) -> None:
        """Two binary payloads with one id (a generated payload and its rendering) both survive."""
        first, second = tmp_path / "a.docx", tmp_path / "b.docx"
        first.write_bytes(b"A")
        second.write_bytes(b"B")
        store = PayloadStore(root=tmp_path / "s")
        store.save(
            "dup",
            payloads=[
                Payload(content="a", id="same", format=PayloadFormat.DOCX, artifact=first),
                Payload(content="b", id="same", format=PayloadFormat.DOCX, artifact=second),
            ],
        )
        loaded = store.load("dup")
        assert [p.artifact.read_bytes() for p in loaded if p.artifact] == [b"A", b"B"]

    def test_listing_manifest_exists_delete(self, tmp_path: Path) -> None:
        """list_collections (sorted, temp dirs skipped), manifest, exists, delete."""
        store = PayloadStore(root=tmp_path)
        assert store.list_collections() == []
        store.save("b", payloads=[Payload(content="x", id="x")])
        store.save("a", payloads=[Payload(content="y", id="y")])
        (tmp_path / ".a_leftover").mkdir()
        assert store.list_collections() == ["a", "b"]
        assert store.exists("a")
        assert not store.exists("c")
        assert store.manifest("b")["count"] == 1
        store.delete("a")
        assert store.list_collections() == ["b"]
        assert not any(
            entry.name.startswith(".a_") and "deleted" in entry.name for entry in tmp_path.iterdir()
        )

    def test_default_root(self) -> None:
        """The default root is RAMPART's ``.rampart/payloads``."""
        assert PayloadStore().root == DEFAULT_ROOT == Path(".rampart/payloads")
        assert PayloadStore.DEFAULT_ROOT == DEFAULT_ROOT


class TestErrors:
    @pytest.mark.parametrize("name", ["", ".", "..", "a/b", "../x", "x" * 129, "spa ce"])
    def test_names_are_validated_everywhere(self, tmp_path: Path, name: str) -> None:
        """save, load, exists, delete and manifest all refuse unsafe names."""
        store = PayloadStore(root=tmp_path)
        for call in (
            lambda: store.save(name, payloads=[Payload(content="x")]),
            lambda: store.load(name),
            lambda: store.exists(name),
            lambda: store.delete(name),
            lambda: store.manifest(name),
        ):
            with pytest.raises(ValueError, match="collection name must be 1-128 characters"):
                call()

    def test_missing_collection_is_a_clear_file_not_found(self, tmp_path: Path) -> None:
        """The error names the collection, the root and what is there."""
        store = PayloadStore(root=tmp_path)
        store.save("present", payloads=[Payload(content="x", id="x")])
        with pytest.raises(
            FileNotFoundError, match=r"collection 'absent' not found under .*\(saved: present\)"
        ):
            store.load("absent")
        with pytest.raises(FileNotFoundError):
            store.delete("absent")

    def test_empty_list_and_bad_items(self, tmp_path: Path) -> None:
        """Nothing to save, or something that is not a Payload, is refused up front."""
        store = PayloadStore(root=tmp_path)
        with pytest.raises(ValueError, match="payloads is empty"):
            store.save("x", payloads=[])
        with pytest.raises(TypeError, match=r"payloads\[1\] must be a Payload"):
            store.save("x", payloads=[Payload(content="a"), "b"])  # type: ignore[list-item]
        with pytest.raises(ValueError, match=r"payloads\[0\].id must be"):
            store.save("x", payloads=[Payload(content="a", id="../escape")])
        assert store.list_collections() == []

    def test_missing_artifact_on_load(self, tmp_path: Path) -> None:
        """A binary payload whose file vanished is a FileNotFoundError naming it."""
        store = PayloadStore(root=tmp_path / "s")
        path = store.save("suite", payloads=_payloads(tmp_path))
        (path / "artifacts" / "p-3.docx").unlink()
        with pytest.raises(
            FileNotFoundError,
            match=r"Missing artifact: .*artifact 'artifacts/p-3\.docx' of payload 'p-3'",
        ):
            store.load("suite")

    def test_artifact_paths_cannot_escape(self, tmp_path: Path) -> None:
        """A hand-edited record pointing outside the collection is refused."""
        store = PayloadStore(root=tmp_path)
        path = store.save("suite", payloads=[Payload(content="x", id="x")])
        record = {
            "id": "x",
            "content": "x",
            "format": "docx",
            "metadata": {},
            "artifact": "../../etc/passwd",
        }
        (path / "payloads.jsonl").write_text(json.dumps(record) + "\n")
        with pytest.raises(ValueError, match=r"Invalid artifact path '\.\./\.\./etc/passwd'"):
            store.load("suite")

    @pytest.mark.parametrize("artifact", [None, 7, ["artifacts/x.docx"], "artifacts", "x.docx"])
    def test_an_artifact_reference_that_is_not_artifacts_file_is_refused(
        self, tmp_path: Path, artifact: object
    ) -> None:
        """As RAMPART's store: a present ``artifact`` key holds ``'artifacts/<file>'``;
        ``null``, a number, a list or a bare name is an invalid path, not "no artifact"."""
        store = PayloadStore(root=tmp_path)
        path = store.save("suite", payloads=[Payload(content="x", id="x")])
        record = {"id": "x", "content": "x", "format": "docx", "artifact": artifact}
        (path / "payloads.jsonl").write_text(json.dumps(record) + "\n")
        with pytest.raises(ValueError, match="Invalid artifact path"):
            store.load("suite")

    def test_a_collection_is_its_payloads_file(self, tmp_path: Path) -> None:
        """As RAMPART's store: ``payloads.jsonl`` makes a collection (a hand-written one
        without ``manifest.json`` loads); ``manifest()`` then says there is none."""
        store = PayloadStore(root=tmp_path)
        (tmp_path / "hand").mkdir()
        (tmp_path / "hand" / "payloads.jsonl").write_text(
            '{"id": "a", "content": "A", "format": "text"}\n'
        )
        assert store.exists("hand")
        assert store.list_collections() == ["hand"]
        assert [p.content for p in store.load("hand")] == ["A"]
        with pytest.raises(FileNotFoundError, match="No manifest for collection 'hand'"):
            store.manifest("hand")

    @pytest.mark.parametrize("target", ["file", "directory"])
    def test_a_symlink_out_of_artifacts_is_refused(self, tmp_path: Path, target: str) -> None:
        """``artifacts/p-3.docx -> /elsewhere`` (or the folder itself a link) is refused,
        never followed: references outside ``artifacts/`` are not read."""
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "p-3.docx").write_text("secret")
        store = PayloadStore(root=tmp_path / "s")
        path = store.save("suite", payloads=_payloads(tmp_path))
        if target == "file":
            (path / "artifacts" / "p-3.docx").unlink()
            (path / "artifacts" / "p-3.docx").symlink_to(outside / "p-3.docx")
        else:
            shutil.rmtree(path / "artifacts")
            (path / "artifacts").symlink_to(outside, target_is_directory=True)
        with pytest.raises(ValueError, match=r"artifact 'artifacts/p-3\.docx' .*outside"):
            store.load("suite")

    def test_a_symlink_inside_artifacts_is_followed(self, tmp_path: Path) -> None:
        """A link that stays inside ``artifacts/`` is fine."""
        store = PayloadStore(root=tmp_path / "s")
        path = store.save("suite", payloads=_payloads(tmp_path))
        artifacts = path / "artifacts"
        (artifacts / "p-3.docx").rename(artifacts / "real.docx")
        (artifacts / "p-3.docx").symlink_to(artifacts / "real.docx")
        (loaded,) = [p for p in store.load("suite") if p.artifact is not None]
        assert loaded.artifact == (artifacts / "real.docx").resolve()

    @pytest.mark.parametrize(
        ("line", "message"),
        [
            ("[" * 100_000 + "]" * 100_000, "JSON nesting is too deep"),
            ('{"id": "x", "id": "y", "content": "x", "format": "text"}', "duplicate key"),
            ('{"id": "x", "content": "x", "format": "text", "metadata": {"n": NaN}}', "finite"),
        ],
        ids=["nested-100000-deep", "duplicate-key", "nan"],
    )
    def test_hostile_lines_name_the_line(self, tmp_path: Path, line: str, message: str) -> None:
        """payloads.jsonl is read under the codec's one JSON reading policy."""
        store = PayloadStore(root=tmp_path)
        path = store.save("suite", payloads=[Payload(content="x", id="x")])
        with (path / "payloads.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        with pytest.raises(ValueError, match=f"payloads.jsonl line 2: .*{message}"):
            store.load("suite")

    def test_line_separators_in_content_round_trip(self, tmp_path: Path) -> None:
        """Content holding U+2028/U+0085 stays one record (the codec's JSONL framing)."""
        store = PayloadStore(root=tmp_path)
        content = "one\u2028two\x85three\u2029"
        store.save("suite", payloads=[Payload(content=content, id="x")])
        assert [p.content for p in store.load("suite")] == [content]


class TestAtomicity:
    def test_failed_save_keeps_the_old_collection(self, tmp_path: Path) -> None:
        """A save that fails half-way (a missing artifact) leaves the previous version whole
        and no temporary directory behind."""
        store = PayloadStore(root=tmp_path / "s")
        store.save("suite", payloads=[Payload(content="old", id="old")])
        missing = Payload(
            content="new", id="new", format=PayloadFormat.PDF, artifact=tmp_path / "nope.pdf"
        )
        with pytest.raises(FileNotFoundError, match="does not exist"):
            store.save("suite", payloads=[Payload(content="first", id="n1"), missing])
        assert [p.content for p in store.load("suite")] == ["old"]
        assert sorted(e.name for e in (tmp_path / "s").iterdir()) == [".lock", "suite"]

    def test_unserialisable_metadata_fails_before_replacing(self, tmp_path: Path) -> None:
        """Metadata that is not JSON is named, and the old collection stays."""
        store = PayloadStore(root=tmp_path)
        store.save("suite", payloads=[Payload(content="old", id="old")])
        with pytest.raises(
            ValueError,
            match=r"^PayloadStore\.save: payloads\[0\]\.metadata must be JSON-serialisable",
        ):
            store.save("suite", payloads=[Payload(content="x", id="bad", metadata={"x": object()})])
        assert [p.id for p in store.load("suite")] == ["old"]

    def test_replacing_swaps_the_whole_directory(self, tmp_path: Path) -> None:
        """After a replace, nothing of the old version remains (no stale artifacts)."""
        store = PayloadStore(root=tmp_path / "s")
        store.save("suite", payloads=_payloads(tmp_path))
        store.save("suite", payloads=[Payload(content="only", id="only")])
        path = tmp_path / "s" / "suite"
        assert sorted(os.listdir(path)) == ["manifest.json", "payloads.jsonl"]
        assert store.manifest("suite")["count"] == 1

    def test_readers_never_see_a_partial_collection(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """While a replacement is being written, the collection on disk is the old one."""
        store = PayloadStore(root=tmp_path)
        store.save("suite", payloads=[Payload(content="old", id="old")])
        seen: list[list[str]] = []
        # Private seam: the hook between writing the new files and the rename.
        original = PayloadStore._write

        def spying_write(
            self: PayloadStore, directory: Path, payloads: list[Payload], manifest: str
        ) -> None:
            original(self, directory, payloads, manifest)
            seen.append([p.id for p in store.load("suite")])  # mid-save, before the rename

        monkeypatch.setattr(PayloadStore, "_write", spying_write)
        store.save(
            "suite", payloads=[Payload(content="new", id="new1"), Payload(content="n", id="new2")]
        )
        assert seen == [["old"]]
        assert [p.id for p in store.load("suite")] == ["new1", "new2"]
