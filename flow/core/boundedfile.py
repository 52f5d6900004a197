"""Reading a file someone else names, without trusting what it is.

Feed files (``--feed-file``), the GitHub token file (``ORCHESTRATOR_GITHUB_TOKEN_FILE``),
batch files and command files may name anything: a FIFO no one writes (an endless wait), a
character device such as ``/dev/zero`` (an endless read), a directory, a symlink loop, or a
huge file. ``read_regular`` opens the path non-blocking, checks with ``fstat`` on the open
descriptor (no race between check and read) that it is a regular file of at most ``limit``
bytes, and reads at most ``limit + 1`` bytes. Every refusal is an ``UnreadableFile`` saying
why in words (``reason``) and as a short code (``kind``). Standard library only.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

_CHUNK = 1 << 20


class UnreadableFile(Exception):
    """A path that is not a readable regular file of bounded size.

    ``kind``: ``missing`` (cannot be opened: absent, unreadable, a symlink loop),
    ``not_regular`` (a FIFO, device, directory, socket), ``too_large``; ``size`` and
    ``limit`` for ``too_large``.
    """

    def __init__(self, path: str, kind: str, reason: str, size: int = 0, limit: int = 0) -> None:
        super().__init__(f"{path!r} {reason}")
        self.path, self.kind, self.reason, self.size, self.limit = path, kind, reason, size, limit


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; ``UnreadableFile``
    when it cannot be opened, is not a regular file, or is (or grows) larger."""
    where = str(path)
    try:
        fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UnreadableFile(where, "missing", f"cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(where, "not_regular", f"is not a regular file ({kind(info.st_mode)})")
        if info.st_size > limit:
            raise _too_large(where, info.st_size, limit)
        try:
            raw = _read_at_most(fd, limit + 1)
        except OSError as exc:
            raise UnreadableFile(where, "missing", f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(raw) > limit:  # the file grew while we read it
        raise _too_large(where, len(raw), limit)
    return raw


def _too_large(where: str, size: int, limit: int) -> UnreadableFile:
    return UnreadableFile(where, "too_large", f"holds {size} bytes, more than the limit of {limit}",
                          size=size, limit=limit)


def _read_at_most(fd: int, size: int) -> bytes:
    parts: list[bytes] = []
    left = size
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def kind(mode: int) -> str:
    """What a file of ``mode`` is, in words (``a FIFO``, ``a directory``, ...)."""
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"
