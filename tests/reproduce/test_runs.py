"""Reproducer runs through the real CLI on flow.core.proc: output
that is not UTF-8, a hang cut by ``--timeout 3`` in every reproducer form, a token the
reproducer never sees and no log holds, and workspaces whose path holds a space or
``" ;`` through the Stage 2 venv."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce.conftest import REPO

SLOW_TEST = '''
import time


def test_hangs():
    time.sleep(60)


def test_fails_only_in_the_built_venv():
    import sys
    assert "/build/venv/" not in sys.executable
'''


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    src = Path(shutil.copytree(REPO / "examples" / "calc", tmp_path / "calc"))
    (src / "tests" / "test_slow.py").write_text(SLOW_TEST)
    return src


def _call(drv: Driver, src: Path, command: str, *extra: str) -> dict[str, Any]:
    call = drv.call(["reproduce", "--profile", "local", "--source-dir", str(src),
                     "--command", command, *extra])
    assert call.spec is not None, call.stderr
    return call.spec


def test_non_utf8_output_is_read_and_resumable(calc: Path, tmp_path: Path) -> None:
    """Output with b'caf\\xe9' ends REPRODUCED, and a --resume answers the same verdict."""
    drv = Driver(tmp_path / "ws")
    command = 'python -c "import sys; sys.stdout.buffer.write(b\'caf\\xe9\\n\'); sys.exit(1)"'
    spec = _call(drv, calc, command, "--stage", "nightly")
    again = drv.call(["--resume", "--flow", spec["flow_id"]]).spec
    assert ("done", "REPRODUCED", "done", "REPRODUCED") == (
        spec["status"], spec["verdict"]["verdict"], again["status"], again["verdict"]["verdict"])


HANGS = [
    ("python-c", 'python -c "import time; time.sleep(60)"'),
    ("pytest", "pytest tests/test_slow.py::test_hangs"),
    ("shell-block", 'git --version\npython -c "import time; time.sleep(60)"'),
]


@pytest.mark.parametrize("command", [h[1] for h in HANGS], ids=[h[0] for h in HANGS])
def test_a_hang_is_cannot_verify_after_the_timeout(calc: Path, tmp_path: Path, command: str) -> None:
    """--timeout 3 ends a hang in every form as CANNOT_VERIFY 'timed out after 3 s', fast."""
    started = time.monotonic()
    spec = _call(Driver(tmp_path / "ws"), calc, command, "--timeout", "3", "--stage", "nightly")
    took = time.monotonic() - started
    verdict = spec["verdict"]
    assert (spec["status"], verdict["verdict"], verdict["blocker"].startswith("timed out after 3 s"),
            took < 40) == ("done", "CANNOT_VERIFY", True, True), verdict


def test_a_token_never_reaches_the_reproducer_or_a_log(calc: Path, tmp_path: Path) -> None:
    """A token in the orchestrator's env is unseen by the reproducer and in no workspace file."""
    sentinel = "ghp_sentinel_4f1c2a9e"
    drv = Driver(tmp_path / "ws", {"GITHUB_TOKEN": sentinel, "MY_API_TOKEN": sentinel})
    command = ('python -c "import os, sys; print(os.environ.get(\'GITHUB_TOKEN\'), '
               'os.environ.get(\'MY_API_TOKEN\')); sys.exit(1)"')
    spec = _call(drv, calc, command, "--stage", "nightly")
    holders = [p for p in (tmp_path / "ws").rglob("*") if p.is_file()
               and sentinel.encode() in p.read_bytes()]
    log = (Path(spec["workspace"]) / "logs" / "stage1.log").read_text()
    assert ("REPRODUCED", [], True) == (spec["verdict"]["verdict"], holders, "None None" in log)


@pytest.mark.parametrize("name", ["ws space", 'ws" ;quote'])
def test_stage2_venv_in_a_workspace_path_with_space_or_quotes(calc: Path, tmp_path: Path,
                                                               name: str) -> None:
    """Stage 2 works under a workspace path with a space or '" ;' and its command fails alone."""
    drv = Driver(tmp_path / name, {"ORCHESTRATOR_REPRODUCE_OFFLINE": "1"})
    spec = _call(drv, calc, "pytest tests/test_slow.py::test_fails_only_in_the_built_venv")
    assert spec["status"] == "need_agent", spec
    task = spec["tasks"][0]
    build = subprocess.run(task["argv"], cwd=task.get("cwd"), capture_output=True, text=True)
    Path(task["log_file"]).write_text(build.stdout + build.stderr)
    Path(task["feed_file"]).write_text(json.dumps({"exit_code": build.returncode,
                                                   "log_path": task["log_file"]}))
    call = drv.shell(task["feed_command"])
    assert call.spec is not None, call.stderr
    verdict = call.spec["verdict"]
    venv_python = str(Path(spec["workspace"]) / "build" / "venv" / "bin" / "python")
    rerun = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c",
                            verdict["refined_command"]], capture_output=True, text=True)
    assert (build.returncode, verdict["verdict"], verdict["stage"],
            verdict["environment"]["interpreter"], verdict["environment"]["project_install"],
            verdict["rerun_after_fix"], rerun.returncode) == (
        0, "REPRODUCED", "source_build", venv_python, "editable", "", 1), (build.stdout, verdict)


