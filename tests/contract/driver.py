"""A generic harness: drives any workflow to its end reading only the JSON it prints."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests import forkserver

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "orchestrator.py"
CRASH_HOOK = Path(__file__).resolve().parents[1] / "crashhook"


def modules_after(argv: list[str], env: dict[str, str]) -> set[str]:
    """The modules a CLI call with ``argv`` imported (run in a fresh interpreter)."""
    code = ("import sys, io, orchestrator\n"
            "sys.stdout = io.TextIOWrapper(io.BytesIO())\n"
            "orchestrator.main(sys.argv[1:])\n"
            "sys.stderr.write('\\nMODULES ' + ' '.join(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env=env, cwd=ROOT)
    return set(proc.stderr.rsplit("MODULES ", 1)[1].split())


@dataclass
class Call:
    argv: list[str]
    code: int
    spec: dict[str, Any] | None
    stderr: str


@dataclass
class Scenario:
    """How to start a workflow and how a (scripted) harness answers its tasks."""

    name: str
    start: list[str]
    answer: Callable[[dict[str, Any]], dict[str, Any]]
    choose: Callable[[dict[str, Any]], str] = lambda spec: spec["options"][0]["value"]
    env: dict[str, str] = field(default_factory=dict)
    # The kill test replays the scenario once per persistence point; None replays every point
    # (the toy flow does, pinning the engine), a number samples that many points evenly for
    # each of `before` and `after`, the two taking turns along one spread.
    kill_points: int | None = 8
    # Puts back what a run changes outside its workspace (the refactor edits its checkout's
    # test file): called before every run that starts from nothing.
    fresh: Callable[[], None] = lambda: None


class Driver:
    def __init__(self, workspace: Path, env: dict[str, str] | None = None) -> None:
        self.workspace = workspace
        self.env = {**os.environ, **(env or {})}
        self.env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT), self.env.get("PYTHONPATH", "")]))
        self.calls: list[Call] = []

    def call(self, argv: list[str], extra_env: dict[str, str] | None = None,
             timeout: float = 120) -> Call:
        """One call in a process of its own; ``timeout`` only bounds a hung call (a call
        that drives a whole flow, such as ``demo``, passes a generous one)."""
        proc = subprocess.run([forkserver.python("orchestrator"), str(SCRIPT), "--workspace",
                               str(self.workspace), *argv], capture_output=True, text=True,
                              env={**self.env, **(extra_env or {})}, timeout=timeout)
        spec = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None
        call = Call(argv, proc.returncode, spec, proc.stderr)
        self.calls.append(call)
        return call

    def shell(self, command: str, extra_env: dict[str, str] | None = None) -> Call:
        """Run a command as printed by the orchestrator, from another directory; the
        interpreter it names, this one, started through the orchestrator fork server
        (``tests.forkserver``: the same interpreter, forked once it has imported the
        orchestrator's modules). Printed commands run unchanged from a fresh shell in the
        tests of such commands (``tests/store/test_pgstore.py``, ``tests/ci/test_cron.py``,
        the reproduce flow's refined commands)."""
        ours = shlex.quote(sys.executable) + " "
        if command.startswith(ours):
            command = shlex.quote(forkserver.python("orchestrator")) + " " + command[len(ours):]
        proc = subprocess.run(command, shell=True, capture_output=True, text=True, cwd="/",
                              env={**self.env, **(extra_env or {})}, timeout=120)
        spec = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None
        call = Call([command], proc.returncode, spec, proc.stderr)
        self.calls.append(call)
        return call

    def step(self, spec: dict[str, Any], sc: Scenario,
             extra_env: dict[str, str] | None = None) -> Call | None:
        """Do what ``spec`` asks once; None when the flow is finished."""
        status = spec["status"]
        if status == "waiting" and spec.get("waiting_on") in {"job", "budget"}:
            time.sleep(min(float(spec["poll_after_s"]), 0.5))  # a job the flow owns runs on
            return self.shell(spec["resume_command"], extra_env)
        if status in {"need_agent", "waiting"}:
            task = spec["tasks"][0]
            Path(task["feed_file"]).write_text(json.dumps(sc.answer(task)))
            return self.shell(task["feed_command"], extra_env)
        if status == "need_human":
            value = sc.choose(spec)
            option = next(o for o in spec["options"] if o["value"] == value)
            return self.shell(option["command"], extra_env)
        if status == "schedule_cron":
            return self.shell(spec["resume_command"], extra_env)
        return None

    def run(self, sc: Scenario, max_calls: int = 200) -> list[dict[str, Any]]:
        """Drive ``sc`` to ``done``; return every spec printed on the way."""
        first = self.call(sc.start)
        assert first.spec is not None, first.stderr
        specs = [first.spec]
        spec = first.spec
        for _ in range(max_calls):
            if spec["status"] in {"done", "error"}:
                return specs
            nxt = self.step(spec, sc)
            assert nxt is not None and nxt.spec is not None, nxt and nxt.stderr
            spec = nxt.spec
            specs.append(spec)
        raise AssertionError(f"{sc.name} did not finish in {max_calls} calls")


class InProcess(Driver):
    """The same calls run by ``orchestrator.main`` in this process: the same argument parsing,
    state, locks and jobs, no interpreter start. For tests whose subject is what a workflow
    does over many calls, not the process boundary (the contract suite drives every workflow
    across that boundary, kills included); a test replaying a flow then pays for the flow's
    work only. ``env`` is applied to ``os.environ`` around each call and taken back after;
    printed commands must be this interpreter running orchestrator.py."""

    def __init__(self, workspace: Path, env: dict[str, str] | None = None) -> None:
        super().__init__(workspace, env)
        self.own_env = dict(env or {})
        assert not any(k.startswith("ORCHESTRATOR_TEST_CRASH") for k in self.own_env), \
            "the crash hook needs a process of its own: use Driver"

    def _inproc(self, argv: list[str], shown: list[str], extra_env: dict[str, str] | None) -> Call:
        from tests.contract import inproc

        changes = {**self.own_env, **(extra_env or {})}
        saved = {k: os.environ.get(k) for k in changes}
        os.environ.update(changes)
        try:
            code, spec = inproc.call(argv)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        call = Call(shown, code, spec, "")
        self.calls.append(call)
        return call

    def call(self, argv: list[str], extra_env: dict[str, str] | None = None,
             timeout: float = 120) -> Call:
        return self._inproc(["--workspace", str(self.workspace), *argv], argv, extra_env)

    def shell(self, command: str, extra_env: dict[str, str] | None = None) -> Call:
        words = shlex.split(command)
        assert words[:2] == [sys.executable, str(SCRIPT)], f"not an orchestrator call: {command}"
        return self._inproc(words[2:], [command], extra_env)


def toy_at_review(drv: Driver) -> dict[str, Any]:
    """Start the toy flow ``toy/pic`` (the toy plugin must be in ``drv``'s environment) and
    feed each of its coder tasks until it asks for the review; that spec."""
    spec = drv.call(["start", "toy", "pic"]).spec
    assert spec is not None
    for task in spec["tasks"]:
        Path(task["feed_file"]).write_text(json.dumps({"ok": True, "value": 1}))
        spec = drv.call(["--flow", "toy/pic", "--feed", "coder", "--feed-file",
                         task["feed_file"]]).spec
        assert spec is not None
    assert "review" == spec["phase"]
    return spec
