"""Argument checks shared by the file sinks."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["check_filename", "check_output_dir"]


def check_output_dir(owner: str, value: object) -> Path:
    """``output_dir`` as a :class:`Path`; it must be a non-empty ``str`` or a ``PathLike``."""
    if isinstance(value, str):
        if not value:
            raise ValueError(f"{owner}: output_dir must be a non-empty path")
        return Path(value)
    if isinstance(value, os.PathLike):
        path = Path(value)
        if not str(path):
            raise ValueError(f"{owner}: output_dir must be a non-empty path")
        return path
    raise TypeError(f"{owner}: output_dir must be a Path or str, got {type(value).__name__}")


def check_filename(owner: str, value: object) -> str:
    """A bare file name: non-empty, no directory part, not ``.``/``..``."""
    if not isinstance(value, str):
        raise TypeError(f"{owner}: filename must be a str or None, got {type(value).__name__}")
    separators = {os.sep, os.altsep or os.sep, "/"}
    if (
        not value
        or value in {".", ".."}
        or "\x00" in value
        or any(sep in value for sep in separators)
    ):
        raise ValueError(
            f"{owner}: filename must be a bare file name without directories, got {value!r}"
        )
    return value