def test_batch_entries_do_not_share_what_setup_steps_install(calc: Path, tmp_path: Path) -> None:
    """An entry's setup installs stay in its own env; logs per entry; report shows refined_command."""
    from tests.reproduce.conftest import build_wheel

    wheel = build_wheel(tmp_path / "wheels", "markerpkg", "1.0")
    project = tmp_path / "project-env"
    projectenv.lending(project)
    probe = 'python -c "import markerpkg; raise SystemExit(3)"'
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "installs", "stage": "nightly",
         "command": f"python -m pip install --no-index --no-deps {wheel}\n{probe}"},
        {"id": "plain", "stage": "nightly", "command": probe},
    ]))
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(project / "bin" / "python")})
    call = drv.call(["reproduce", "--profile", "local", "--source-dir", str(calc),
                     "--batch", str(batch)])
    assert call.spec is not None, call.stderr
    rows = {r["id"]: r["verdict"] for r in
            json.loads(Path(call.spec["report_json_path"]).read_text())["rows"]}
    markdown = Path(call.spec["report_path"]).read_text()
    leaked = subprocess.run([str(project / "bin" / "python"), "-c", "import markerpkg"],
                            capture_output=True).returncode == 0
    logs = Path(call.spec["workspace"]) / "logs"
    assert (rows["installs"]["verdict"], "entries/installs/venv" in rows["installs"]["refined_command"],
            rows["plain"]["verdict"], "missing dependency" in rows["plain"]["blocker"], leaked,
            (logs / "installs" / "setup.log").is_file(), (logs / "plain" / "stage1.log").is_file(),
            "| refined_command | unskipped |" in markdown) == (
        "REPRODUCED", True, "CANNOT_VERIFY", True, False, True, True, True), rows


UNITTEST_SKIPPED = '''
import unittest


class TestHidden(unittest.TestCase):
    @unittest.skip("hides a bug")
    def test_hidden(self):
        self.assertEqual(1, 2)
'''


def _jobs_ended(ws: Path, within_s: float = 120.0) -> None:
    """Wait until every background job the workspace's flows started has ended (no process
    left in the process group each job recorded)."""
    deadline = time.monotonic() + within_s

    def alive(pgid_file: Path) -> bool:
        try:
            os.killpg(int(pgid_file.read_text().split()[0]), 0)
        except (OSError, ValueError, IndexError):
            return False
        return True

    while any(alive(f) for f in ws.rglob("jobs/*.pgid")):
        assert time.monotonic() < deadline, "a job of the flow was still running"
        time.sleep(0.05)


def test_a_resume_keeps_what_the_user_wrote_into_the_edited_file(calc: Path, tmp_path: Path) -> None:
    """Killed after the marker edit, then edited by the user: --resume keeps the user's file."""
    from tests.contract.driver import CRASH_HOOK

    target = calc / "tests" / "test_unittest_hidden.py"
    target.write_text(UNITTEST_SKIPPED)
    before = target.read_bytes()
    command = "pytest tests/test_unittest_hidden.py::TestHidden::test_hidden"
    argv = ["reproduce", "--profile", "local", "--source-dir", str(calc), "--stage", "nightly",
            "--command", command]
    for n in range(1, 40):
        target.write_bytes(before)
        drv = Driver(tmp_path / f"ws{n}", {"PYTHONPATH": str(CRASH_HOOK),
                                           "ORCHESTRATOR_TEST_CRASH_AT": str(n),
                                           "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / f"c{n}"),
                                           "ORCHESTRATOR_TEST_CRASH_WHEN": "after"})
        first = drv.call(argv)
        assert first.code in (-9, 137), f"no kill at write {n}: {first.spec}"
        if target.read_bytes() != before:
            break  # killed with our edit in the file
    else:
        pytest.fail("no kill left the file edited")
    mine = target.read_bytes().replace(b"class TestHidden", b"# the user's note\nclass TestHidden")
    target.write_bytes(mine)
    again = Driver(tmp_path / f"ws{n}").call(argv)
    _jobs_ended(tmp_path / f"ws{n}")  # a re-run still going in the background must not rewrite it either
    assert (again.spec["status"], again.spec["verdict"]["verdict"],
            "changed by someone else" in again.spec["verdict"]["blocker"],
            target.read_bytes() == mine) == ("done", "CANNOT_VERIFY", True, True), again.spec


