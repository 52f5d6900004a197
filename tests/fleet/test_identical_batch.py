"""One batch started by three harnesses at once (seed: "One flow per input"; a fleet on one
PostgreSQL store): each harness has its own workspace and starts the same ``reproduce
--batch FILE``; the flow id names one flow in the store, so whoever comes second joins it,
and every entry runs once."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from tests.contract.driver import ROOT, SCRIPT
from tests.reproduce.test_identical_starts import RACER

HARNESSES = 3
ENTRIES = ("alpha", "beta", "gamma")
# Each entry's test notes its run in a file outside the tree (one line per run) and fails.
TEST = '''def test_{name}():
    with open({runs!r}, "a") as fh:
        fh.write("{name}\\n")
    assert {name!r} == "fixed"
'''


def _batch(tmp: Path) -> tuple[Path, Path, Path]:
    project, runs = tmp / "proj", tmp / "runs"
    (project / "tests").mkdir(parents=True)
    for name in ENTRIES:
        (project / "tests" / f"test_{name}.py").write_text(TEST.format(name=name,
                                                                     runs=str(runs)))
    batch = tmp / "batch.json"
    batch.write_text(json.dumps([{"id": name, "stage": "nightly",
                                  "command": f"pytest tests/test_{name}.py"}
                                 for name in ENTRIES]))
    return project, batch, runs


def _harness(ws: Path, argv: list[str], env: dict[str, str], ready: Path, go: Path,
             out: list[Any]) -> None:
    """A harness: its first call waits for the common signal; then it answers what each
    call prints (busy: the same start again; waiting: the resume command) until done."""
    first = [sys.executable, str(RACER), str(ready), str(go), "--workspace", str(ws), *argv]
    again = [sys.executable, str(SCRIPT), "--workspace", str(ws), *argv]
    command, calls = first, []
    stop = time.monotonic() + 600
    while time.monotonic() < stop:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        spec = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
        calls.append((done.returncode, spec.get("status"), done.stderr[-1500:]))
        if done.returncode == 3:  # busy: another harness holds the flow; retry the start
            command = again
            time.sleep(0.2)
            continue
        if done.returncode != 0 or spec.get("status") != "waiting":
            out.append((spec, calls))
            return
        time.sleep(min(float(spec.get("poll_after_s") or 1), 0.5))
        command = shlex.split(spec["resume_command"])
    out.append(({}, calls))


def test_three_harnesses_starting_one_batch_run_each_entry_once(tmp_path: Path,
                                                                pg_url: str) -> None:
    from workspace.pgconn import close_all
    from workspace.pgstore import PgFlowStore

    project, batch, runs = _batch(tmp_path)
    argv = ["reproduce", "--profile", "local", "--source-dir", str(project),
            "--batch", str(batch)]
    env = {**os.environ, "ORCHESTRATOR_STORE": pg_url, "PYTHONPATH": str(ROOT)}
    ready, go = tmp_path / "ready", tmp_path / "go"
    ready.mkdir()
    out: list[Any] = []
    threads = [threading.Thread(target=_harness, args=(tmp_path / f"ws{i}", argv, env, ready,
                                                       go, out)) for i in range(HARNESSES)]
    for t in threads:
        t.start()
    stop = time.monotonic() + 300
    while len(list(ready.iterdir())) < HARNESSES and time.monotonic() < stop:
        time.sleep(0.01)
    go.write_text("")
    for t in threads:
        t.join(timeout=900)
    assert len(out) == HARNESSES
    specs = [spec for spec, _ in out]
    assert ["done"] * HARNESSES == [s.get("status") for s in specs], [c for _, c in out]
    flows = {s["flow_id"] for s in specs}
    assert len(flows) == 1
    audit = PgFlowStore(tmp_path / "ws0", flows.pop(), pg_url).audit_lines()
    close_all()
    assert 1 == sum(1 for r in audit if r.get("event") == "created")
    assert sorted(ENTRIES) == sorted(runs.read_text().split())
