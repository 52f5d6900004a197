"""The job supervisor: started lean (its start-up delays every job), handed the guarded
command and the log header by its starter, and waking the waiting call when it ends."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flow.core import proc

ROOT = Path(__file__).resolve().parents[2]


def test_the_supervisor_imports_only_the_cheap_standard_library() -> None:
    """What `python -I -S` loads to supervise a job: nothing of the orchestrator but the
    supervisor, and none of the modules that made its start-up cost twice as much."""
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); import flow.core.supervisor; "
            "print(' '.join(sorted(sys.modules)))")
    loaded = set(subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True,
                                text=True, check=True).stdout.split())
    ours = {m for m in loaded if m.split(".")[0] in {"flow", "workspace", "agents"}}
    assert {"flow", "flow.core", "flow.core.supervisor"} == ours
    heavy = {"dataclasses", "inspect", "pathlib", "typing", "uuid", "shlex", "fnmatch"}
    assert set() == heavy & loaded


def _job(tmp_path: Path, argv: list[str], env: dict[str, str] | None = None
         ) -> tuple[int, Path, Path]:
    base = tmp_path / "jobs"
    result = base / "j.result.json"
    pid = proc.detach_job(base / "j.json", argv, cwd=str(tmp_path),
                          env=proc.child_env(env), log=str(tmp_path / "j.log"),
                          result=result, pgid=base / "j.pgid", timeout=30)
    return pid, result, tmp_path / "j.log"


def test_the_waiting_call_wakes_when_the_job_ends_not_at_its_timeout(tmp_path: Path) -> None:
    """`await_supervisor` returns once the supervisor has written the result and exited:
    after the job's 0.4 s, long before the 30 s asked for."""
    pid, result, _ = _job(tmp_path, [sys.executable, "-c", "import time; time.sleep(0.4)"])
    started = time.monotonic()
    proc.await_supervisor(pid, 30.0)
    took = time.monotonic() - started
    assert result.exists() and 0.3 < took < 10
    assert 0 == json.loads(result.read_text())["code"]
    stop = time.monotonic() + 5  # end-of-file comes as it exits, a moment before it is reaped
    while pid in proc._detached and time.monotonic() < stop:
        proc.reap()
        time.sleep(0.01)
    assert pid not in proc._detached  # reaped, its pipe closed


def test_a_job_started_elsewhere_is_polled_within_the_timeout(tmp_path: Path) -> None:
    """A pid this process did not start (a job adopted on --resume) is looked at again after
    a short poll, never waited on past the timeout."""
    started = time.monotonic()
    proc.await_supervisor(999_999_999, 5.0)
    assert time.monotonic() - started < 1


def test_the_spec_carries_the_guarded_git_command_and_the_header(tmp_path: Path) -> None:
    """The starter applies the git guard and writes the header; the log starts with the
    command as the caller gave it, while the guarded one is what ran."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    pid, result, log = _job(tmp_path, ["git", "status", "--short"])
    proc.await_supervisor(pid, 30.0)
    proc.reap()
    spec = json.loads((tmp_path / "jobs" / "j.json").read_text())
    assert spec["argv"][:3] == ["git", "-c", "core.fsmonitor="]
    assert spec["header"].startswith("$ git status --short\n(cwd ")
    assert log.read_bytes().startswith(b"$ git status --short\n")
    assert 0 == json.loads(result.read_text())["code"]


def test_a_ready_supervisor_with_no_job_ends_at_once() -> None:
    """Started before its job was known and then not needed: end-of-file on its stdin ends
    it, and it ran nothing."""
    ready = proc.ready_supervisor()
    ready.dismiss()
    assert 0 == ready.child.wait(10)
    proc.reap()


def test_a_ready_supervisor_runs_the_job_it_is_handed_and_is_known_by_its_claim(
        tmp_path: Path) -> None:
    """A ready supervisor takes its job over the pipe (the environment never in a file):
    the job sees that environment, the claim file names the supervisor (its command line
    does not name the spec), so a later call can tell it alive and find it."""
    from flow.core import jobs

    ready = proc.ready_supervisor()
    base = tmp_path / "jobs"
    spec, result = base / "j.json", base / "j.result.json"
    pid = proc.detach_job(spec, ["bash", "-c", "echo $ONLY_HERE; sleep 0.5"], cwd=str(tmp_path),
                          env={"PATH": "/usr/bin:/bin", "ONLY_HERE": "handed"},
                          log=str(tmp_path / "j.log"), result=result, pgid=base / "j.pgid",
                          timeout=30, ready=ready)
    assert pid == ready.pid and str(pid) == proc.claim_file(spec).read_text()
    assert "handed" not in spec.read_text()  # the value came over the pipe only
    assert jobs._alive(pid, spec) and pid == jobs._find_supervisor(spec)
    proc.await_supervisor(pid, 30.0)
    assert result.exists() and 0 == json.loads(result.read_text())["code"]
    assert "handed" in (tmp_path / "j.log").read_text()


def test_a_supervisor_just_past_exec_is_alive_not_lost(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after exec a process has no command line yet (the kernel sets its arguments up
    after the close-on-exec pipe told Popen it started): that is not a zombie. A supervisor
    this process started is asked with waitpid; another's by its /proc state."""
    from flow.core import jobs

    spec = tmp_path / "jobs" / "j.json"
    monkeypatch.setattr(jobs, "_cmdline", lambda pid: b"")
    monkeypatch.setattr(jobs, "_state", lambda pid: "R")
    assert jobs._alive(4242, spec)
    monkeypatch.setattr(jobs, "_state", lambda pid: "Z")
    assert not jobs._alive(4242, spec)
    ready = proc.ready_supervisor()  # ours: its Popen answers, whatever /proc shows
    try:
        assert jobs._alive(ready.pid, spec)
    finally:
        ready.dismiss()
        ready.child.wait(10)
    assert not jobs._alive(ready.pid, spec)


def test_a_ready_supervisor_that_died_is_replaced_by_one_started_as_usual(
        tmp_path: Path) -> None:
    """The job handed to a ready supervisor that is gone (its pipe broke) is not lost: a
    supervisor is started for it the usual way, and the job runs to its result."""
    import os
    import signal

    ready = proc.ready_supervisor()
    os.kill(ready.pid, signal.SIGKILL)
    ready.child.wait(10)
    base = tmp_path / "jobs"
    spec, result = base / "j.json", base / "j.result.json"
    pid = proc.detach_job(spec, ["bash", "-c", "exit 3"], cwd=str(tmp_path),
                          env={"PATH": "/usr/bin:/bin"}, log=str(tmp_path / "j.log"),
                          result=result, pgid=base / "j.pgid", timeout=30, ready=ready)
    assert pid != ready.pid and not proc.claim_file(spec).exists()
    proc.await_supervisor(pid, 30.0)
    assert 3 == json.loads(result.read_text())["code"]
