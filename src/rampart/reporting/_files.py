"""Create report files atomically, under names that never replace an existing file.

The content goes to a hidden temporary file in the target directory, is flushed and
fsynced, then published with :func:`os.link`, which fails instead of replacing an
existing name. So a reader never sees a partial file under a report name, and two
writers (threads, processes, xdist controllers sharing a directory) never clobber
each other: the loser of a name race retries with a random suffix.

On a filesystem without hard links the file is created with ``O_CREAT | O_EXCL``
under its final name instead; that also never replaces a file, but a crash in the
middle of the write could leave a truncated report behind.

The temporary file is named ``.rampart-tmp.<stem>.<32 hex>.tmp``, so a copy left
behind by a killed process is recognisable: :func:`remove_stale_temporaries` deletes
such files (and the ``.run_report_*`` / ``.traces_*`` temporaries of earlier
versions) once they are older than a given time, and nothing else.

These functions block; sinks run them in a worker thread.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rampart._checks import message

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    #: File content: the bytes, or a function giving them in chunks (called again if
    #: the content must be written a second time).
    Content = bytes | Callable[[], Iterable[bytes]]

__all__ = [
    "STAMP_PATTERN",
    "check_output_dir",
    "output_file",
    "prune_stamped",
    "remove_stale_temporaries",
    "replace_file",
    "utc_timestamp",
    "write_new_file",
]

_OUTPUT_DIR = "a directory, or a path where one can be created"

# A UUID suffix colliding twice is not a realistic event; the bound only guarantees
# the loop ends if something else keeps answering "exists".
_MAX_ATTEMPTS = 16


#: The time stamp :func:`utc_timestamp` writes, as a regular expression.
STAMP_PATTERN = r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}"


def utc_timestamp() -> str:
    """The current UTC time as ``YYYY-mm-ddTHH-MM-SS-mmm`` (filename-safe, ms precision)."""
    now = datetime.now(UTC)
    return f"{now:%Y-%m-%dT%H-%M-%S}-{now.microsecond // 1000:03d}"


def _candidate_names(stem: str, suffix: str) -> list[str]:
    return [f"{stem}{suffix}"] + [
        f"{stem}_{uuid.uuid4().hex}{suffix}" for _ in range(_MAX_ATTEMPTS - 1)
    ]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


# Chunks are gathered up to this size before each write.
_BUFFER_BYTES = 1 << 20


def _write_content(fd: int, data: Content) -> None:
    if isinstance(data, bytes):
        _write_all(fd, data)
        return
    buffer = bytearray()
    for chunk in data():
        buffer += chunk
        if len(buffer) >= _BUFFER_BYTES:
            _write_all(fd, bytes(buffer))
            buffer.clear()
    if buffer:
        _write_all(fd, bytes(buffer))


def _fsync_directory(directory: Path) -> None:
    # Makes the new directory entry durable. Best effort: some platforms and
    # filesystems cannot open or fsync a directory, and the report is complete
    # without it.
    flags = getattr(os, "O_DIRECTORY", None)
    if flags is None:
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY | flags)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


_TEMP_PREFIX = ".rampart-tmp."
# Ours: ``.rampart-tmp.<stem>.<hex>.tmp``; earlier versions: ``.run_report_<...>.<hex>.tmp``
# and ``.traces_<...>.<hex>.tmp``.
_STALE = re.compile(r"\A(?:\.rampart-tmp\..+|\.(?:run_report|traces)_[^/]*)\.[0-9a-f]{32}\.tmp\Z")


def remove_stale_temporaries(directory: Path, *, older_than: float) -> list[Path]:
    """Delete the temporary files rampart left in ``directory`` before ``older_than``.

    Only regular files whose names rampart's writers use (``.rampart-tmp.*.<32 hex>.tmp``
    and the ``.run_report_*`` / ``.traces_*`` temporaries of earlier versions) and whose
    modification time (seconds since the epoch) is before ``older_than`` are removed;
    anything else, and a file still being written, is left alone. Returns the removed
    paths; a file that cannot be removed is skipped.
    """
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not _STALE.match(entry.name):
            continue
        try:
            if not entry.is_file(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_mtime >= older_than:
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(directory / entry.name)
    return removed


def _write_temp(directory: Path, stem: str, data: Content) -> Path:
    temp = directory / f"{_TEMP_PREFIX}{stem}.{uuid.uuid4().hex}.tmp"
    _write_exclusive(temp, data)
    return temp


def _write_exclusive(path: Path, data: Content) -> None:
    """Create ``path`` exclusively and write ``data`` into it, durably (fsynced).

    On failure the partial file is removed. Used for temp files, and as the fallback
    publish step where hard links are unavailable.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        _write_content(fd, data)
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


def _publish_by_link(temp: Path, directory: Path, names: list[str]) -> Path | None:
    """Hard-link ``temp`` under the first free name; ``None`` if links are unsupported."""
    for name in names:
        final = directory / name
        try:
            os.link(temp, final)
        except FileExistsError:
            continue
        except OSError:
            # No hard links here (FAT, some network or container filesystems).
            return None
        return final
    raise _no_free_name(directory, names[0])


