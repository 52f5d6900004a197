"""orchestrator.py on a pseudo-terminal, as a person's shell runs it: stdout (and stderr, unless
asked not to) is a terminal of a set width, and the test reads what the person would see."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path

from tests.contract.driver import SCRIPT


class Terminal:
    """One orchestrator.py process whose output goes to a terminal ``columns`` wide."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None, *,
                 columns: int = 100, stderr: bool = True) -> None:
        leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
        settings = {k: v for k, v in {**os.environ, **(env or {})}.items()
                    if k not in {"COLUMNS", "LINES"}}  # the terminal's own size decides
        self.proc = subprocess.Popen([sys.executable, str(SCRIPT), *argv], stdout=follower,
                                     stderr=follower if stderr else subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL, env=settings)
        os.close(follower)
        self.leader = leader
        self.text = ""
        self.closed = False

    def read_until(self, done: Callable[[str], bool], seconds: float = 60) -> str:
        """Read until ``done(all text so far)`` holds, the terminal closes, or ``seconds``
        pass; returns all text so far (lines end in ``\\n``)."""
        deadline = time.monotonic() + seconds
        while not self.closed and not done(self.text) and time.monotonic() < deadline:
            ready, _, _ = select.select([self.leader], [], [], 0.5)
            if not ready:
                continue
            try:
                chunk = os.read(self.leader, 65536)
            except OSError:  # the terminal closes with the child
                chunk = b""
            if not chunk:
                self.closed = True
            self.text += chunk.decode(errors="replace").replace("\r\n", "\n")
        return self.text

    def finish(self, seconds: float = 120) -> tuple[int, str]:
        """Read to the end; the exit code and everything the terminal showed."""
        self.read_until(lambda _: False, seconds)
        try:
            code = self.proc.wait(timeout=30)
        finally:
            self.close()
        return code, self.text

    def close(self) -> None:
        """End the process if it still runs (a test that failed midway) and the terminal."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        if self.leader >= 0:
            os.close(self.leader)
            self.leader = -1

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def on_a_terminal(ws: Path, *argv: str, env: dict[str, str] | None = None, columns: int = 100,
                  stderr: bool = True) -> tuple[int, str]:
    """Run ``orchestrator.py --workspace WS ARGV`` on a terminal to its end."""
    return Terminal(["--workspace", str(ws), *argv], env, columns=columns,
                    stderr=stderr).finish()
