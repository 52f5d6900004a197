"""``demo refactor``: the replay harness takes the bundled file to done through the CLI."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tests import forkserver
from tests.contract.driver import Driver


@pytest.mark.slow
def test_demo_refactor_reaches_finalize_through_the_printed_commands(tmp_path: Path) -> None:
    """Every task is answered from the recordings via its feed_command, to done/finalize; with
    a 2 s foreground budget the local test gate outlives a call, so the flow answers `waiting`
    on its job, the replay harness resumes, and the flow still reaches done."""
    # The gate outlives the budget by construction, on any machine: its run starts 3 s late
    # (a test interpreter that waits before a JUnit run), where a fast start would otherwise
    # end inside the 2 s.
    python = tmp_path / "late-python"
    python.write_text('#!/bin/sh\ncase " $* " in *" --junitxml="*) sleep 3;; esac\n'
                      f'exec {shlex.quote(forkserver.python("torch"))} "$@"\n')
    python.chmod(0o755)
    # the demo replays the whole flow in one process: bounded generously, as a busy
    # machine (a loaded CI runner) may take minutes for it
    call = Driver(tmp_path, {"ORCHESTRATOR_FOREGROUND_S": "2", "ORCHESTRATOR_PYTHON": str(python)}
                  ).call(["demo", "refactor"], timeout=1200)
    spec = call.spec
    assert spec is not None and (0, "done", "finalize", "refactored") == (
        call.code, spec["status"], spec["phase"], spec["outcome"])
    assert "TR009" in Path(spec["summary_path"]).read_text()
    # The recorded coder's edit is in the demo's own copy, never in examples/.
    assert "TestSmallOpsDevice" in (tmp_path / "demo-checkout/test/test_small_ops.py").read_text()
    assert spec["demo"]["calls"] == call.stderr.count('"status"')
    assert '"waiting_on": "job"' in call.stderr and '"id": "test-v1-local-r0-cpu"' in call.stderr
    audit = (Path(spec["summary_path"]).parent / "audit.jsonl").read_text()
    assert '"event":"job_started"' in audit and '"event":"job_finished"' in audit


def test_demo_of_an_unknown_workflow_is_a_usage_error(tmp_path: Path) -> None:
    """Only the refactor demo exists; anything else says so with the command to run."""
    call = Driver(tmp_path).call(["demo", "reproduce"])
    assert (2, "usage") == (call.code, call.spec["error"]["code"])


@pytest.mark.slow
def test_demo_on_a_terminal_prints_a_line_per_step_and_done_once(tmp_path: Path) -> None:
    """On a terminal the demo says each step in one line of words (no JSON), then `done` once,
    after the last step, with the number of calls it made."""
    import re

    from tests.terminal import on_a_terminal

    code, text = on_a_terminal(tmp_path, "demo", "refactor")
    lines = text.splitlines()
    steps = [line for line in lines if line.startswith("step ")]
    done_at = [i for i, line in enumerate(lines) if re.search(r"\bdone\b", line)]
    calls = re.search(r"in (\d+) calls", " ".join(text.split()))
    assert (0, 1, True) == (code, len(done_at), calls is not None)
    assert calls is not None and int(calls.group(1)) - 1 == len(steps)
    assert steps == lines[:len(steps)] and done_at == [len(steps)]
    assert [] == [line for line in steps if "{" in line or '":' in line]
    assert " ".join(lines[len(steps):]).startswith("done: the demo took test/test_small_ops.py "
                                                   "to finalize (outcome refactored)")
