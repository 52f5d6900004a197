#!/usr/bin/env python3
"""The PostgreSQL store's costs, against a throw-away local cluster (``initdb``/``pg_ctl``):

- ``resume``: median wall time of ``--resume`` of a waiting toy flow on the PostgreSQL store
  vs on the file store (fresh processes, the cached-spec path on both);
- ``claims``: claims per second with 8 worker processes claiming and completing items of one
  campaign (``workspace.campaign``: ``FOR UPDATE SKIP LOCKED``), no flow work;
- ``campaign``: the wall time of a 40-item toy campaign driven to its end by 4 harness
  processes vs by 1 (``tests.fleet.worker``, every call a fresh process).

Prints one JSON object. Usage: python bench/fleet_store.py [--runs 20] [--items 40]
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


def _claimer(url: str, n: int, counts: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    from workspace import campaign
    from workspace.pgconn import connect

    conn = connect(url)
    done = 0
    while True:
        lease = campaign.claim(conn, "bench", f"w{n}", "bench", os.getpid())
        if lease is None:
            break
        campaign.complete(conn, "bench", lease.item_id, lease.token, {})
        done += 1
    counts.put(done)


def claims(cluster: Cluster, workers: int = 8, items: int = 4000) -> dict[str, float]:
    from workspace import campaign
    from workspace.pgconn import connect

    url = cluster.create_db("bench_claims")
    campaign.define(connect(url), "bench", "items",
                    [(f"i{i}", {"argv": ["start", "toy", f"i{i}"]}) for i in range(items)])
    counts: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    procs = [multiprocessing.Process(target=_claimer, args=(url, n, counts))
             for n in range(workers)]
    t = time.perf_counter()
    for p in procs:
        p.start()
    total = sum(counts.get() for _ in procs)
    for p in procs:
        p.join()
    wall = time.perf_counter() - t
    return {"workers": workers, "items": total, "seconds": round(wall, 2),
            "claims_per_s": round(total / wall, 1)}


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
    args = ap.parse_args()
    cluster = Cluster().start()
    try:
        out = {"resume": resume(cluster, args.runs), "claims": claims(cluster)}
        one = campaign_run(cluster, 1, args.items)
        four = campaign_run(cluster, 4, args.items)
        out["campaign"] = {"items": args.items, "workers_1_s": one, "workers_4_s": four,
                           "speedup": round(one / four, 2), "cpus": os.cpu_count()}
    finally:
        cluster.destroy()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
