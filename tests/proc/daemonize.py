"""A program that turns itself into a daemon the classic way, for the runner's tests: fork,
setsid, fork again; the last process closes its stdio and starts its final program (``sleep``)
with an environment of its own, so nothing of its starter's settings is left on it.

Usage: ``python daemonize.py PIDFILE``; the starter returns once PIDFILE names the daemon."""

from __future__ import annotations

import os
import sys
import time


def main(pid_file: str) -> None:
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            null = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(null, fd)
            with open(pid_file + ".tmp", "w") as fh:
                fh.write(str(os.getpid()))
            os.rename(pid_file + ".tmp", pid_file)
            os.execve("/bin/sleep", ["sleep", "300"], {"PATH": "/usr/bin:/bin"})
        os._exit(0)
    stop = time.monotonic() + 30
    while not os.path.exists(pid_file) and time.monotonic() < stop:
        time.sleep(0.01)


if __name__ == "__main__":
    main(sys.argv[1])
