"""``status`` reads a background job's own result file: a job that ended is shown finished,
with its exit code and end time, before any call has taken its result into the state."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.contract.driver import Driver
from tests.terminal import on_a_terminal

PLUGIN = {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow"}


def test_a_finished_job_is_finished_in_status_before_a_resume_takes_it(tmp_path: Path) -> None:
    script = "import time\nprint('step 1', flush=True)\ntime.sleep(2)\nraise SystemExit(3)"
    drv = Driver(tmp_path, {**PLUGIN, "JOBFLOW_SCRIPT": script,
                            "ORCHESTRATOR_FOREGROUND_S": "1"})
    assert "waiting" == drv.call(["start", "jobs", "f"]).spec["status"]  # type: ignore[index]
    result = tmp_path / "jobs" / "f" / "jobs" / "work-v1-main.result.json"
    stop = time.monotonic() + 60
    while not result.exists() and time.monotonic() < stop:
        time.sleep(0.1)
    state_before = (tmp_path / "jobs" / "f" / "flow_state.json").read_bytes()
    row = drv.call(["status", "--json"]).spec["flows"][0]  # type: ignore[index]
    _, table = on_a_terminal(tmp_path, "status", env=drv.env, stderr=False)
    assert json.loads(state_before)["jobs"]["work-v1-main"]["result"] is None
    done = row["finished_jobs"][0]
    assert ([], "work-v1-main", 3, True) == (row["jobs"], done["id"], done["code"],
                                            done["ended_at"].endswith("Z"))
    assert "job work-v1-main finished (exit 3)" in table and "running" not in table
