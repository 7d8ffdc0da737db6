"""``DocxConverter``: the payload as a real Word document (python-docx, optional extra).

The document holds the payload text, one paragraph per line; with ``carrier`` it
starts with that visible paragraph and the payload follows in white 1-point text (a
hidden instruction in an innocent-looking file). The file is written atomically to
``output_dir`` (default: ``<temp dir>/rampart-artifacts``) as
``<payload id>-<content digest>.docx``; the converted payload keeps its id and text,
has ``format=DOCX`` and the file as ``artifact``.

python-docx is needed only here: ``pip install 'rampart[docx]'``. Constructing the
converter without it raises ``ImportError`` naming the extra.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

import anyio.to_thread

from rampart._checks import check_optional_instance, check_path
from rampart.converters._base import converted, require_text
from rampart.core.types import Payload, PayloadFormat

__all__ = ["DOCX_EXTRA_HINT", "DocxConverter"]

DOCX_EXTRA_HINT = "pip install 'rampart[docx]' (or pip install python-docx)"
_OWNER = "DocxConverter"


def _write(path: Path, text: str, carrier: str | None) -> None:
    from docx import Document
    from docx.shared import Pt, RGBColor

    document = Document()
    if carrier is not None:
        document.add_paragraph(carrier)
    for line in text.split("\n"):
        run = document.add_paragraph().add_run(line)
        if carrier is not None:
            run.font.size = Pt(1)
            run.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".docx", dir=path.parent)
    os.close(handle)
    try:
        document.save(temporary)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class DocxConverter:
    """Render a text payload into a ``.docx`` file (see the module docstring)."""

    def __init__(
        self, *, output_dir: str | os.PathLike[str] | None = None, carrier: str | None = None
    ) -> None:
        if importlib.util.find_spec("docx") is None:
            raise ImportError(f"{_OWNER} needs python-docx: {DOCX_EXTRA_HINT}")
        if output_dir is None:
            self._output_dir = Path(tempfile.gettempdir()) / "rampart-artifacts"
        else:
            self._output_dir = check_path(_OWNER, "output_dir", output_dir)
        self._carrier = check_optional_instance(_OWNER, "carrier", carrier, str, expected="a str")

    def __repr__(self) -> str:
        return f"DocxConverter(output_dir={str(self._output_dir)!r})"

    @property
    def output_dir(self) -> Path:
        return self._output_dir

    async def convert_async(self, *, payload: Payload) -> Payload:
        source = require_text(_OWNER, payload)
        digest = hashlib.sha256(f"{source.content}\0{self._carrier}".encode()).hexdigest()[:12]
        path = self._output_dir / f"{source.id}-{digest}.docx"
        try:
            await anyio.to_thread.run_sync(_write, path, source.content, self._carrier)
        except ValueError as exc:  # python-docx refuses control characters (not XML-safe)
            raise ValueError(
                f"{_OWNER}: payload {source.id!r} cannot go into a document: {exc}"
            ) from exc
        return converted(
            source,
            name=_OWNER,
            content=source.content,
            format=PayloadFormat.DOCX,
            artifact=path,
        )
