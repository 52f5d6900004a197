"""batch_setup reads the batch file bounded, as ``--batch`` is read at start: a file replaced
between the start and batch_setup (a FIFO, a binary file, too many entries) is a clear
refusal with the state as it was, never a hang or a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.driver import CRASH_HOOK, ROOT, SCRIPT


def _call(ws: Path, argv: list[str], extra: dict[str, str] | None = None,
          timeout: float = 60) -> tuple[int, dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           **(extra or {})}
    done = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(ws), *argv],
                          capture_output=True, text=True, env=env, timeout=timeout)
    spec = json.loads(done.stdout) if done.stdout.strip().startswith("{") else {}
    return done.returncode, {**spec, "_stderr": done.stderr}


@pytest.mark.parametrize("replaced, says", [
    ("fifo", "is not a regular file"),
    ("binary", "is not UTF-8 text"),
    ("too_many", "more than the limit of 2000"),
])
def test_batch_replaced_before_batch_setup_is_refused(tmp_path: Path, replaced: str,
                                                      says: str) -> None:
    batch = tmp_path / "batch.txt"
    batch.write_text('python -c "raise SystemExit(1)"\n')
    ws = tmp_path / "ws"
    # killed right after the flow's first save: it exists, batch_setup has not run yet
    code, _ = _call(ws, ["reproduce", "--profile", "local", "--batch", str(batch)],
                    {"PYTHONPATH": os.pathsep.join([str(CRASH_HOOK), str(ROOT)]),
                     "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / "count"),
                     "ORCHESTRATOR_TEST_CRASH_AT": "1", "ORCHESTRATOR_TEST_CRASH_WHEN": "after"})
    assert -9 == code
    [state] = list(ws.rglob("flow_state.json"))
    assert "begin" == json.loads(state.read_text())["phase"]
    batch.unlink()
    if replaced == "fifo":
        os.mkfifo(batch)  # no one writes it: a plain read waits forever
    elif replaced == "binary":
        batch.write_bytes(b"\xff\xfe\x00binary\x00" * 100)
    else:
        batch.write_text("".join(f'python -c "print({i})"\n' for i in range(2001)))
    flow_id = str(state.parent.relative_to(ws))
    code, spec = _call(ws, ["--flow", flow_id, "--resume"], timeout=60)
    error = spec.get("error") or {}
    assert (2, "error", True) == (code, spec.get("status"), says in error.get("message", "")), spec
    assert "Traceback" not in spec["_stderr"] and str(batch) in error["message"]
    assert "--resume" in error.get("hint", "")
    # begin's transition was its own step; batch_setup changed nothing, and asked again it
    # refuses again with the state byte-identical
    assert "batch_setup" == json.loads(state.read_text())["phase"]
    before = state.read_bytes()
    again, spec = _call(ws, ["--flow", flow_id, "--resume"], timeout=60)
    assert (2, before) == (again, state.read_bytes()), spec
    # the file put back: the same --resume carries on from where the flow was
    batch.unlink()
    batch.write_text('python -c "raise SystemExit(1)"\n')
    code, spec = _call(ws, ["--flow", flow_id, "--resume"], timeout=300)
    assert (0, "done") == (code, spec.get("status")), spec
