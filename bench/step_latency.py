#!/usr/bin/env python3
"""Median wall time of ``--resume`` on a waiting flow, as a ratio to importing the core libraries.

Both are measured in the same run, as fresh processes: the baseline is
``python -c "import transitions, pydantic, orjson"`` (the core libraries; the flow lock is
``flock`` from the standard library since ``filelock`` was dropped). Targets: ratio at most
1.3 and peak memory at most 50 MiB. Prints one JSON object with the figures.

Usage: python bench/step_latency.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _time(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall time of ``argv`` and the largest peak RSS (MiB) of those very processes."""
    walls, peaks = [], []
    for _ in range(runs):
        t = time.perf_counter()
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        walls.append(time.perf_counter() - t)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{argv} exited {proc.returncode}")
        peaks.append(usage.ru_maxrss / 1024)
    return statistics.median(walls), max(peaks)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    runs = ap.parse_args().runs
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}
    with tempfile.TemporaryDirectory() as ws:
        start = [sys.executable, str(ROOT / "orchestrator.py"), "--workspace", ws]
        out = subprocess.run([*start, "start", "toy", "bench"], env=env, capture_output=True,
                             check=True)
        flow_id = json.loads(out.stdout)["flow_id"]
        resume = [*start, "--flow", flow_id, "--resume"]
        baseline, _ = _time([sys.executable, "-c",
                             "import transitions, pydantic, orjson"], env, runs)
        cached, peak = _time(resume, env, runs)
        cache = Path(ws) / flow_id / ".last_spec.json"
        full_walls = []
        for _ in range(runs):
            cache.unlink(missing_ok=True)
            t = time.perf_counter()
            subprocess.run(resume, env=env, stdout=subprocess.DEVNULL, check=True)
            full_walls.append(time.perf_counter() - t)
        full = statistics.median(full_walls)
    print(json.dumps({
        "runs": runs,
        "baseline_import_s": round(baseline, 4),
        "resume_waiting_s": round(cached, 4),
        "ratio": round(cached / baseline, 3),
        "target_ratio": 1.3,
        "resume_full_load_s": round(full, 4),
        "ratio_full_load": round(full / baseline, 3),
        "resume_waiting_peak_rss_mib": round(peak, 1),
        "target_peak_mib": 50,
    }, indent=2))


if __name__ == "__main__":
    main()
