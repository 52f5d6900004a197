"""Peak memory of a call whose child prints 200 MiB (target: at most 60 MiB).

Two measurements, each in a fresh process so ``ru_maxrss`` is that process's own peak:

- ``foreground``: a Python process that calls ``flow.core.proc.run`` on a child printing
  ``--mib`` MiB (the runner's own cost: streaming, capping, the log);
- ``cli_job``: a real ``orchestrator.py start jobs`` call whose step runs the same child as
  a background job (``ctx.job``); the peak is the largest of the orchestrator, the job's
  supervisor and the child (``RUSAGE_CHILDREN`` of a wrapper).

Prints one JSON object. Run: ``python bench/proc_memory.py [--mib 200]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MIB = 60
CHILD = ("import sys\nchunk = b'z' * (1 << 20)\nfor _ in range({mib}):\n"
         "    sys.stdout.buffer.write(chunk)\n")
PEAK = ("import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
FOREGROUND = ("import resource, sys\nfrom pathlib import Path\nfrom flow.core import proc\n"
              "res = proc.run([sys.executable, '-c', sys.argv[1]], log=Path(sys.argv[2]))\n"
              "assert res.code == 0, res.output[-500:]\n"
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")


def foreground(mib: int, tmp: Path) -> dict[str, float]:
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", FOREGROUND, CHILD.format(mib=mib),
                          str(tmp / "fg.log")], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    return {"peak_mib": round(int(out.stdout.strip()) / 1024, 1),
            "seconds": round(time.monotonic() - started, 2),
            "log_mib": round((tmp / "fg.log").stat().st_size / (1 << 20), 2)}


def cli_job(mib: int, tmp: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ORCHESTRATOR_PLUGINS": "tests.proc.jobflow",
           "JOBFLOW_SCRIPT": CHILD.format(mib=mib), "ORCHESTRATOR_FOREGROUND_S": "300"}
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-c", PEAK, sys.executable, str(ROOT / "orchestrator.py"),
                          "--workspace", str(tmp / "ws"), "start", "jobs", "bench"],
                         capture_output=True, text=True, env=env, check=True)
    state = json.loads((tmp / "ws" / "jobs" / "bench" / "flow_state.json").read_text())
    result = state["result"]
    assert result and result["code"] == 0, result
    log = Path(result["log"])
    return {"peak_mib": round(int(out.stdout.strip()) / 1024, 1),
            "seconds": round(time.monotonic() - started, 2),
            "log_mib": round(log.stat().st_size / (1 << 20), 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fg = foreground(args.mib, Path(tmp))
        job = cli_job(args.mib, Path(tmp))
    worst = max(fg["peak_mib"], job["peak_mib"])
    print(json.dumps({"bench": "proc_memory", "child_output_mib": args.mib, "foreground": fg,
                      "cli_job": job, "target_mib": TARGET_MIB,
                      "met": worst <= TARGET_MIB}, indent=2))


if __name__ == "__main__":
    main()
