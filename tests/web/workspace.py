"""A workspace made by running real flows through ``orchestrator.py``, and a live ``serve``.

Every flow here is started and fed as a harness does: the orchestrator runs as a child
process, results are written to the printed ``feed_file`` and the printed ``feed_command`` is
run. ``tests/web`` browses what that leaves; ``tests/web/screenshots.py`` pictures it.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests import forkserver

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "orchestrator.py"
PLUGINS = "tests.contract.toyflow,tests.web.notesflow"
FAKE_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # token-shaped, never a real one
HOSTILE_NOTE = "<script>window.pwned = 1</script><img src=x onerror=\"window.pwned = 2\">"
HOSTILE_LINK = "javascript:window.pwned = 3"
MAIN_JOB = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"


def env(**extra: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    return {**base, "ORCHESTRATOR_PLUGINS": PLUGINS, "PYTHONPATH": str(ROOT), **extra}


def call(root: Path, *argv: str, **extra: str) -> dict[str, Any]:
    """One orchestrator call in a child process; its one JSON object."""
    proc = subprocess.run([forkserver.python("orchestrator"), str(SCRIPT), "--workspace",
                           str(root), *argv], capture_output=True, text=True, env=env(**extra),
                          cwd=ROOT, timeout=300)
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def feed(task: dict[str, Any], content: dict[str, Any], **extra: str) -> dict[str, Any]:
    """Write ``content`` to the task's feed_file and run its printed feed_command."""
    Path(task["feed_file"]).write_text(json.dumps(content), encoding="utf-8")
    proc = subprocess.run(shlex.split(task["feed_command"]), capture_output=True, text=True,
                          env=env(**extra), timeout=300)
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def build(root: Path, hostile: bool = True, **extra: str) -> dict[str, str]:
    """The flows the dashboard tests look at, by role -> flow id (``hostile``: with the two
    flows carrying hostile text; ``extra``: settings for every call, such as
    ``ORCHESTRATOR_STORE`` to make them in a PostgreSQL store)."""
    flows: dict[str, str] = {}
    main = call(root, "reproduce", "--profile", "local", "--source-dir",
                str(ROOT / "examples" / "calc"), "--command", MAIN_JOB, **extra)
    assert ("done", "REPRODUCED") == (main["status"], main.get("outcome")), main
    flows["main"] = main["flow_id"]
    if hostile:
        hostile_cmd = call(root, "reproduce", "--profile", "local", "--source-dir",
                           str(ROOT / "examples" / "calc"), "--command",
                           f"pytest tests/test_calc.py::test_add -k '{HOSTILE_NOTE}'", **extra)
        flows["hostile_command"] = hostile_cmd["flow_id"]
    toy = call(root, "start", "toy", "ship", **extra)
    for task in toy["tasks"]:
        spec = feed(task, {"ok": True, "value": 2}, **extra)
    spec = feed(spec["tasks"][0], {"approved": True}, **extra)
    assert "need_human" == spec["status"], spec
    flows["person"] = spec["flow_id"]
    waiting = call(root, "start", "notes", "pending", **extra)
    assert "need_agent" == waiting["status"], waiting
    flows["agent"] = waiting["flow_id"]
    if not hostile:
        return flows
    hostile = call(root, "start", "notes", "hostile", **extra)
    done = feed(hostile["tasks"][0], {"note": f"{HOSTILE_NOTE} token {FAKE_TOKEN}",
                                      "link": HOSTILE_LINK}, **extra)
    assert "done" == done["status"], done
    flows["hostile"] = done["flow_id"]
    return flows


def start_slow_job(root: Path, source: Path, ticks: int = 120) -> str:
    """A reproduce flow whose stage-1 job prints ``tick N`` every 0.25 s: the call returns
    after a 1 s foreground budget with the job still running in the background."""
    script = source / "slow.py"
    script.write_text("import time\n"
                      f"for i in range({ticks}):\n"
                      "    print(f'tick {i}', flush=True)\n"
                      "    time.sleep(0.25)\n"
                      "raise SystemExit(1)\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(source)], check=True)
    spec = call(root, "reproduce", "--profile", "local", "--source-dir", str(source),
                "--command", f"python {script}", ORCHESTRATOR_FOREGROUND_S="1")
    for _ in range(20):  # a loaded machine may answer `waiting` on a short earlier job
        assert "waiting" == spec["status"], spec
        if str(spec["job"]["id"]).startswith("stage1"):
            break
        spec = call(root, "--flow", spec["flow_id"], "--resume", ORCHESTRATOR_FOREGROUND_S="1")
    assert str(spec["job"]["id"]).startswith("stage1"), spec
    return str(spec["flow_id"])


def stop_jobs(root: Path, flow_id: str) -> None:
    """End the process groups of the flow's background jobs (started by this test)."""
    for pgid_file in (root / flow_id / "jobs").glob("*.pgid"):
        try:
            os.killpg(int(pgid_file.read_text().strip()), signal.SIGKILL)
        except (ValueError, ProcessLookupError, PermissionError):
            pass


#: the page's poll period in these tests (ORCHESTRATOR_POLL_PERIOD_S; 2 s for a user): a test
#: waiting for the next refresh waits a quarter as long
POLL_PERIOD_S = 0.5


@contextmanager
def serving(root: Path, **extra: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """``orchestrator.py serve`` over ``root`` as a child: its URL and its printed object. The
    page polls every ``POLL_PERIOD_S`` unless ``extra`` says otherwise."""
    extra = {"ORCHESTRATOR_POLL_PERIOD_S": str(POLL_PERIOD_S), **extra}
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--workspace", str(root), "serve"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env(**extra),
                            cwd=ROOT)
    assert proc.stdout is not None
    text, printed = b"", None
    deadline = time.monotonic() + 60
    fd = proc.stdout.fileno()
    while printed is None and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            text += chunk
            try:
                printed = json.loads(text)
            except ValueError:
                continue
    try:
        assert printed is not None, f"serve printed no JSON object: {text!r}"
        yield str(printed["url"]), printed
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:  # the server's own log, shown by pytest when a test fails
            sys.stderr.write(proc.stderr.read().decode(errors="replace"))
