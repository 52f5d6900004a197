"""Leases of campaign items on a real PostgreSQL server: two workers racing for the last
item, an expired lease back in the pool with the old holder fenced out, leases on the
database's clock whatever a machine's clock says, and ``status --campaign``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from tests.contract.driver import ROOT, SCRIPT
from workspace import campaign

RACE = """
import sys, time
from workspace import campaign
from workspace.pgconn import connect
conn = connect(sys.argv[1])
start = float(sys.argv[3])
while time.time() < start:
    pass
lease = campaign.claim(conn, "race", sys.argv[2], "host", 1)
print(lease.item_id if lease else "none")
"""


def _conn(url: str) -> psycopg.Connection:
    from workspace.pgconn import connect

    return connect(url, fresh=True)


def test_two_workers_racing_for_the_last_item_get_it_once(pg_url: str) -> None:
    """Eight processes claim the one item left at the same instant: exactly one gets it."""
    conn = _conn(pg_url)
    campaign.define(conn, "race", "items", [("only", {"argv": ["start", "toy", "x"]})])
    at = time.time() + 1.5
    procs = [subprocess.Popen([sys.executable, "-c", RACE, pg_url, f"w{i}", str(at)],
                              stdout=subprocess.PIPE, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}) for i in range(8)]
    got = sorted(p.communicate(timeout=60)[0].strip() for p in procs)
    assert ["none"] * 7 + ["only"] == got


def test_an_expired_lease_goes_back_and_its_old_holder_cannot_finish(pg_url: str) -> None:
    """A dead worker's item is claimed by another once the lease ends; the first worker's
    token no longer renews or completes it; the item is done once."""
    conn = _conn(pg_url)
    campaign.define(conn, "exp", "items", [("a", {"argv": ["start", "toy", "a"]})], lease_s=1)
    first = campaign.claim(conn, "exp", "w1", "h1", 1)
    assert first is not None and campaign.claim(conn, "exp", "w2", "h2", 2) is None
    deadline = time.monotonic() + 60  # the 1 s lease runs out on the database's clock
    second = None
    while second is None and time.monotonic() < deadline:
        time.sleep(0.05)
        second = campaign.claim(conn, "exp", "w2", "h2", 2)
    assert second is not None and (first.item_id, 2) == (second.item_id, second.claims)
    assert not campaign.renew(conn, "exp", "a", first.token)
    assert not campaign.complete(conn, "exp", "a", first.token, {"by": "w1"})
    assert campaign.complete(conn, "exp", "a", second.token, {"by": "w2"})
    row = conn.execute("SELECT state, done_count, result FROM campaign_items").fetchone()
    assert ("done", 1, {"by": "w2"}) == row


def test_leases_run_on_the_database_clock_not_the_machines(pg_url: str) -> None:
    """A worker whose clock is a day ahead still holds a fresh lease, and one a day behind
    cannot keep an expired one: lease_until is the server's now() plus the lease."""
    conn = _conn(pg_url)
    campaign.define(conn, "clock", "items", [("a", {"argv": ["start", "toy", "a"]})],
                    lease_s=30)
    skewed = subprocess.run(
        [sys.executable, "-c", "import time, sys\nreal = time.time\n"
         "time.time = lambda: real() + 86400\nfrom workspace import campaign\n"
         "from workspace.pgconn import connect\n"
         "print(campaign.claim(connect(sys.argv[1]), 'clock', 'ahead', 'h', 1).lease_until)",
         pg_url], capture_output=True, text=True, cwd=ROOT, timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert 0 == skewed.returncode, skewed.stderr
    left = conn.execute("SELECT extract(epoch FROM lease_until - now()) FROM "
                        "campaign_items").fetchone()[0]
    assert 25 < float(left) <= 30
    assert None is campaign.claim(conn, "clock", "behind", "h", 2)


def test_status_campaign_shows_items_leases_and_what_is_left(tmp_path: Path,
                                                            pg_url: str) -> None:
    """status --campaign NAME --json and its table: items by state, the holder of each lease,
    the last error, what is left; --campaign all lists every campaign."""
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": f"i{n}", "argv": ["start", "toy", f"i{n}"]}
                                 for n in range(3)]))
    env = {**os.environ, "ORCHESTRATOR_PLUGINS": "tests.contract.toyflow",
           "ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_WORKER": "alice", "PYTHONPATH": str(ROOT)}
    base = [sys.executable, str(SCRIPT), "--workspace", str(tmp_path / "ws")]
    first = json.loads(subprocess.run([*base, "campaign", "sweep", "--items", str(items)],
                                      capture_output=True, text=True, env=env,
                                      timeout=60).stdout)
    assert ("need_agent", "toy/i0", "i0") == (first["status"], first["flow_id"],
                                             first["campaign"]["item"])
    shown = json.loads(subprocess.run([*base, "status", "--campaign", "sweep", "--json"],
                                      capture_output=True, text=True, env=env,
                                      timeout=60).stdout)
    [info] = shown["campaigns"]
    assert {"free": 2, "leased": 1, "done": 0, "parked": 0, "dropped": 0} == info["by_state"]
    assert 3 == info["left"]
    [lease] = info["leases"]
    assert ("i0", "alice", "toy/i0", False) == (lease["item"], lease["holder"],
                                               lease["flow_id"], lease["expired"])
    from tests.terminal import on_a_terminal

    _, text = on_a_terminal(tmp_path / "ws", "status", "--campaign", "all", env=env,
                            stderr=False)
    assert text.startswith("campaign sweep (items): 3 items, 0 done, 1 leased")
    assert "i0: alice" in text


def test_campaigns_on_the_file_store_are_refused_with_a_hint(tmp_path: Path) -> None:
    """A campaign needs the PostgreSQL store: usage error naming --store, nothing written."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ORCHESTRATOR_STORE", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(tmp_path / "ws"),
                           "campaign", "x"], capture_output=True, text=True, env=env,
                          timeout=60)
    spec = json.loads(proc.stdout)
    assert (2, "usage") == (proc.returncode, spec["error"]["code"])
    assert "--store postgresql://" in spec["error"]["hint"]
    assert not (tmp_path / "ws").exists()
