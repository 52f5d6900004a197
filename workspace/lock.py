"""The per-flow lock: one writer at a time, a bounded wait, and who holds it when busy.

The lock itself is ``flock(2)`` on the folder's ``.lock`` file (``Flock``), polled until the
wait runs out. Every call that changes a flow takes it, so it is kept to the standard
library: the ``filelock`` package this used to wrap does the same ``flock`` but imports
``logging``, ``secrets``, ``decimal``, ``dataclasses`` and ``inspect`` to do it (17 to 30 ms,
the largest single import of a ``--feed``). POSIX only, as the rest of the runner.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from flow.core.errors import Busy, EnvironmentFault
from workspace.atomic import NOFOLLOW, read_nofollow, refuse_symlink, write_nofollow

ENV_LOCK_TIMEOUT = "ORCHESTRATOR_LOCK_TIMEOUT"
DEFAULT_TIMEOUT = 10.0


class FlowLock:
    """Context manager around ``Flock`` for one flow folder.

    Raises ``Busy`` (exit 3) naming the holder (pid, command, since) once the wait runs out.
    """

    def __init__(self, folder: Path, timeout: float | None = None) -> None:
        self.folder = folder
        self.path = folder / ".lock"
        self.holder_path = folder / ".lock.holder"
        self.timeout = timeout if timeout is not None else lock_timeout(os.environ)
        self._lock: Flock | None = None

    def __enter__(self) -> FlowLock:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except FileNotFoundError as exc:  # /proc/1/x: a parent that takes no folder
                raise EnvironmentFault(
                    f"the flow folder {str(self.folder)!r} cannot be made: {exc.strerror}",
                    "point --workspace (or ORCHESTRATOR_WORKSPACE) at a folder you can write",
                    code="workspace_unusable") from None
            # .lock is opened without following a link: a planted one is refused by name.
            refuse_symlink(self.path)
            before = _identity(self.folder)
            lock = Flock(str(self.path))
            try:
                lock.acquire(max(deadline - time.monotonic(), 0.0))
            except TimeoutError:
                holder = self.holder()
                stopped = _stopped(holder.get("pid"))
                if stopped:
                    holder["stopped"] = True
                raise Busy(
                    f"flow at {str(self.folder)!r} is locked by another caller: {holder}",
                    (f"the holder, pid {holder.get('pid')} on this machine, is stopped (a "
                     "paused job, Ctrl-Z): it keeps the lock until it goes on; continue it "
                     f"(kill -CONT {holder.get('pid')}) or end it, then run this again"
                     if stopped else
                     f"wait for that call to finish (it holds the lock since "
                     f"{holder.get('since')}); a cron firing can simply retry later")
                    + f". Lock file: {self.path}",
                    holder=holder,
                ) from None
            # While this call waited, the holder may have moved the folder aside (--restart)
            # and a new flow may live at the path: the lock won is then the old folder's.
            # Let it go and lock what is at the path now.
            if before is not None and _identity(self.folder) == before:
                break
            lock.release()
        self._lock = lock
        import json  # the standard library's: the lock is taken before orjson is needed

        info = {"pid": os.getpid(), "command": sys.argv, "since": _now()}
        try:
            write_nofollow(self.holder_path, json.dumps(info).encode())
        except BaseException:
            lock.release()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._lock is not None:
            try:
                self.holder_path.unlink()
            except FileNotFoundError:
                pass
            self._lock.release()
            self._lock = None

    def holder(self) -> dict[str, object]:
        import json

        try:
            data = json.loads(read_nofollow(self.holder_path))
        except (OSError, ValueError):
            return {"pid": None, "command": None, "since": None}
        return data if isinstance(data, dict) else {"raw": data}


def _stopped(pid: object) -> bool:
    """True when ``pid`` is a process of this machine that is stopped (``T``: SIGSTOP,
    Ctrl-Z): the file store's lock goes with its process, and a stopped one keeps it."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    fields = stat.rpartition(b")")[2].split()
    return bool(fields) and fields[0] in (b"T", b"t")


class Flock:
    """An exclusive ``flock(2)`` on one file, held from ``acquire`` to ``release``. The file
    is opened without following a symbolic link and is not inherited by children; the lock
    goes with the process (a killed holder frees it)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, timeout: float) -> None:
        """Win the lock within ``timeout`` seconds (one try at 0), else ``TimeoutError``."""
        import fcntl

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | NOFOLLOW, 0o666)
        deadline, pause = time.monotonic() + timeout, 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    os.close(fd)
                    raise TimeoutError(f"{self.path} is locked") from None
                time.sleep(min(pause, max(deadline - time.monotonic(), 0.0)))
                pause = min(pause * 2, 0.05)
                continue
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the only descriptor lets the lock go


def lock_timeout(env: Mapping[str, str]) -> float:
    """``ORCHESTRATOR_LOCK_TIMEOUT`` in seconds (default 10); ``SettingError`` if unusable."""
    from flow.core.bounds import Range, setting

    return float(setting(env, ENV_LOCK_TIMEOUT, Range(0, 86400, whole=False,
                                                      unit="of seconds"), DEFAULT_TIMEOUT))


def _identity(folder: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
