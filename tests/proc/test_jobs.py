"""Background jobs a flow owns, through the real CLI: waiting within the foreground budget,
resume after the harness or the orchestrator dies, lost jobs, timeouts, caps, secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import SCRIPT, Driver
from tests.proc import gone as _gone
from tests.terminal import on_a_terminal

PLUGIN = {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow"}


def _driver(ws: Path, script: str, **env: str) -> Driver:
    return Driver(ws, {**PLUGIN, "JOBFLOW_SCRIPT": script, **env})


def _resume(drv: Driver, flow: str, **env: str) -> dict[str, Any]:
    call = drv.call(["--flow", flow, "--resume"], extra_env=env or None)
    assert call.spec is not None, call.stderr
    return call.spec


def _until_done(drv: Driver, flow: str, limit: float = 300) -> dict[str, Any]:
    stop = time.monotonic() + limit
    while True:
        spec = _resume(drv, flow)
        if spec["status"] != "waiting" or time.monotonic() > stop:
            return spec
        time.sleep(0.3)


def _start_until(drv: Driver, ws: Path, name: str, marker: Path) -> subprocess.Popen[bytes]:
    """Start `start jobs NAME` in the background; return once the job wrote ``marker``."""
    cli = subprocess.Popen([sys.executable, str(SCRIPT), "--workspace", str(ws), "start",
                            "jobs", name], env=drv.env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    stop = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < stop:
        time.sleep(0.05)
    return cli


def _state(ws: Path, flow: str) -> dict[str, Any]:
    return json.loads((ws / flow / "flow_state.json").read_text())


def test_a_short_job_finishes_inside_the_call(tmp_path: Path) -> None:
    """A job that ends within the foreground budget is waited for: the first call is done."""
    spec = _driver(tmp_path, "print('hello')").call(["start", "jobs", "a"]).spec
    assert spec is not None
    assert ("done", 0, "hello") == (spec["status"], spec["code"], spec["tail"])


def test_a_long_job_answers_waiting_then_resume_reads_its_result(tmp_path: Path) -> None:
    """Past the budget the call answers `waiting` with the job's progress and poll_after_s;
    a later --resume finds it finished and carries on; the clock is the first start's."""
    script = "import time\nfor i in range(4):\n    print('tick', i, flush=True); time.sleep(0.7)"
    drv = _driver(tmp_path, script, ORCHESTRATOR_FOREGROUND_S="1")
    spec = drv.call(["start", "jobs", "b"]).spec
    assert spec is not None and "waiting" == spec["status"] and "job" == spec["waiting_on"]
    job = spec["job"]
    assert job["log_file"].endswith("logs/main.log") and spec["poll_after_s"] >= 5
    assert 0 <= job["elapsed_s"] < job["timeout_s"] and spec["resume_command"].endswith("--resume")
    started = _state(tmp_path, "jobs/b")["jobs"]["work-v1-main"]["started_at"]
    done = _until_done(drv, "jobs/b")
    assert ("done", 0) == (done["status"], done["code"])
    assert "tick 3" in done["tail"]
    record = _state(tmp_path, "jobs/b")["jobs"]["work-v1-main"]
    assert (started, 1) == (record["started_at"], record["starts"])


def test_jobs_started_together_run_side_by_side(tmp_path: Path) -> None:
    """Jobs a step starts with ``start_job`` before waiting run at the same time: each part
    waits for the other's mark, which it could never see if they ran one after the other."""
    script = ("import pathlib, sys, time\n"
              "me = int(sys.argv[1])\n"
              "pathlib.Path(f'mark-{me}').touch()\n"
              "stop = time.monotonic() + 300\n"
              "while not pathlib.Path(f'mark-{1 - me}').exists() and time.monotonic() < stop:\n"
              "    time.sleep(0.05)\n"
              "print('met' if pathlib.Path(f'mark-{1 - me}').exists() else 'alone')\n")
    spec = _driver(tmp_path, script, JOBFLOW_SIDE_BY_SIDE="2").call(["start", "jobs", "pair"]).spec
    assert spec is not None
    assert ("done", [0, 0], ["met", "met"]) == (spec["status"], spec["codes"], spec["tails"])


