"""A daemon that starts its final program with an environment of its own (no run mark) and
in a session of its own still ends with the run that started it: in the foreground and as a
background job (the runner is its subreaper and ends the orphans it adopted)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from flow.core import proc
from tests.contract.driver import Driver
from tests.proc import gone

DAEMON = Path(__file__).resolve().parent / "daemonize.py"


def _marked(pid: str) -> bool:
    return proc.MARK_ENV.encode() in Path(f"/proc/{pid}/environ").read_bytes()


def test_a_foreground_run_ends_a_daemon_with_its_own_environment(tmp_path: Path) -> None:
    """``proc.run`` ends it when the run ends, and the result's reason names its pid."""
    pid_file = tmp_path / "daemon.pid"
    res = proc.run([sys.executable, str(DAEMON), str(pid_file)], log=tmp_path / "l.log",
                   timeout=60)
    daemon = pid_file.read_text()
    assert (0, True) == (res.code, gone(daemon)), res.output
    assert f"pids {daemon}" in res.reason


def test_the_daemon_really_escapes_the_mark_and_the_group(tmp_path: Path) -> None:
    """The fixture is what it claims: unmarked, in a session of its own (ended by hand)."""
    pid_file = tmp_path / "daemon.pid"
    import subprocess

    subprocess.run([sys.executable, str(DAEMON), str(pid_file)], check=True, timeout=60,
                   env={**os.environ, proc.MARK_ENV: "x" * 32})
    daemon = int(pid_file.read_text())
    try:
        assert not _marked(str(daemon))
        assert os.getsid(daemon) not in (os.getsid(0), daemon)  # the middle one's session
    finally:
        os.kill(daemon, 9)


def test_a_job_ends_a_daemon_with_its_own_environment(tmp_path: Path) -> None:
    """A background job's supervisor ends it with the job; the job's log names its pid."""
    pid_file = tmp_path / "daemon.pid"
    script = (f"import runpy, sys\nsys.argv = ['d', {str(pid_file)!r}]\n"
              f"runpy.run_path({str(DAEMON)!r}, run_name='__main__')\n")
    drv = Driver(tmp_path, {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow",
                            "JOBFLOW_SCRIPT": script})
    drv.call(["start", "jobs", "d"])
    stop = time.monotonic() + 60
    while True:
        spec = drv.call(["--flow", "jobs/d", "--resume"]).spec
        assert spec is not None
        if spec["status"] != "waiting" or time.monotonic() > stop:
            break
        time.sleep(0.3)
    daemon = pid_file.read_text()
    assert ("done", True) == (spec["status"], gone(daemon))
    assert f"pids {daemon}" in (tmp_path / "jobs" / "d" / "logs" / "main.log").read_text()
