"""Atomic file writes: a temporary file in the same folder, fsync, ``os.replace`` (or, for a
file that must never replace one already there, ``os.link``).

``ORCHESTRATOR_FSYNC=off`` skips the fsyncs, as PostgreSQL's ``fsync = off`` does, for a
throwaway workspace (a test suite, a scratch CI run): every write stays atomic and a killed
process still leaves each file whole, old or new; only a crash of the machine itself may lose
the last writes. The default, ``on``, survives that too."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path


FSYNC_ENV = "ORCHESTRATOR_FSYNC"


def durable() -> bool:
    """Whether writes are flushed to disk before they count (``ORCHESTRATOR_FSYNC``: ``on``,
    the default, or ``off``); ``SettingError`` (exit 2, ``bad_setting``) for any other value.
    Read on every write, so a call's own environment decides."""
    raw = os.environ.get(FSYNC_ENV, "").strip().lower()
    if raw in ("", "on"):
        return True
    if raw == "off":
        return False
    from flow.core.errors import SettingError

    raise SettingError(FSYNC_ENV, raw, "on or off")


@contextmanager
def _named(path: str | Path) -> Iterator[None]:
    """An ``OSError`` raised on a descriptor (``os.read`` of a folder opened as the audit
    log, ``os.fstat``, ``os.write``) names no file; give it ``path``, so the error a reader
    sees says which workspace file is wrong."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc.filename, (str, bytes)):
            raise
        raise type(exc)(exc.errno, exc.strerror or str(exc), str(path)) from exc


def write_atomic(path: str | Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new bytes, never a mix.

    An existing file keeps its permission bits (a restored test file, a script); a new one
    gets the usual ``0o666`` less the umask, not ``mkstemp``'s private ``0o600``. The folder is
    created if needed. Raises ``OSError`` on failure; the old file is then intact.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    tmp = _temporary(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    _fsync_dir(path.parent)


def write_new(path: str | Path, data: bytes) -> bool:
    """Create ``path`` holding ``data``, whole or not at all, only if nothing is there: a file
    someone else wrote meanwhile (a harness's own result) is never replaced, even one written
    between a check and the write (the temporary file is linked into place, and a link
    never overwrites). True if it was created, False if something was there."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path, data, 0o666 & ~_umask())
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
    finally:
        _discard(tmp)
    _fsync_dir(path.parent)
    return True


def _temporary(path: Path, data: bytes, mode: int) -> str:
    """A temporary file beside ``path`` holding ``data`` (flushed to disk unless
    ``ORCHESTRATOR_FSYNC=off``) with permission bits ``mode``; removed again on failure."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable():
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, mode)
    except BaseException:
        _discard(tmp)
        raise
    return tmp


def _discard(tmp: str) -> None:
    """Remove a temporary file that was not (or no longer need be) put in place."""
    with suppress(FileNotFoundError):
        os.unlink(tmp)


@cache
def _umask() -> int:
    # os.umask can only be read by setting it; read it once per process and put it back.
    current = os.umask(0o022)
    os.umask(current)
    return current


def _fsync_dir(folder: Path) -> None:
    # The rename is durable only once the directory entry is on disk.
    if not durable():
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# open() flags of every workspace file we write or lock: no link followed, not inherited
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def append_line(path: Path, line: bytes) -> None:
    """Append one line (a newline is added) and fsync; used for the audit log.

    The file is opened without following a symbolic link (``ELOOP`` if one was planted), so
    an append can never land outside the workspace. One ``write`` call per line: a kill
    leaves the line whole or absent.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _named(path):
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o666)
        try:
            size = os.fstat(fd).st_size
            # A line torn by a crash mid-write gets its own line end first, so it stays alone.
            lead = b"\n" if size and os.pread(fd, 1, size - 1) != b"\n" else b""
            os.write(fd, lead + line + b"\n")
            if durable():
                os.fsync(fd)
        finally:
            os.close(fd)


def write_nofollow(path: Path, data: bytes, *, append: bool = False) -> None:
    """Write (or append) ``data`` to a workspace file, never through a symbolic link."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC) | NOFOLLOW
    with _named(path):
        fd = os.open(path, flags, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)


def read_nofollow(path: Path, tail: int | None = None) -> bytes:
    """Read a workspace file (its last ``tail`` bytes if given), never through a symbolic
    link (``OSError`` ``ELOOP`` if one)."""
    with _named(path):
        fd = os.open(path, os.O_RDONLY | NOFOLLOW)
        with os.fdopen(fd, "rb") as fh:
            if tail is not None:
                size = os.fstat(fh.fileno()).st_size
                fh.seek(max(size - tail, 0))
            return fh.read()


def refuse_symlink(path: Path) -> None:
    """Raise ``OSError(ELOOP)`` if ``path`` is a symbolic link (for folders we write into)."""
    import errno

    if path.is_symlink():
        raise OSError(errno.ELOOP, "is a symbolic link; the orchestrator does not follow "
                                   "links in its workspace", str(path))
