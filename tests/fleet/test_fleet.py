"""A fleet on one campaign: harness processes on a real PostgreSQL store, killed at random and
with a database restart in the middle, finish every item exactly once."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.contract.driver import ROOT, SCRIPT
from tests.store.pgserver import Cluster

TICK = {"ORCHESTRATOR_PLUGINS": "tests.fleet.tickflow"}  # one agent task per item


def _items(tmp: Path, n: int) -> Path:
    path = tmp / "items.json"
    path.write_text(json.dumps([{"id": f"item-{i:02d}", "argv": ["start", "tick", f"item-{i:02d}"]}
                                for i in range(n)]))
    return path


def _env(url: str, worker: str, lease_s: str = "3") -> dict[str, str]:
    """A harness's environment: short leases, so a killed holder's item is taken over soon.
    Parking an item after too many claims is not this test's subject (tests/fleet/test_claims
    has it): an item's holder may be killed more than once, and on a busy
    machine a live holder's 3 s lease may run out between its calls, each a claim more, so
    the most claims is set out of reach."""
    return {**os.environ, **TICK, "ORCHESTRATOR_STORE": url, "ORCHESTRATOR_WORKER": worker,
            "ORCHESTRATOR_LEASE_S": lease_s, "ORCHESTRATOR_FOREGROUND_S": lease_s,
            "ORCHESTRATOR_MAX_CLAIMS": "1000",
            "PYTHONPATH": str(ROOT)}


def _define(ws: Path, url: str, items: Path, name: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(ws), "campaign",
                           name, "--items", str(items)], capture_output=True, text=True,
                          env=_env(url, "definer"), timeout=60)
    assert 0 == proc.returncode, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def _worker(ws: Path, url: str, name: str, worker: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "tests.fleet.worker", str(SCRIPT), str(ws),
                             name], cwd=ROOT, env=_env(url, worker), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """kill -9 the harness and the call it is running (its whole process group)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _items_state(url: str, name: str) -> list[tuple[str, str, int]]:
    with psycopg.connect(url) as conn:
        return [(r[0], r[1], r[2]) for r in conn.execute(
            "SELECT item_id, state, done_count FROM campaign_items WHERE campaign = %s "
            "ORDER BY item_id", (name,))]


@pytest.mark.slow
def test_four_harnesses_with_kills_and_a_database_restart_do_every_item_exactly_once(
        tmp_path: Path, pg_cluster: Cluster) -> None:
    """40 items, 4 harness processes killed at random (kill -9, mid-call too) and replaced, one
    database restart: every item done once, every flow finished once, nothing lost."""
    url = pg_cluster.create_db("fleet40")
    ws = tmp_path / "ws"
    _define(ws, url, _items(tmp_path, 40), "sweep")  # the definer's call takes item-00 too
    rng = random.Random(2026)
    workers = {f"w{i}": _worker(ws, url, "sweep", f"w{i}") for i in range(4)}
    kills, restarted, spawned = 0, False, 4
    deadline = time.monotonic() + 420
    while time.monotonic() < deadline:
        time.sleep(rng.uniform(0.5, 1.5))
        done = sum(1 for _, state, _ in _items_state(url, "sweep") if state == "done")
        if not restarted and done >= 10:
            pg_cluster.restart()
            restarted = True
        if kills < 6 and done < 36:
            victim = rng.choice(sorted(workers))
            _kill(workers.pop(victim))
            kills += 1
            spawned += 1
            workers[f"w{spawned}"] = _worker(ws, url, "sweep", f"w{spawned}")
        if all(p.poll() is not None for p in workers.values()):
            break
    for proc in workers.values():
        if proc.poll() is None:
            _kill(proc)
    assert restarted and 6 == kills
    rows = _items_state(url, "sweep")
    assert [(f"item-{i:02d}", "done", 1) for i in range(40)] == rows
    with psycopg.connect(url) as conn:
        flows = conn.execute("SELECT flow_id, state FROM flows ORDER BY flow_id").fetchall()
        done_events = conn.execute(
            "SELECT flow_id, count(*) FROM audit WHERE convert_from(record, 'UTF8')::jsonb "
            "->> 'event' = 'done' GROUP BY flow_id ORDER BY flow_id").fetchall()
    assert [f"tick/item-{i:02d}" for i in range(40)] == [f for f, _ in flows]
    assert {"ticked"} == {json.loads(bytes(s))["result"]["outcome"] for _, s in flows}
    assert [(f"tick/item-{i:02d}", 1) for i in range(40)] == [(f, n) for f, n in done_events]