def _wait_for(condition: Any, what: str, bound: float = 120.0) -> Any:
    """Poll ``condition`` until it answers something true (a busy machine may take long:
    the bound is generous, and only a bound)."""
    stop = time.monotonic() + bound
    while True:
        got = condition()
        if got:
            return got
        assert time.monotonic() < stop, f"waited {bound} s for {what}"
        time.sleep(0.05)


def test_status_shows_a_running_job_with_elapsed_time_and_last_line(tmp_path: Path) -> None:
    """`status --json` and the table name the running job, its elapsed time (growing from
    one look to the next) and its last line; the job runs until the test releases it."""
    release = tmp_path / "release"
    script = (f"import os, time\nprint('building step 7', flush=True)\n"
              f"stop = time.monotonic() + 300\n"
              f"while not os.path.exists({str(release)!r}) and time.monotonic() < stop:\n"
              f"    time.sleep(0.05)\n")
    ws = tmp_path / "ws"
    drv = _driver(ws, script, ORCHESTRATOR_FOREGROUND_S="1.5")
    assert "waiting" == drv.call(["start", "jobs", "s"]).spec["status"]  # type: ignore[index]

    def printed() -> list[dict[str, Any]] | None:
        jobs = drv.call(["status", "--json"]).spec["flows"][0]["jobs"]  # type: ignore[index]
        return jobs if jobs and jobs[0]["last_line"] == "building step 7" else None

    jobs = _wait_for(printed, "the job's first line in status")
    assert "work-v1-main" == jobs[0]["id"] and jobs[0]["elapsed_s"] >= 0
    later = _wait_for(lambda: (lambda j: j if j[0]["elapsed_s"] > jobs[0]["elapsed_s"] else None)(
        drv.call(["status", "--json"]).spec["flows"][0]["jobs"]),  # type: ignore[index]
        "the elapsed time to grow")
    assert "work-v1-main" == later[0]["id"]
    _, table = on_a_terminal(ws, "status", env=drv.env, stderr=False)
    assert "job work-v1-main running" in table and "building step 7" in table
    release.write_text("")
    assert "done" == _until_done(drv, "jobs/s", limit=300)["status"]


def test_kill_9_of_the_orchestrator_never_loses_or_restarts_the_job(tmp_path: Path) -> None:
    """The orchestrator killed mid-wait: the job runs on; --resume finds it and its result,
    and it ran exactly once."""
    marker = tmp_path / "runs.txt"
    script = (f"open({str(marker)!r}, 'a').write('run\\n')\nimport time\ntime.sleep(2)\n"
              "print('finished')")
    drv = _driver(tmp_path / "ws", script, ORCHESTRATOR_FOREGROUND_S="60")
    cli = _start_until(drv, tmp_path / "ws", "k", marker)
    cli.send_signal(signal.SIGKILL)
    cli.wait()
    done = _until_done(drv, "jobs/k")
    assert ("done", 0, "finished") == (done["status"], done["code"], done["tail"])
    assert "run\n" == marker.read_text()


def test_a_vanished_job_is_started_once_more_then_reported_lost(tmp_path: Path) -> None:
    """A supervisor killed outright: its command is ended, the job starts once more; a second
    loss is an honest `lost` result, never a success."""
    pids = tmp_path / "pids"
    script = f"import os, time\nopen({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\ntime.sleep(300)"
    drv = _driver(tmp_path / "ws", script, ORCHESTRATOR_FOREGROUND_S="1")
    assert "waiting" == drv.call(["start", "jobs", "l"]).spec["status"]  # type: ignore[index]
    spec: dict[str, Any] = {}
    for start in (1, 2):
        record = _state(tmp_path / "ws", "jobs/l")["jobs"]["work-v1-main"]
        assert start == record["starts"]
        _wait_for(lambda: pids.exists() and len(pids.read_text().split()) >= start,
                  f"command {start} to start")
        os.kill(record["pid"], signal.SIGKILL)
        _wait_for(lambda: _gone(record["pid"], wait=0), "the killed supervisor to exit")
        # the next --resume finds it gone: started once more (waiting), or, the second
        # time, lost; a --resume that looked before the kill landed just waits again
        spec = _wait_for(lambda: (lambda s: s if s["status"] != "waiting" or _state(
            tmp_path / "ws", "jobs/l")["jobs"]["work-v1-main"]["starts"] > start else None)(
            _resume(drv, "jobs/l")), "a --resume to see the job gone")
    assert ("done", True, -1) == (spec["status"], spec["lost"], spec["code"])
    assert 2 == len(pids.read_text().split())
    for pid in pids.read_text().split():  # none left running
        _wait_for(lambda: _gone(pid, wait=0), f"command {pid} to be ended")


