"""A call that runs long, and a holder that stops answering, on a real PostgreSQL server with
real processes: a call's heartbeat keeps its lease (and its flow's lock) alive however long
its own run takes, and a holder stopped mid-call (SIGSTOP: its socket stays open, no FIN is
ever sent, its kernel answers TCP keepalives) loses the flow's lock once it has been silent
for ORCHESTRATOR_LOCK_STALE_S, its late save then refused (``fenced``)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.contract.driver import ROOT, SCRIPT, Driver

# The item's run: it says it started, then waits until the test lets it end.
RUN = ("import pathlib, time\n"
       "pathlib.Path({started!r}).write_text('1')\n"
       "while not pathlib.Path({release!r}).exists():\n"
       "    time.sleep(0.05)\n")


def _wait(what: str, ok: Any, bound: float = 90.0) -> Any:
    deadline = time.monotonic() + bound
    while True:
        got = ok()
        if got:
            return got
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)


def _one(url: str, sql: str, params: tuple[Any, ...] = ()) -> Any:
    with psycopg.connect(url) as conn:
        return conn.execute(sql, params).fetchone()


def _env(url: str, tmp: Path, **extra: str) -> dict[str, str]:
    return {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow", "ORCHESTRATOR_STORE": url,
            "JOBFLOW_FOREGROUND": "1", "JOBFLOW_TIMEOUT": "120",
            "JOBFLOW_SCRIPT": RUN.format(started=str(tmp / "started"),
                                         release=str(tmp / "release")), **extra}


def _popen(drv: Driver, argv: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, str(SCRIPT), "--workspace", str(drv.workspace),
                             *argv], env=drv.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _answer(proc: subprocess.Popen[str]) -> tuple[int, dict[str, Any], str]:
    out, err = proc.communicate(timeout=120)
    assert out.strip().startswith("{"), err
    return proc.returncode, json.loads(out), err


def test_a_run_several_leases_long_inside_one_call_keeps_its_item(tmp_path: Path,
                                                                  pg_url: str) -> None:
    """Worker a asks for a 1 s lease; its call's foreground run lasts until the test ends
    it, more than three of those lease lengths. The lease is raised to the call's budget
    (said in lease_note); the call's heartbeat renews it while the run goes on (lease_until
    moves forward, again and again, while the call is still in its run); the item names its
    flow from the flow's first save on; worker b's campaign calls meanwhile find nothing
    free; a's call then finishes the item (one claim, token 1, done once, by a) and, nothing
    else left, says the campaign is finished."""
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": "long", "argv": ["start", "jobs", "long"]}]))
    env = _env(pg_url, tmp_path, ORCHESTRATOR_LOCK_STALE_S="3")
    a = Driver(tmp_path / "A", {**env, "ORCHESTRATOR_WORKER": "a", "ORCHESTRATOR_LEASE_S": "1",
                                "ORCHESTRATOR_FOREGROUND_S": "60"})
    b = Driver(tmp_path / "B", {**env, "ORCHESTRATOR_WORKER": "b", "ORCHESTRATOR_LEASE_S": "1",
                                "ORCHESTRATOR_FOREGROUND_S": "1"})
    call = _popen(a, ["campaign", "c", "--items", str(items)])
    try:
        _wait("a's run started", (tmp_path / "started").exists)
        assert ("jobs/long",) == _one(pg_url, "SELECT flow_id FROM campaign_items")
        seen: list[Any] = []
        rivals = 0
        while True:
            until, held_s, expired = _one(
                pg_url, "SELECT lease_until, extract(epoch FROM now() - leased_at), "
                "lease_until <= now() FROM campaign_items WHERE item_id = 'long'")
            assert not expired and call.poll() is None
            if not seen or until > seen[-1]:
                seen.append(until)
            if len(seen) >= 4 and float(held_s) > 3 * 1 + 1 and rivals >= 2:
                break
            other = b.call(["campaign", "c"])
            assert (0, "nothing_free") == (other.code, other.spec.get("outcome")), other.spec
            rivals += 1
        # the heartbeat's session says what it is to an operator reading pg_stat_activity
        sessions = _one(pg_url, "SELECT array_agg(application_name ORDER BY application_name) "
                                "FROM pg_stat_activity WHERE datname = current_database() AND "
                                "application_name LIKE 'skill-orchestrator%%'")[0]
        (tmp_path / "release").write_text("1")
        code, spec, err = _answer(call)
    finally:
        (tmp_path / "release").write_text("1")
        if call.poll() is None:
            call.kill()
    # the item done, the same call looked for the next one: the campaign is finished
    assert (0, "campaign_finished") == (code, spec["outcome"]), spec
    assert "warning: the lease asked for, 1 s" in err and "raised to 60 s" in err
    row = _one(pg_url, "SELECT state, token, claims, done_count, holder FROM campaign_items")
    assert ("done", 1, 1, 1, "a") == row
    assert ["skill-orchestrator", "skill-orchestrator beat"] == sessions


HOLD = """
import sys, time, pathlib
from workspace import campaign, pgbeat
from workspace.pgconn import connect
url, release = sys.argv[1], pathlib.Path(sys.argv[2])
conn = connect(url)
lease = campaign.claim(conn, "beat", "a", "host-a", 1, 1.0)
beat = pgbeat.Beat(url, "no-flow", 0, 3.0).start()
beat.lease(lease.campaign, lease.item_id, lease.token, lease.lease_s)
print("held", flush=True)
while not release.exists():
    time.sleep(0.05)
