"""The suite's temporary files in memory, where the machine allows it.

On a journalled disk, creating, renaming and removing the hundreds of thousands of small files
the builds, checkouts and workspaces are made of cost about a sixth of the suite's CPU
(docs/development.md). ``use`` points ``TMPDIR`` (read by every xdist worker and child, pip and
git included, which inherit it) at a folder of this user's own on the ``/dev/shm`` tmpfs when
that has ``FREE_MIN`` free and the caller chose no ``TMPDIR`` of their own; otherwise, as in a
container with a 64 MB ``/dev/shm``, the files stay on ``/tmp``.
"""
from __future__ import annotations

import os
import stat
import tempfile

MEMORY = "/dev/shm"  # Linux's shared-memory tmpfs (POSIX shm_open), on every glibc system
FREE_MIN = 8 << 30  # the suite's files at their peak with room to spare


def use() -> None:
    """Set ``TMPDIR`` to ``folder()`` unless the caller set one (an xdist worker sees its
    controller's choice so) or there is no such folder."""
    if os.environ.get("TMPDIR"):
        return
    found = folder()
    if found is not None:
        os.environ["TMPDIR"] = found
        tempfile.tempdir = None  # forget a temporary folder already looked up in this process


def folder(root: str = MEMORY, free_min: int = FREE_MIN) -> str | None:
    """This user's folder under ``root`` when ``root`` is a tmpfs mount with ``free_min``
    bytes free and the folder is ``own``; None otherwise."""
    try:
        with open("/proc/mounts") as mounts:
            kinds = {fields[1]: fields[2] for fields in map(str.split, mounts) if len(fields) > 2}
        space = os.statvfs(root)
    except OSError:
        return None
    if kinds.get(root) != "tmpfs" or space.f_bavail * space.f_frsize < free_min:
        return None
    return own(os.path.join(root, f"orchestrator-tests-{os.getuid()}"))


def own(path: str) -> str | None:
    """``path``, made if missing and opened to all as ``/tmp`` is (sticky, 1777: the
    PostgreSQL server's user makes its cluster there; none removes another's files), if it is
    a folder of this user's; None where it is a link, a file or someone else's, as anyone may
    make one first in a folder anyone writes in."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError:
        return None
    found = os.lstat(path)
    if found.st_uid != os.getuid() or not stat.S_ISDIR(found.st_mode):
        return None
    os.chmod(path, 0o1777)
    return path
