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
within the call's budget needs no background job). ``--before CHECKOUT`` runs another
checkout's orchestrator in the same rounds (before/after under the same load). Prints one
JSON object: median wall seconds, the median of the per-round ratios, and the median CPU
seconds of each call with all its descendants (a job's supervisor included), which a
loaded machine inflates far less than wall time.

Usage: python bench/reproduce_overhead.py [--runs 7] [--project nap] [--python PY]
           [--timeout 60] [--before /path/to/main]
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


def _subreaper() -> None:
    """Orphans (a reproduce job's detached supervisor) are re-parented to this process, so
    their CPU time is counted with the call that started them (Linux; elsewhere a no-op)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _wall(argv: list[str], cwd: Path, expect: int, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and all its descendants)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env)
    took = time.perf_counter() - started
    while True:  # a supervisor re-parented here: wait for it so its CPU counts
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != expect:
        raise SystemExit(f"{argv} exited {proc.returncode}: {proc.stdout[-2000:]!r}")
    return took, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def _reproduce(root: Path, tree: Path, node: str, workspace: Path, env: dict[str, str],
               extra: list[str]) -> tuple[float, float]:
    took = _wall([sys.executable, str(root / "orchestrator.py"), "--workspace", str(workspace),
                  "reproduce", "--profile", "local", "--stage", "nightly", "--source-dir",
                  str(tree), "--command", f"pytest {node}", *extra], root,
                 0, {**env, "PYTHONPATH": str(root)})
    verdict = next(workspace.rglob("verdict.json")).read_text()
    if '"REPRODUCED"' not in verdict:
        raise SystemExit(f"not REPRODUCED: {verdict}")
    return took


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--project", choices=sorted(NODES), default="calc")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--timeout", type=float)
    parser.add_argument("--before", type=Path,
                        help="another checkout (say, main's) run in the same rounds, so both "
                             "are measured under the same load")
    args = parser.parse_args()
    _subreaper()
    node = NODES[args.project]
    env = {**os.environ, "ORCHESTRATOR_REPRODUCE_PYTHON": args.python}
    extra = ["--timeout", str(args.timeout)] if args.timeout else []
    sides = {"reproduce": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    times: dict[str, list[tuple[float, float]]] = {"direct": [], **{k: [] for k in sides}}
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        tree = _project(args.project, base)
        for i in range(args.runs):
            times["direct"].append(_wall([args.python, "-m", "pytest", "-p", "no:cacheprovider",
                                          node], tree, 1, env))
            for name, root in sides.items():
                times[name].append(_reproduce(root, tree, node, base / f"{name}{i}", env,
                                              extra))
    target = TARGETS[args.project]
    out: dict[str, object] = {"project": args.project, "runs": args.runs,
                              "python": args.python, "timeout": args.timeout,
                              "target_ratio": target}
    direct = times["direct"]
    for name, got in times.items():
        out[f"{name}_s"] = _median([w for w, _ in got])
        out[f"{name}_cpu_s"] = _median([c for _, c in got])
        if name != "direct":
            out[f"{name}_ratio"] = _median([w / d for (w, _), (d, _) in zip(got, direct)])
    out["met"] = out["reproduce_ratio"] <= target
    out["load_average"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
