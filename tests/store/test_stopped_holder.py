"""The file store's lock held by a stopped process (SIGSTOP, Ctrl-Z): the lock goes with its
process, so a stopped one keeps it; a caller that waits in vain is told so (``busy`` with
``holder.stopped`` and how to go on), not only to wait."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from flow.core.errors import Busy
from tests.contract.driver import ROOT
from workspace.lock import FlowLock

HOLD = """
import sys, time, pathlib
from workspace.lock import FlowLock
with FlowLock(pathlib.Path(sys.argv[1])):
    print("held", flush=True)
    while not pathlib.Path(sys.argv[2]).exists():
        time.sleep(0.05)
"""


def test_a_stopped_holder_is_named_stopped_with_how_to_go_on(tmp_path: Path) -> None:
    folder, release = tmp_path / "flow", tmp_path / "release"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder), str(release)],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, text=True)
    try:
        assert "held" == holder.stdout.readline().strip()
        with pytest.raises(Busy) as running:
            with FlowLock(folder, timeout=0.1):
                pass
        assert "stopped" not in running.value.details["holder"]
        os.kill(holder.pid, signal.SIGSTOP)
        with pytest.raises(Busy) as stopped:
            with FlowLock(folder, timeout=0.1):
                pass
        assert (holder.pid, True) == (stopped.value.details["holder"]["pid"],
                                      stopped.value.details["holder"]["stopped"])
        assert f"kill -CONT {holder.pid}" in stopped.value.hint
    finally:
        os.kill(holder.pid, signal.SIGCONT)
        release.write_text("1")
        holder.wait(timeout=60)
    with FlowLock(folder, timeout=5):  # gone on: the lock is free again
        pass
