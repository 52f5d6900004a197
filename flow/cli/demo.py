"""``orchestrator.py demo refactor``: the refactor workflow answered by a replay harness.

The replay harness is a real harness in all but judgment: it reads only the printed JSON,
writes each result to the task's ``feed_file`` and runs the task's ``feed_command`` as printed
(argument list, no shell). Its answers are recorded files in ``examples/refactor/replay/``.
Each call's JSON goes to stderr; on a terminal (``flow.cli.person``) one line per step does
instead, and the end is said once, as text.
"""

from __future__ import annotations

import shlex
import shutil
import sys
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from flow.core.errors import OrchestratorError, UsageError, WorkflowInputError
from workspace.jsonio import dumps, loads

TEST_FILE = "test/test_small_ops.py"
MAX_CALLS = 60  # calls that answer a task: a flow asking more loops
MAX_WAITS = 720  # resumes of a running job (5 s apart: an hour of a busy machine)


def make_checkout(example: Path, dest: Path) -> Path:
    """Lay the example out as a PyTorch-style checkout: test/test_small_ops.py, its
    common_methods_invocations.py and the dynamo sentinel folders. Returns ``dest``."""
    test = dest / "test"
    test.mkdir(parents=True)
    shutil.copy(example / "small_ops_before.py", test / "test_small_ops.py")
    shutil.copy(example / "common_methods_invocations.py", test / "common_methods_invocations.py")
    for name in ("dynamo_skips", "dynamo_expected_failures"):
        shutil.copytree(example / name, test / name)
    return dest


def _example(script: Path) -> Path:
    src = script.parent / "examples" / "refactor"
    if not (src / "small_ops_before.py").is_file():
        raise WorkflowInputError(f"the demo's example files are not at {str(src)!r}",
                                 "run the demo from a checkout of skill-orchestrator")
    return src


def _call(argv: list[str], step: int, to_person: bool) -> dict[str, Any]:
    """One harness call; what it printed goes on to stderr: the JSON object, or for a person
    at a terminal one line saying what the step asked and what the demo does about it."""
    from flow.core import proc

    # Each call the demo makes is a harness call with a foreground budget of its own.
    got = proc.capture(argv, timeout=proc.foreground_s() + 60, budget=False)
    try:
        spec = loads(got.stdout)
    except ValueError:
        raise WorkflowInputError(f"the orchestrator printed no JSON (exit {got.code})",
                                 f"its stderr: {got.stderr[-500:]}") from None
    if not to_person:
        sys.stderr.write(dumps(spec).decode() + "\n")
    elif spec.get("status") in {"need_agent", "waiting"}:
        from flow.core.redact import redact

        sys.stderr.write(redact(progress(step, spec)) + "\n")
        sys.stderr.flush()
    return dict(spec)


def progress(step: int, spec: dict[str, Any]) -> str:
    """One line for a person: the step, the flow's phase, what it asked, what the demo does
    (the last call's end is the caller's ``done``, not a progress line)."""
    where = f"step {step:>2}  {spec.get('phase')}:"
    if spec.get("waiting_on") == "job":
        return f"{where} job {(spec.get('job') or {}).get('id')} runs on; waiting, then resuming"
    if spec.get("waiting_on") == "budget":
        return f"{where} {spec.get('cut_short')} ran out of time; waiting, then resuming"
    tasks = spec.get("tasks") or [{}]
    task = tasks[0]
    also = f" (and {len(tasks) - 1} more)" if len(tasks) > 1 else ""
    return (f"{where} asks the {task.get('agent_name')}{also}; replaying its recorded answer "
            f"({task.get('feed_schema')})")


def _answer(task: dict[str, Any], example: Path, checkout: Path) -> dict[str, Any]:
    """The recorded result for ``task``, chosen by the feed model it names.

    ``example`` is ``examples/refactor``: its analyst report and refactored file, and the
    recorded feed results in its ``replay/`` folder.
    """
    replay = example / "replay"
    feed = task["feed_schema"].split(".", 1)[1]
    ident = {"agent_id": f"replay/{task['agent_name']}", "agent_name": task["agent_name"]}
    if feed == "analyst":
        report = loads((example / "analyst_report.json").read_bytes())
        Path(task["report_path"]).write_bytes(dumps({**report, "file": TEST_FILE}))
        return ident
    if feed == "coder":  # the recorded coder's edit: the refactored file
        shutil.copy(example / "small_ops_after.py", checkout / TEST_FILE)
    if feed == "coder_test":
        reason = loads((replay / "coder_test.json").read_bytes())["defer_reason"]
        return {**ident, "verdicts": [{"test_name": name, "verdict": "deferred",
                                       "defer_reason": reason} for name in task["failures"]]}
    path = replay / f"{feed}.json"
    if not path.exists():
        raise WorkflowInputError(f"the replay has no recorded result for feed {feed!r}",
                                 f"add {str(path)!r}")
    return {**ident, **loads(path.read_bytes())}


def demo_command(words: list[str], args: Namespace, root: Path, harness: str,
                 script: Path) -> dict[str, Any]:
    """Run the demo to its end; return the final spec plus what the demo did."""
    if words != ["refactor"]:
        raise UsageError(f"no demo named {' '.join(words) or '(none)'!r}",
                         "run: orchestrator.py demo refactor")
    src = _example(script)
    checkout = root / "demo-checkout"
    shutil.rmtree(checkout, ignore_errors=True)
    make_checkout(src, checkout)
    to_person = sys.stdout.isatty() and not args.json  # the flow.cli.person test
    base = [sys.executable, str(script), "--workspace", str(root), "--harness", harness]
    spec = _call([*base, "--restart", TEST_FILE, "--pytorch-dir", str(checkout)], 1, to_person)
    calls, waits = 1, 0
    while spec["status"] in {"need_agent", "waiting"} and calls < MAX_CALLS \
            and waits < MAX_WAITS:
        if spec.get("waiting_on") in {"job", "budget"}:  # a job runs on, or a cut check: wait, resume
            waits += 1  # how long a job takes is the machine's; only answers count as calls
            time.sleep(min(float(spec["poll_after_s"]), 5.0))
            spec = _call(shlex.split(spec["resume_command"]), calls, to_person)
            continue
        calls += 1
        task = spec["tasks"][0]
        Path(task["feed_file"]).write_bytes(dumps(_answer(task, src, checkout)))
        spec = _call(shlex.split(task["feed_command"]), calls, to_person)
    if spec["status"] != "done":
        err = spec.get("error") or {}
        raise OrchestratorError(
            f"the demo stopped at status {spec['status']!r} in phase {spec.get('phase')!r}: "
            f"{err.get('message', spec.get('question', ''))}",
            err.get("hint") or "run the printed resume_command to look at the flow",
            code="demo_stopped")
    return {**spec, "demo": {"calls": calls + waits, "checkout": str(checkout),
                             "replay": str(src / "replay")}}
