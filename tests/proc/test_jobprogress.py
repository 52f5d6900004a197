"""Progress of long work in ``status``: step k of N of a step's jobs (as the refactor's
local test gate runs one job per shard) and of a batch's entries, with elapsed time and the
running job's last line."""

from __future__ import annotations

import time
from pathlib import Path

from tests.contract.driver import Driver
from tests.terminal import on_a_terminal

PLUGIN = {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow"}


def test_status_counts_the_jobs_of_a_step_done_so_far(tmp_path: Path) -> None:
    script = ("import sys, time\n"
              "print('shard', sys.argv[1], 'going', flush=True)\n"
              "time.sleep(0.2 if sys.argv[1] == '0' else 6)\n")
    drv = Driver(tmp_path, {**PLUGIN, "JOBFLOW_SCRIPT": script, "JOBFLOW_SIDE_BY_SIDE": "2",
                            "ORCHESTRATOR_FOREGROUND_S": "2"})
    assert "waiting" == drv.call(["start", "jobs", "shards"]).spec["status"]  # type: ignore[index]
    row = drv.call(["status", "--json"]).spec["flows"][0]  # type: ignore[index]
    _, table = on_a_terminal(tmp_path, "status", env=drv.env, stderr=False)
    assert ({"done": 1, "of": 2}, "work-v1-part-1", "shard 1 going") == (
        row["progress"]["jobs"], row["jobs"][0]["id"], row["jobs"][0]["last_line"])
    assert "(1 of 2 jobs done): shard 1 going" in table
    stop = time.monotonic() + 60
    while drv.call(["--flow", "jobs/shards", "--resume"]).spec["status"] == "waiting" and \
            time.monotonic() < stop:  # type: ignore[index]
        time.sleep(0.5)


def test_a_batch_shows_its_entry_k_of_n() -> None:
    from flow.cli.jobstate import progress
    from flow.cli.status import steps

    raw = {"data": {"batch_entries": [{"id": "a"}, {"id": "b"}, {"id": "c"}], "batch_index": 1},
           "result": None}
    shown = progress(raw, [])
    assert ({"batch": {"entry": 2, "of": 3}}, " (entry 2 of 3)") == (shown, steps(shown))
