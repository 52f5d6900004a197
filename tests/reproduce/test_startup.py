"""What a reproduce call costs before its first step: the modules a single nightly run
leaves unloaded (real interpreter starts)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.reproduce.conftest import REPO


def test_single_nightly_run_loads_no_batch_or_later_stage(tmp_path: Path) -> None:
    """A single nightly reproduce imports the steps it reaches only: no batch module, no
    source-build or CI-environment step, no skip-marker plan is loaded by the call."""
    probe = (
        "import json, sys, runpy\n"
        "sys.argv = ['orchestrator.py', '--workspace', sys.argv[1], 'reproduce', '--profile',"
        " 'local', '--stage', 'nightly', '--command', 'python -c \"raise SystemExit(3)\"']\n"
        "try:\n"
        f"    runpy.run_path({str(REPO / 'orchestrator.py')!r}, run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "sys.stderr.write(json.dumps(sorted(m for m in sys.modules"
        " if m.startswith('flow.workflows.reproduce'))))\n")
    got = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "ws")], cwd=REPO,
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    loaded = json.loads(got.stderr.strip().splitlines()[-1])
    later = sorted({"batch.entries", "batch.steps", "stage2.steps", "stage2.build",
                    "stage2.rules", "stage3.steps", "stage3.fetch", "stage3.artifacts",
                    "unskip.steps", "unskip.plan"}
                   & {m.removeprefix("flow.workflows.reproduce.") for m in loaded})
    assert ('"REPRODUCED"' in got.stdout, []) == (True, later), got.stdout[-1500:]


def test_a_run_that_fits_the_budget_runs_in_the_foreground(tmp_path: Path) -> None:
    """With a --timeout that ends within the call's foreground budget the reproducer runs
    in the foreground (no background job recorded, no supervisor); without one (the
    profile's 1800 s) it is a job the flow owns. The verdict is the same either way."""
    from tests.contract.driver import Driver

    command = 'python -c "raise SystemExit(3)"'
    seen = []
    for name, extra in (("fg", ["--timeout", "30"]), ("job", [])):
        call = Driver(tmp_path / name).call(["reproduce", "--profile", "local", "--stage",
                                             "nightly", "--command", command, *extra])
        assert call.spec is not None, call.stderr
        state = json.loads(next((tmp_path / name).rglob("flow_state.json")).read_text())
        seen.append((call.spec["verdict"]["verdict"], call.spec["verdict"]["self_check"]["exit_code"],
                     len(state["jobs"])))
    assert [("REPRODUCED", 3, 0), ("REPRODUCED", 3, 1)] == seen