STRICT_SKIPPED = '''
import pytest


@pytest.mark.skip(reason="hides a bug")
def test_hidden():
    assert 1 == 2
'''


def test_a_pytest_skip_the_bypass_cannot_reach_is_taken_out_of_the_file(calc: Path, tmp_path: Path) -> None:
    """Where -p no:skipping fails, the pytest skip marker is taken out of the file for one run."""
    (calc / "tests" / "conftest.py").write_text(
        "def pytest_configure(config):\n    config.option.runxfail  # needs the skipping plugin\n")
    target = calc / "tests" / "test_strict.py"
    target.write_text(STRICT_SKIPPED)
    before = target.read_bytes()
    spec = _call(Driver(tmp_path / "ws"), calc, "pytest tests/test_strict.py::test_hidden",
                 "--stage", "nightly")
    verdict = spec["verdict"]
    assert (verdict["verdict"], verdict["unskipped"]["decorator"], verdict["unskipped"]["bypass"],
            verdict["self_check"]["fails"], target.read_bytes() == before) == (
        "REPRODUCED", "pytest.mark.skip", None, False, True), spec


def test_a_failed_build_quotes_its_real_error(calc: Path, tmp_path: Path) -> None:
    """A failed Stage 2 build's CANNOT_VERIFY blocker quotes the build's real error."""
    pyproject = calc / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(
        'build-backend = "setuptools.build_meta"', 'build-backend = "no_such_backend_here"'))
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_OFFLINE": "1"})
    spec = _call(drv, calc, "pytest tests/test_calc.py::test_add")
    task = spec["tasks"][0]
    build = subprocess.run(task["argv"], cwd=task.get("cwd"), capture_output=True, text=True)
    Path(task["log_file"]).write_text(build.stdout + build.stderr)
    Path(task["feed_file"]).write_text(json.dumps({"exit_code": build.returncode,
                                                   "log_path": task["log_file"]}))
    verdict = drv.shell(task["feed_command"]).spec["verdict"]
    assert (build.returncode, verdict["verdict"], verdict["stage"],
            "no_such_backend_here" in verdict["blocker"]) == (
        1, "CANNOT_VERIFY", "source_build", True), verdict


def test_a_verdict_is_reused_only_for_the_same_tree_and_interpreter(calc: Path, tmp_path: Path) -> None:
    """Same key reprints the verdict; after a fix in the tree it is a new run linking the old."""
    drv = Driver(tmp_path / "ws")
    command = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"
    first = _call(drv, calc, command, "--stage", "nightly")
    same = _call(drv, calc, command, "--stage", "nightly")
    source = calc / "calc" / "__init__.py"
    source.write_text(source.read_text().replace("sum(values) // len(values)",
                                                 "sum(values) / len(values)"))
    fixed = _call(drv, calc, command, "--stage", "nightly")
    decided = [json.loads((Path(s["workspace"]) / "report.json").read_text())["decided_at"]
               for s in (first, same)]
    assert (same["flow_id"], decided[1], first["verdict"]["verdict"]) == (
        first["flow_id"], decided[0], "REPRODUCED")
    assert ("reused_from" in first, first["flow_id"]) == (False, same["reused_from"]["flow_id"])
    assert "reused_from" not in fixed
    assert (fixed["flow_id"] != first["flow_id"], fixed["verdict"]["verdict"],
            any(first["flow_id"] in n for n in fixed["report"]["notes"])) == (
        True, "NOT_REPRODUCED", True), fixed["report"]["notes"]


def test_another_interpreter_is_a_new_run(calc: Path, tmp_path: Path) -> None:
    """Another ORCHESTRATOR_REPRODUCE_PYTHON is a new run whose verdict names that interpreter."""
    venv = tmp_path / "other"
    projectenv.lending(venv, "--system-site-packages")
    command = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"
    first = _call(Driver(tmp_path / "ws"), calc, command, "--stage", "nightly")
    again = _call(Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(venv / "bin" / "python")}),
                  calc, command, "--stage", "nightly")
    assert (again["flow_id"] != first["flow_id"], again["verdict"]["environment"]["interpreter"]) == (
        True, str(venv / "bin" / "python"))
