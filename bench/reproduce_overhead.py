#!/usr/bin/env python3
"""What a nightly reproduce of one failing test costs over running that test directly.

Both run as fresh processes on a copy of examples/calc, alternately, ``--runs`` times each:

- direct: ``python -m pytest NODE`` (from the copy's parent, as a person would);
- reproduce: ``orchestrator.py reproduce --profile local --stage nightly --source-dir COPY
  --command "pytest NODE"`` into a fresh workspace each time (so nothing is reused): the
  flow's own steps, the one pytest run in a clean shell as a background job, the
  environment probe and the tree-state reading.

Target: median ratio at most 1.5. Prints one JSON object with the figures.

Usage: python bench/reproduce_overhead.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODE = "tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"


def _wall(argv: list[str], cwd: Path, expect: int) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    took = time.perf_counter() - started
    if proc.returncode != expect:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stdout[-2000:]!r}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        calc = Path(shutil.copytree(ROOT / "examples" / "calc", base / "calc"))
        direct, flow = [], []
        for i in range(args.runs):
            direct.append(_wall([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                                 f"calc/{NODE}"], base, 1))
            flow.append(_wall([sys.executable, str(ROOT / "orchestrator.py"), "--workspace",
                               str(base / f"ws{i}"), "reproduce", "--profile", "local",
                               "--stage", "nightly", "--source-dir", str(calc),
                               "--command", f"pytest {NODE}"], ROOT, 0))
            verdict = next((base / f"ws{i}").rglob("verdict.json")).read_text()
            if '"REPRODUCED"' not in verdict:
                raise SystemExit(f"not REPRODUCED: {verdict}")
    d, f = statistics.median(direct), statistics.median(flow)
    print(json.dumps({"runs": args.runs, "direct_pytest_s": round(d, 3),
                      "reproduce_nightly_s": round(f, 3), "ratio": round(f / d, 2),
                      "target_ratio": 1.5, "met": f / d <= 1.5}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