def test_a_job_past_its_timeout_is_ended_and_marked_timed_out(tmp_path: Path) -> None:
    """The job's own deadline ends its process group: exit 124 and timed_out, not a pass."""
    drv = _driver(tmp_path, "import time\nprint('hanging', flush=True)\ntime.sleep(60)",
                  JOBFLOW_TIMEOUT="2", ORCHESTRATOR_FOREGROUND_S="30")
    spec = drv.call(["start", "jobs", "t"]).spec
    assert spec is not None
    if spec["status"] == "waiting":  # a busy machine: the deadline came after the budget
        spec = _until_done(drv, "jobs/t")
    assert ("done", 124, True) == (spec["status"], spec["code"], spec["timed_out"])
    assert "timed out after 2 s" in spec["tail"]


def test_a_job_left_holding_stdout_does_not_hold_the_call(tmp_path: Path) -> None:
    """A job whose command exits leaving `sleep 600 &` behind finishes at once (within the
    call, which a held stdout would keep past the driver's bound), no orphan."""
    script = "import os, sys\nos.system('sleep 600 & echo $! > sleeper.pid')\nsys.exit(1)"
    spec = _driver(tmp_path, script).call(["start", "jobs", "f"]).spec
    assert spec is not None and ("done", 1) == (spec["status"], spec["code"])
    pid = (tmp_path / "jobs" / "f" / "sleeper.pid").read_text().strip()
    assert _gone(pid)


def test_non_utf8_job_output_never_breaks_a_call(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 reach the result with replacement, and resume works."""
    spec = _driver(tmp_path, "import sys; sys.stdout.buffer.write(b'caf\\xe9\\n'); sys.exit(1)"
                   ).call(["start", "jobs", "u"]).spec
    assert spec is not None and ("done", 1, "caf\ufffd") == (spec["status"], spec["code"],
                                                             spec["tail"])


def test_a_token_in_the_environment_never_reaches_the_job_or_the_files(tmp_path: Path) -> None:
    """GITHUB_TOKEN set for the orchestrator is invisible to the job; no file holds it."""
    sentinel = "ghp_sentinel0123456789"
    script = "import os; print(os.environ.get('GITHUB_TOKEN', 'absent'), flush=True)"
    spec = _driver(tmp_path, script, GITHUB_TOKEN=sentinel).call(["start", "jobs", "s"]).spec
    assert spec is not None and "absent" == spec["tail"]
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert sentinel.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("name", ["MY_API_TOKEN", "DEPLOY_KEY"])
def test_a_secret_a_job_was_let_see_is_masked_in_what_is_printed(tmp_path: Path,
                                                                  name: str) -> None:
    """A secret let through to the job (ORCHESTRATOR_PASS_ENV) that the job prints is shown
    as *** in the tail and written so to its log; a name made secret by
    ORCHESTRATOR_SECRET_ENV is masked the same way. No file keeps the value."""
    value = "s3cr3t-value-0123456789"
    script = f"import os; print('key is', os.environ['{name}'], flush=True)"
    spec = _driver(tmp_path, script, **{name: value, "ORCHESTRATOR_PASS_ENV": name,
                                        "ORCHESTRATOR_SECRET_ENV": "DEPLOY_*"}
                   ).call(["start", "jobs", "p"]).spec
    assert spec is not None and ("done", "key is ***") == (spec["status"], spec["tail"])
    assert value not in json.dumps(spec)
    for path in tmp_path.rglob("*"):  # the job's log and its spec file included
        if path.is_file():
            assert value.encode() not in path.read_bytes(), path


def test_100_mib_of_output_keeps_the_orchestrator_small(tmp_path: Path) -> None:
    """A job printing 100 MiB: the log is capped and no process of the call (orchestrator,
    supervisor, job) grows anywhere near the output's size."""
    script = ("import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(100):\n"
              "    sys.stdout.buffer.write(chunk)")
    drv = _driver(tmp_path / "ws", script, ORCHESTRATOR_FOREGROUND_S="60")
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, sys.executable, str(SCRIPT),
                          "--workspace", str(tmp_path / "ws"), "start", "jobs", "m"],
                         capture_output=True, text=True, env=drv.env, timeout=120)
    peak_mib = int(out.stdout.strip()) / 1024
    assert peak_mib < 100, peak_mib
    log = tmp_path / "ws" / "jobs" / "m" / "logs" / "main.log"
    assert log.stat().st_size < 9 * (1 << 20)
    assert "bytes of output cut" in log.read_text(errors="replace")