beat.stop()
print("done" if campaign.complete(conn, "beat", lease.item_id, lease.token, {}) else "lost")
"""


def test_the_heartbeat_alone_keeps_a_lease_past_three_lease_lengths(tmp_path: Path,
                                                                    pg_url: str) -> None:
    """A process claims an item on a 1 s lease (no floor) and beats while it works; another
    worker's claims find nothing to take for more than three lease lengths; the holder then
    completes the item under its first token."""
    from workspace import campaign
    from workspace.pgconn import connect

    conn = connect(pg_url, fresh=True)
    campaign.define(conn, "beat", "items", [("x", {"argv": ["start", "toy", "x"]})], lease_s=1)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, pg_url, str(tmp_path / "release")],
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, text=True)
    try:
        assert "held" == holder.stdout.readline().strip()
        rivals = 0
        while float(_one(pg_url, "SELECT extract(epoch FROM now() - leased_at) FROM "
                                 "campaign_items")[0]) <= 3 * 1 + 0.5:
            assert campaign.claim(conn, "beat", "b", "host-b", 2) is None
            rivals += 1
            time.sleep(0.1)
        (tmp_path / "release").write_text("1")
        out, _ = holder.communicate(timeout=60)
    finally:
        (tmp_path / "release").write_text("1")
        if holder.poll() is None:
            holder.kill()
    assert rivals > 3 and "done" == out.strip()
    assert ("done", 1, 1) == _one(pg_url, "SELECT state, token, claims FROM campaign_items")


def test_a_stopped_holder_loses_the_flows_lock_within_the_stale_bound(tmp_path: Path,
                                                                      pg_url: str) -> None:
    """Caller a holds the flow's lock in its run and is stopped (SIGSTOP: its session stays
    open, no FIN). Caller b's --resume, whose lock wait is far longer than
    ORCHESTRATOR_LOCK_STALE_S (3 s) but far shorter than TCP keepalive, ends a's session once
    a has been silent that long, takes the lock (audited, naming a) and runs the step to its
    end. a, continued, finds its session gone and its save refused (fenced, exit 3): the flow
    is done once, b's."""
    env = _env(pg_url, tmp_path, ORCHESTRATOR_LOCK_STALE_S="3", ORCHESTRATOR_FOREGROUND_S="60")
    a = Driver(tmp_path / "ws", env)
    b = Driver(tmp_path / "ws", {**env, "ORCHESTRATOR_LOCK_TIMEOUT": "45"})
    first = _popen(a, ["start", "jobs", "j0"])
    second = None
    try:
        _wait("a holds the lock in its run", lambda: (tmp_path / "started").exists() and _one(
            pg_url, "SELECT pid FROM locks WHERE flow_id = 'jobs/j0'") == (first.pid,))
        (tmp_path / "started").unlink()
        os.kill(first.pid, signal.SIGSTOP)
        second = _popen(b, ["--flow", "jobs/j0", "--resume"])
        _wait("b holds the lock", lambda: _one(
            pg_url, "SELECT pid FROM locks WHERE flow_id = 'jobs/j0'") == (second.pid,))
        _wait("b's run started", (tmp_path / "started").exists)
        (tmp_path / "release").write_text("1")
        code, spec, _ = _answer(second)
        assert (0, "done") == (code, spec["status"]), spec
        os.kill(first.pid, signal.SIGCONT)
        late, late_spec, _ = _answer(first)
    finally:
        (tmp_path / "release").write_text("1")
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
    assert (3, "fenced") == (late, late_spec["error"]["code"]), late_spec
    with psycopg.connect(pg_url) as conn:
        events = [json.loads(bytes(r[0])) for r in conn.execute(
            "SELECT record FROM audit WHERE flow_id = 'jobs/j0' ORDER BY id")]
    ended = [e for e in events if e["event"] == "lock_holder_ended"]
    assert 1 == len(ended) and first.pid == ended[0]["holder"]["pid"]
    assert ended[0]["holder"]["silent_s"] >= 3
    assert 1 == sum(1 for e in events if e["event"] == "done")
