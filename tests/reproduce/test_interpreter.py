"""The reproduce interpreter is resolved once, at start: a --resume whose environment
names another ORCHESTRATOR_REPRODUCE_PYTHON (or none) keeps the recorded one."""
from __future__ import annotations

import os
import stat
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flow.workflows.reproduce import context
from flow.workflows.reproduce.prepare import steps as prepare_steps
from flow.workflows.reproduce.profiles import load_profile
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.stage1 import steps as stage1_steps
from flow.workflows.reproduce.stage3 import steps as stage3_steps
from flow.workflows.reproduce.declaration import ReproData, start


def _python(folder: Path) -> str:
    folder.mkdir(parents=True)
    exe = folder / "python"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return str(exe)


def _ctx(tmp_path: Path, data: ReproData, settings: dict[str, str]) -> Any:
    def path(rel: str) -> Path:
        out = tmp_path / "flow" / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        return out

    def query(argv: list[str], *, timeout: float = 60.0, cwd: Any = None, env: Any = None) -> Any:
        # the engine's ctx.query, in the foreground through the runner (which a test may
        # stand in for, as it does for every other run of the step)
        code, text = runner.run(argv, cwd=cwd, env=settings if env is None else env,
                                log=path("logs/query.log"), timeout=timeout)
        return SimpleNamespace(code=code, text=text)

    return SimpleNamespace(data=data, settings=settings, path=path, root=tmp_path,
                           dir=tmp_path / "flow", log=lambda *_: None, query=query)


@pytest.mark.parametrize("later", ["other", "unset"])
def test_resume_under_another_python_keeps_the_recorded_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, later: str) -> None:
    from flow.core import proc

    # this test process is long-lived: its runs get a fresh foreground budget, undone after
    monkeypatch.setattr(proc, "_call_started", time.monotonic())
    first = _python(tmp_path / "first")
    data = start({"repro_command": "python -c pass"}, tmp_path,
                 {context.PYTHON_ENV: first})
    assert data.reproduce_python == first
    resumed = ReproData.model_validate(data.model_dump(mode="json"))  # saved, loaded
    settings = ({context.PYTHON_ENV: _python(tmp_path / "second")} if later == "other"
                else {})
    ctx = _ctx(tmp_path, resumed, settings)
    ran: list[list[str]] = []

    def fake_run(argv: list[str], **_: Any) -> tuple[int, str]:
        ran.append(argv)
        return 0, '{"torch": "2.9.0", "torchvision": "0.24.0", "torchaudio": "2.9.0"}'

    monkeypatch.setattr(runner, "run", fake_run)
    assert prepare_steps.prepare(ctx).trigger == "prepared"
    assert ctx.data.python == first and ctx.data.path_head == str(Path(first).parent)
    profile = load_profile("pytorch-xpu")
    assert stage1_steps.install_nightly(ctx, profile) is None
    assert stage3_steps.install_ci(ctx, profile.model_copy(update={"tree": None}), ["w.whl"]) is None
    assert ran and all(argv[0] == first for argv in ran), ran


def test_a_state_saved_before_the_interpreter_was_recorded_resolves_it(tmp_path: Path) -> None:
    old = ReproData.model_validate({"command": "python -c pass"})
    assert old.reproduce_python is None
    ctx = _ctx(tmp_path, old, {})
    assert context.interpreter(ctx) == sys.executable
    named = _python(tmp_path / "named")
    ctx.settings = {context.PYTHON_ENV: named}
    assert context.interpreter(ctx) == os.path.abspath(named)