def _publish_exclusive(directory: Path, names: list[str], data: Content) -> Path:
    for name in names:
        final = directory / name
        try:
            _write_exclusive(final, data)
        except FileExistsError:
            continue
        return final
    raise _no_free_name(directory, names[0])


def _no_free_name(directory: Path, first: str) -> FileExistsError:
    return FileExistsError(
        f"Unable to reserve a unique filename for {first} in {directory} "
        f"after {_MAX_ATTEMPTS} attempts"
    )


def _blocking_file(directory: Path) -> str | None:
    """How ``directory`` is blocked by a file: ``"an existing file"``, ``"under an
    existing file"``, or ``None`` when nothing on its path is a file."""
    if directory.exists():
        return None if directory.is_dir() else "an existing file"
    for parent in directory.parents:
        if parent.exists():
            return None if parent.is_dir() else "under an existing file"
    return None


def _not_a_directory(owner: str, directory: Path, why: str) -> NotADirectoryError:
    shown = f"{str(directory)!r} ({why})"
    return NotADirectoryError(message(owner, "output_dir", _OUTPUT_DIR, directory, shown=shown))


def check_output_dir(owner: str, directory: Path) -> Path:
    """``directory``, unless it (or a parent) is an existing file: then a
    ``NotADirectoryError`` naming ``owner``'s ``output_dir`` and what was expected."""
    why = _blocking_file(directory)
    if why is not None:
        raise _not_a_directory(owner, directory, why)
    return directory


def write_new_file(
    directory: Path, *, stem: str, suffix: str, data: Content, owner: str = "write_new_file"
) -> Path:
    """Write ``data`` to a new file ``<stem><suffix>`` in ``directory``; return its path.

    ``data`` is the content, or a function returning it in chunks (so a large report is
    never whole in memory); the function may be called a second time on a filesystem
    without hard links.

    If that name is taken, ``<stem>_<uuid hex><suffix>`` is used instead. An existing
    file is never replaced and the final name never holds a partial file. The
    directory is created if missing; if it (or a parent) is a file, the error is a
    ``NotADirectoryError`` naming ``owner``'s ``output_dir``. Raises
    :class:`FileExistsError` if no free name is found after a bounded number of attempts.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        why = _blocking_file(directory)
        if why is None:  # pragma: no cover - a race: the file went away again
            raise
        raise _not_a_directory(owner, directory, why) from None
    names = _candidate_names(stem, suffix)
    temp = _write_temp(directory, stem, data)
    try:
        final = _publish_by_link(temp, directory, names)
    finally:
        temp.unlink(missing_ok=True)
    if final is None:
        final = _publish_exclusive(directory, names, data)
    _fsync_directory(directory)
    return final


# -- a file the user names (--rampart-sarif PATH, rampart report --json OUT) ------------

_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def output_file(path: Path) -> Path:
    """Where a file the user named is written: ``path`` itself if it is new or a regular
    file, the file a symbolic link names (so the link stays), else a ``ValueError``.

    A FIFO, a device, a socket or a directory is refused and left alone (replacing it by
    a regular file through a rename would destroy it; as root, ``/dev/full`` became a
    file), and so is a missing folder: it is never created for a path the user named.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise ValueError(f"{path}: cannot be written ({error.strerror or error})") from None
    if mode is not None:
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _NOT_REGULAR if test(mode)), "not a file")
            raise ValueError(
                f"{path}: is {kind}, not a regular file; name a regular file or a new one"
            )
        return path.resolve() if path.is_symlink() else path
    if path.is_symlink():
        raise ValueError(f"{path}: is a symbolic link to nothing; name a regular file")
    if not path.parent.is_dir():
        raise ValueError(
            f"{path}: the folder {path.parent} does not exist (it is not created for you)"
        )
    return path


def replace_file(path: Path, data: bytes) -> Path:
    """Write ``data`` to the file the user named at ``path`` atomically: a temporary
    file in the same folder, renamed over it (a reader sees the old file or the new
    one, never a part). ``output_file`` decides what may be written."""
    target = output_file(path)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def prune_stamped(
    directory: Path, prefix: str, suffix: str, *, keep: int, protect: Path | None = None
) -> list[str]:
    """Remove all but the ``keep`` newest regular files of ``directory`` named
    ``<prefix><stamp>...<suffix>`` (a :func:`utc_timestamp`, then only ``-``, ``_`` and
    hex digits: a collision suffix or a run id), newest by name; ``protect`` counts
    among them but is never removed.
    Nothing else is touched. Returns a message per file that could not be removed."""
    named = re.compile(re.escape(prefix) + STAMP_PATTERN + r"[-_0-9a-f]*" + re.escape(suffix))
    try:
        children = sorted(directory.iterdir())
    except OSError as error:
        return [f"{directory}: cannot be listed ({error.strerror or error})"]
    candidates = []
    for child in children:
        if not named.fullmatch(child.name):
            continue
        try:
            if stat.S_ISREG(child.lstat().st_mode):
                candidates.append(child)
        except OSError:
            continue
    failures = []
    for old in candidates[: max(0, len(candidates) - keep)]:
        if old == protect:
            continue
        try:
            old.unlink()
        except FileNotFoundError:
            continue  # another process removed it first
        except OSError as error:
            failures.append(f"{old}: cannot be removed ({error.strerror or error})")
    return failures