def test_a_harness_giving_up_on_a_call_ends_its_foreground_children(tmp_path: Path) -> None:
    """SIGTERM to a call running a foreground child ends the child's whole group too."""
    pidfile = tmp_path / "child.pid"
    script = (f"import os, subprocess, time\np = subprocess.Popen(['sleep', '60'])\n"
              f"open({str(pidfile)!r}, 'w').write(str(p.pid))\ntime.sleep(60)")
    drv = _driver(tmp_path / "ws", script, JOBFLOW_FOREGROUND="1")
    cli = _start_until(drv, tmp_path / "ws", "g", pidfile)
    time.sleep(0.2)
    cli.send_signal(signal.SIGTERM)
    assert -signal.SIGTERM == cli.wait(120)
    assert _gone(pidfile.read_text())


def test_refeeding_an_applied_result_while_its_job_runs_changes_nothing(tmp_path: Path) -> None:
    """A re-feed of the applied result, once the job it started has ended, answers the same
    'waiting' spec and leaves the state as it was; only --resume takes the flow on to done."""
    drv = Driver(tmp_path, {"ORCHESTRATOR_PLUGINS": "tests.proc.feedjobflow",
                            "FEEDJOB_SCRIPT": "import time; time.sleep(1.5); print('ran')",
                            "ORCHESTRATOR_FOREGROUND_S": "0.3"})
    task = drv.call(["start", "feedjob", "r"]).spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps({"value": 3}))
    feed = ["--flow", "feedjob/r", "--feed", task["feed_as"], "--feed-file", task["feed_file"]]
    waiting = drv.call(feed).spec
    assert waiting is not None and "waiting" == waiting["status"]
    _wait_for(lambda: list((tmp_path / "feedjob" / "r" / "jobs").glob("*.result.json")),
              "the job to end")
    state = tmp_path / "feedjob" / "r" / "flow_state.json"
    before = state.read_bytes()
    again = drv.call(feed).spec
    assert again is not None and ("waiting", before) == (again["status"], state.read_bytes())
    assert "done" == _until_done(drv, "feedjob/r")["status"]


def test_a_job_child_that_daemonizes_is_ended_with_the_job(tmp_path: Path) -> None:
    """A background job's child that forks, calls setsid and forks again is ended when the
    job ends, and the job's log says which pids escaped."""
    pid_file = tmp_path / "daemon.pid"
    script = ("import os, time\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    if os.fork() == 0:\n"
              f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
              "        time.sleep(60)\n"
              "    os._exit(0)\n"
              f"stop = time.monotonic() + 300\n"
              f"while not os.path.exists({str(pid_file)!r}) and time.monotonic() < stop:\n"
              "    time.sleep(0.05)\n")
    drv = _driver(tmp_path, script)
    drv.call(["start", "jobs", "d"])
    spec = _until_done(drv, "jobs/d")
    daemon = pid_file.read_text()
    assert ("done", True) == (spec["status"], _gone(daemon))
    assert f"pids {daemon}" in (tmp_path / "jobs" / "d" / "logs" / "main.log").read_text()
