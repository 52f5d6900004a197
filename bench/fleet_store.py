#!/usr/bin/env python3
"""The PostgreSQL store's costs, against a throw-away local cluster (``initdb``/``pg_ctl``):

- ``resume``: median wall time of ``--resume`` of a waiting toy flow on the PostgreSQL store
  vs on the file store (fresh processes, the cached-spec path on both);
- ``claims``: claim+complete throughput of the campaign store (``workspace.campaign``: the
  holder's renewal, parking, the next free item by ``FOR UPDATE SKIP LOCKED``, the token
  bump; then ``complete`` under the token) beside a plain ``SELECT ... FOR UPDATE SKIP
  LOCKED`` queue (one claiming ``UPDATE`` with a lease and a token, one completing
  ``UPDATE``) on the same server, with 1, 2, 4 and 16 worker processes, each on its own
  connection, no flow work; ``ratio`` is the campaign store's items/s over the plain
  queue's;
- ``campaign``: the wall time of a 40-item toy campaign driven to its end by 4 harness
  processes vs by 1 (``tests.fleet.worker``, every call a fresh process).

Prints one JSON object. Usage: python bench/fleet_store.py [--runs 20] [--items 40]
[--claim-items 2000] [--only claims]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.store.pgserver import Cluster  # noqa: E402

SCRIPT = ROOT / "orchestrator.py"
TOY = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow", "PYTHONPATH": str(ROOT)}


def _median_call(argv: list[str], env: dict[str, str], runs: int) -> float:
    walls = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, check=True)
        walls.append(time.perf_counter() - t)
    return statistics.median(walls)


def resume(cluster: Cluster, runs: int) -> dict[str, float]:
    out = {}
    for name, store in (("file", None), ("postgres", cluster.create_db("bench_resume"))):
        env = {**os.environ, **TOY}
        env.pop("ORCHESTRATOR_STORE", None)
        if store:
            env["ORCHESTRATOR_STORE"] = store
        ws = tempfile.mkdtemp(prefix=f"bench-{name}-")
        subprocess.run([sys.executable, str(SCRIPT), "--workspace", ws, "start", "toy", "b"],
                       env=env, stdout=subprocess.DEVNULL, check=True)
        out[name] = round(_median_call([sys.executable, str(SCRIPT), "--workspace", ws,
                                        "--flow", "toy/b", "--resume"], env, runs), 4)
    out["ratio"] = round(out["postgres"] / out["file"], 2)
    return out


PLAIN_SCHEMA = """
CREATE TABLE plain_queue (id bigint PRIMARY KEY, payload jsonb NOT NULL,
    state text NOT NULL DEFAULT 'free', token bigint NOT NULL DEFAULT 0,
    holder text, lease_until timestamptz);
CREATE INDEX plain_queue_free ON plain_queue (state, id);
"""
PLAIN_CLAIM = (
    "UPDATE plain_queue SET state = 'leased', token = token + 1, holder = %s, "
    "lease_until = now() + interval '600 seconds' WHERE id = (SELECT id FROM plain_queue "
    "WHERE state = 'free' OR (state = 'leased' AND lease_until <= now()) ORDER BY id "
    "LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, token")
PLAIN_DONE = "UPDATE plain_queue SET state = 'done' WHERE id = %s AND token = %s"


def _claimer(url: str, n: int, kind: str, start: Any, counts: Any) -> None:
    from workspace import campaign
    from workspace.pgconn import connect

    conn = connect(url)
    done = 0
    start.wait()
    while True:
        if kind == "campaign":
            lease = campaign.claim(conn, "bench", f"w{n}", "bench", os.getpid())
            if lease is None:
                break
            campaign.complete(conn, "bench", lease.item_id, lease.token, {})
        else:
            row = conn.execute(PLAIN_CLAIM, (f"w{n}",)).fetchone()
            if row is None:
                break
            conn.execute(PLAIN_DONE, row)
        done += 1
    counts.put(done)


def _drain(url: str, kind: str, workers: int) -> tuple[int, float]:
    """(items done, seconds) for ``workers`` processes draining the queue of ``kind``."""
    ctx = multiprocessing.get_context("fork")
    start, counts = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(url, n, kind, start, counts))
             for n in range(workers)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # every worker connected (the schema check done) before the clock runs
    t = time.perf_counter()
    start.set()
    total = sum(counts.get() for _ in procs)
    wall = time.perf_counter() - t
    for p in procs:
        p.join()
    return total, wall


def claims(cluster: Cluster, items: int = 2000,
           worker_counts: tuple[int, ...] = (1, 2, 4, 16)) -> list[dict[str, Any]]:
    from workspace import campaign
    from workspace.pgconn import connect

    out = []
    for workers in worker_counts:
        url = cluster.create_db(f"bench_claims_{workers}")
        conn = connect(url, fresh=True)
        campaign.define(conn, "bench", "items",
                        [(f"i{i}", {"argv": ["start", "toy", f"i{i}"]}) for i in range(items)])
        conn.execute(PLAIN_SCHEMA)
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO plain_queue (id, payload) VALUES (%s, %s)",
                            [(i, json.dumps({"argv": ["start", "toy", f"i{i}"]}))
                             for i in range(items)])
        conn.close()
        row: dict[str, Any] = {"workers": workers, "items": items}
        for kind in ("plain", "campaign"):
            total, wall = _drain(url, kind, workers)
            assert total == items, (kind, total, items)
            row[f"{kind}_items_per_s"] = round(total / wall, 1)
        row["ratio"] = round(row["campaign_items_per_s"] / row["plain_items_per_s"], 2)
        out.append(row)
    return out


def campaign_run(cluster: Cluster, workers: int, items: int) -> float:
    url = cluster.create_db(f"bench_campaign_{workers}")
    ws = tempfile.mkdtemp(prefix="bench-camp-")
    listing = Path(ws) / "items.json"
    listing.write_text(json.dumps([{"id": f"i{i}", "argv": ["start", "toy", f"i{i}"]}
                                   for i in range(items)]))
    env = {**os.environ, **TOY, "ORCHESTRATOR_STORE": url}
    subprocess.run([sys.executable, str(SCRIPT), "--workspace", ws, "campaign", "c", "--items",
                    str(listing)], env={**env, "ORCHESTRATOR_WORKER": "w0",
                                        "ORCHESTRATOR_LEASE_S": "600"},
                   stdout=subprocess.DEVNULL, check=True)
    t = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "tests.fleet.worker", str(SCRIPT), ws, "c"],
                              cwd=ROOT, env={**env, "ORCHESTRATOR_WORKER": f"w{n}"},
                              stdout=subprocess.DEVNULL) for n in range(workers)]
    for p in procs:
        p.wait()
    return round(time.perf_counter() - t, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--claim-items", type=int, default=2000)
    ap.add_argument("--only", choices=["resume", "claims", "campaign"])
    args = ap.parse_args()
    cluster = Cluster().start()
    out: dict[str, Any] = {"cpus": os.cpu_count()}
    try:
        if args.only in (None, "resume"):
            out["resume"] = resume(cluster, args.runs)
        if args.only in (None, "claims"):
            out["claims"] = claims(cluster, args.claim_items)
        if args.only in (None, "campaign"):
            one = campaign_run(cluster, 1, args.items)
            four = campaign_run(cluster, 4, args.items)
            out["campaign"] = {"items": args.items, "workers_1_s": one, "workers_4_s": four,
                               "speedup": round(one / four, 2)}
    finally:
        cluster.destroy()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
