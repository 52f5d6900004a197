#!/usr/bin/env python3
"""What a nightly reproduce of one failing test costs over running that test directly.

Both run as fresh processes on a copy of the project, alternately, ``--runs`` times each:

- direct: ``PYTHON -m pytest NODE`` from the project's folder, as a person would;
- reproduce: ``orchestrator.py reproduce --profile local --stage nightly --source-dir COPY
  --command "pytest NODE"`` (``ORCHESTRATOR_REPRODUCE_PYTHON=PYTHON``) into a fresh
  workspace each time (so nothing is reused): the flow's own steps, the one pytest run in a
  clean shell, the environment probe and the tree-state reading.

Projects:

- ``calc`` (examples/calc): target median ratio at most 1.5;
- ``nap``: written here, one test that takes about 0.3 s and then fails (a sub-second
  test, where the orchestrator's own start-up weighs most): target at most 1.3.

``--python`` names the project's interpreter (default: this one; give a venv with a bare
pytest to measure without this checkout's test plugins). ``--timeout S`` passes
``--timeout S`` to reproduce, which then runs the test in the foreground (a run that ends
within the call's budget needs no background job). Prints one JSON object.

Usage: python bench/reproduce_overhead.py [--runs 7] [--project nap] [--python PY]
           [--timeout 60]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NODES = {"calc": "tests/test_calc.py::test_mean_of_ints_keeps_the_fraction",
         "nap": "tests/test_nap.py::test_nap_counts_hundredths"}
TARGETS = {"calc": 1.5, "nap": 1.3}

NAP_MODULE = '''"""Waits, then says how many hundredths of a second it waited."""
import time


def nap(seconds):
    time.sleep(seconds)
    return int(seconds * 100)  # BUG: 0.29 * 100 is 28.999999999999996, int() makes it 28
'''
NAP_TEST = '''from nap import nap


def test_nap_counts_hundredths():
    assert nap(0.29) == 29
'''


def _project(name: str, base: Path) -> Path:
    if name == "calc":
        return Path(shutil.copytree(ROOT / "examples" / "calc", base / "calc"))
    tree = base / "nap"
    (tree / "nap").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "nap" / "__init__.py").write_text(NAP_MODULE)
    (tree / "tests" / "test_nap.py").write_text(NAP_TEST)
    (tree / "pyproject.toml").write_text('[project]\nname = "nap"\nversion = "0.1"\n')
    return tree


def _wall(argv: list[str], cwd: Path, expect: int, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env)
    took = time.perf_counter() - started
    if proc.returncode != expect:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stdout[-2000:]!r}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--project", choices=sorted(NODES), default="calc")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float)
    args = parser.parse_args()
    node = NODES[args.project]
    env = {**os.environ, "ORCHESTRATOR_REPRODUCE_PYTHON": args.python,
           "PYTHONPATH": str(ROOT)}
    extra = ["--timeout", str(args.timeout)] if args.timeout else []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        tree = _project(args.project, base)
        direct, flow = [], []
        for i in range(args.runs):
            direct.append(_wall([args.python, "-m", "pytest", "-p", "no:cacheprovider", node],
                                tree, 1, env))
            flow.append(_wall([sys.executable, str(ROOT / "orchestrator.py"), "--workspace",
                               str(base / f"ws{i}"), "reproduce", "--profile", "local",
                               "--stage", "nightly", "--source-dir", str(tree),
                               "--command", f"pytest {node}", *extra], ROOT, 0, env))
            verdict = next((base / f"ws{i}").rglob("verdict.json")).read_text()
            if '"REPRODUCED"' not in verdict:
                raise SystemExit(f"not REPRODUCED: {verdict}")
    d, f = statistics.median(direct), statistics.median(flow)
    pairs = statistics.median(b / a for a, b in zip(direct, flow))
    target = TARGETS[args.project]
    print(json.dumps({"project": args.project, "runs": args.runs, "python": args.python,
                      "timeout": args.timeout, "direct_pytest_s": round(d, 3),
                      "reproduce_nightly_s": round(f, 3), "ratio": round(f / d, 2),
                      "median_pair_ratio": round(pairs, 2), "target_ratio": target,
                      "met": f / d <= target,
                      "load_average": [round(x, 2) for x in os.getloadavg()]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
