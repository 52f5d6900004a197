"""A harness of the fleet tests, as a process: it runs the campaign command and follows the
JSON it prints, exactly as a harness's loop does (feed each task from the toy scenario's
answers, answer a person's question with the first option, run the campaign command again
when an item is done), until the campaign says it is finished.

``python -m tests.fleet.worker SCRIPT WORKSPACE CAMPAIGN`` with ``ORCHESTRATOR_STORE`` and
``ORCHESTRATOR_WORKER`` set. A call that fails on the store (exit 3 with poll_after_s: the
database restarting) is run again after a pause, as a harness would. Writes one line per call
to stdout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.contract.toyflow import answer as toy_answer


def _call(command: list[str] | str) -> tuple[int, dict[str, Any] | None]:
    proc = subprocess.run(command, shell=isinstance(command, str), capture_output=True,
                          text=True, timeout=120)
    out = proc.stdout.strip()
    return proc.returncode, json.loads(out) if out.startswith("{") else None


def main(script: str, workspace: str, campaign: str) -> int:
    start = [sys.executable, script, "--workspace", workspace, "campaign", campaign]
    command: list[str] | str = start
    for _ in range(2000):
        code, spec = _call(command)
        print(json.dumps({"code": code, "status": spec and spec.get("status"),
                          "flow": spec and spec.get("flow_id")}), flush=True)
        if spec is None or spec["status"] == "error":
            time.sleep(0.3)  # the store is restarting, or a lock is busy: run it again
            command = start
            continue
        status = spec["status"]
        if status == "done":
            if spec.get("outcome") == "campaign_finished":
                return 0
            if spec.get("outcome") == "nothing_free":
                time.sleep(0.5)
            command = start
        elif status in {"need_agent", "waiting"}:
            task = spec["tasks"][0]
            Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
            command = task["feed_command"]
        elif status == "need_human":
            command = spec["options"][0]["command"]
        else:
            command = start
    return 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
