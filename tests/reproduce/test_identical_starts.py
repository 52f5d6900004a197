"""Many identical starts at once (seed: "One flow per input"; the harness contract's lock):
real processes race to start the same ``reproduce``; exactly one of them creates the flow,
the test runs once, and every caller answers the same flow, on the file store and on the
PostgreSQL store."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.contract.driver import ROOT

RACER = Path(__file__).with_name("racer.py")
CALLERS = 6
ROUNDS = 2
# The test appends one line per run to a file next to the tree (its path is written into
# the test: the run sees a clean environment).
TEST = '''def test_total():
    with open({runs!r}, "a") as fh:
        fh.write("ran\\n")
    assert sum([1, 1]) == 3
'''


def tree(where: Path) -> tuple[Path, Path]:
    """A project with one failing test that notes each run; (the tree, the runs file)."""
    project = where / "proj"
    (project / "tests").mkdir(parents=True)
    runs = where / "runs"
    (project / "tests" / "test_total.py").write_text(TEST.format(runs=str(runs)))
    return project, runs


def start_all(ws: Path | None, argv: list[str], env: dict[str, str], where: Path,
              callers: int = CALLERS, cwd: Path | None = None
              ) -> list[tuple[int, dict[str, Any], str]]:
    """Start ``callers`` identical calls at once (each waits, imports done, for the same
    signal: ``racer.py``) in ``cwd``; (exit code, spec, stderr) of each. ``ws`` None: no
    ``--workspace`` and no ``ORCHESTRATOR_WORKSPACE``, the default ``./agent_space``."""
    full = {**os.environ, **env,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
            # every caller waits for the lock as long as the others need it: the race is
            # what is under test, not the wait's bound
            "ORCHESTRATOR_LOCK_TIMEOUT": "600"}
    if ws is None:
        full.pop("ORCHESTRATOR_WORKSPACE", None)
    given = [] if ws is None else ["--workspace", str(ws)]
    ready, go = where / "ready", where / "go"
    ready.mkdir()
    procs = [subprocess.Popen([sys.executable, str(RACER), str(ready), str(go), *given, *argv],
                              cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=full) for _ in range(callers)]
    stop = time.monotonic() + 600
    while len(list(ready.iterdir())) < callers and time.monotonic() < stop \
            and all(p.poll() is None for p in procs):
        time.sleep(0.01)
    go.write_text("")
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        spec = json.loads(stdout) if stdout.strip().startswith("{") else {}
        out.append((p.returncode, spec, stderr))
    return out


def created(audit: list[dict[str, Any]]) -> list[int]:
    return [r.get("revision") for r in audit if r.get("event") == "created"]


def check_round(results: list[tuple[int, dict[str, Any], str]], runs: Path,
                audit: list[dict[str, Any]]) -> None:
    codes = [code for code, _, _ in results]
    flows = {spec.get("flow_id") for _, spec, _ in results}
    assert codes == [0] * len(results), [err[-2000:] for _, _, err in results]
    assert len(flows) == 1 and None not in flows, flows
    assert {"done"} == {spec["status"] for _, spec, _ in results}
    assert {"REPRODUCED"} == {spec["verdict"]["verdict"] for _, spec, _ in results}
    # one creator; the others joined it and say so
    assert [1] == created(audit), created(audit)
    assert len(results) - 1 == sum(1 for _, spec, _ in results if spec.get("reused_from"))
    revisions = [r["revision"] for r in audit if isinstance(r.get("revision"), int)]
    assert revisions == sorted(revisions) and len(revisions) == len(set(revisions))
    assert ["ran"] == runs.read_text().split()


def _argv(project: Path) -> list[str]:
    return ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir",
            str(project), "--command", "pytest tests/test_total.py"]


def test_identical_starts_at_once_create_one_flow_on_the_file_store(tmp_path: Path) -> None:
    """Six callers start the same reproduce at once, two rounds: one ``created``, the
    test ran once, every caller exits 0 with the same flow id and the same verdict."""
    for n in range(ROUNDS):
        where = tmp_path / f"round{n}"
        project, runs = tree(where)
        ws = where / "ws"
        results = start_all(ws, _argv(project), {}, where)
        [audit_file] = list(ws.rglob("audit.jsonl"))
        audit = [json.loads(line) for line in audit_file.read_text().splitlines()]
        check_round(results, runs, audit)


def test_identical_starts_at_once_create_one_flow_on_postgresql(tmp_path: Path,
                                                                pg_url: str) -> None:
    """The same race on one PostgreSQL store (each round its own inputs, so its own flow)."""
    from workspace.pgconn import close_all
    from workspace.pgstore import PgFlowStore

    for n in range(ROUNDS):
        where = tmp_path / f"round{n}"
        project, runs = tree(where)
        ws = where / "ws"
        results = start_all(ws, _argv(project), {"ORCHESTRATOR_STORE": pg_url}, where)
        flow_id = results[0][1].get("flow_id")
        assert flow_id, results[0][2][-2000:]
        audit = PgFlowStore(ws, flow_id, pg_url).audit_lines()
        close_all()
        check_round(results, runs, audit)

