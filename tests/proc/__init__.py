"""Tests of the process runner and of background jobs; shared helpers."""

from __future__ import annotations

import time
from pathlib import Path


def gone(pid: str | int, wait: float = 120.0) -> bool:
    """True once ``pid`` has exited within ``wait`` seconds (a zombie waiting for init to
    reap it has exited). The bound is generous: it returns as soon as the process is gone,
    and a busy machine may take long to deliver and handle a signal."""
    stop = time.monotonic() + wait
    while True:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] in {"Z", "X"}:
                return True
        except OSError:
            return True
        if time.monotonic() > stop:
            return False
        time.sleep(0.05)
