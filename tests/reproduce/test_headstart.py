"""The first Stage 1 run started ahead of the workflow's imports (``headstart``): adopted
only when it is exactly the run the steps ask for, ended otherwise, never run twice at once,
never left behind by a call that ends without it."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.reproduce import headstart
from tests.contract.driver import Driver, InProcess

BAG = '''"""A bag that counts what goes in."""


def count(items):
    return len(set(items))  # BUG: duplicates are items too
'''
# The test notes its start and its end in a file (one line each; the run sees a fresh
# shell's environment, so the path is written into the test), so a test here can tell a run
# ended midway from one that ran to its end, and count them; it naps in between.
TESTS = '''import time
from bag import count


def _note(word):
    with open({runs!r}, "a") as fh:
        fh.write(word + "\\n")


def test_count_keeps_duplicates():
    _note("start")
    time.sleep({nap})
    _note("end")
    assert count(["a", "a"]) == 2


def test_count_of_nothing():
    assert count([]) == 0
'''
UNIT = '''import unittest
from bag import count


class CountTest(unittest.TestCase):
    def test_duplicates(self):
        self.assertEqual(count(["a", "a"]), 2)
'''


def _project(tmp_path: Path, nap: float = 0) -> Path:
    tree = tmp_path / "bagproject"
    (tree / "bag").mkdir(parents=True)
    (tree / "tests").mkdir()
    (tree / "bag" / "__init__.py").write_text(BAG)
    (tree / "tests" / "test_bag.py").write_text(TESTS.format(runs=str(tmp_path / "runs"),
                                                             nap=nap))
    (tree / "tests" / "test_unit.py").write_text(UNIT)
    (tree / "pyproject.toml").write_text('[project]\nname = "bag"\nversion = "0.1"\n')
    return tree


def _audit(ws: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in next(ws.rglob("audit.jsonl")).read_text().splitlines()]


def _started_ahead(ws: Path) -> bool:
    return any(r.get("started_ahead") for r in _audit(ws) if r.get("event") == "job_recorded")


NODE = "tests/test_bag.py::test_count_keeps_duplicates"


@pytest.mark.parametrize("command,extra", [
    (f"pytest {NODE}", []),
    (f"python -m pytest -v {NODE}", []),
    (f"python3 -m pytest {NODE} -k duplicates --tb=short", []),
    (f"pytest --runxfail -sv {NODE}", []),
    (f"pytest -p no:skipping {NODE}", []),
    (f"py.test {NODE}", ["--stage", "auto"]),
    (f"pytest {NODE}", ["--repeat", "2"]),
    (f"pytest {NODE}", ["--timeout", "30"]),  # fits the budget: adopted, not run again
    ("python -m unittest tests.test_unit.CountTest.test_duplicates", []),
    ("python -m unittest -q tests.test_unit", []),
])
def test_the_run_started_ahead_is_the_run_the_steps_ask_for(tmp_path: Path, command: str,
                                                            extra: list[str]) -> None:
    """For each command the plan covers, the step adopts the run started ahead (the job
    record says so) and the verdict is the one the steps reach: the plan spells exactly the
    job the steps ask for, and the test ran once per attempt."""
    tree = _project(tmp_path)
    runs = tmp_path / "runs"
    stage = [] if "--stage" in extra else ["--stage", "nightly"]
    call = Driver(tmp_path / "ws").call(["reproduce", "--profile", "local", *stage,
                                         "--source-dir", str(tree), "--command", command,
                                         *extra])
    assert call.spec is not None, call.stderr
    attempts = 2 if "--repeat" in extra else 1
    ran = runs.read_text().count("end\n") if runs.exists() else 0
    assert ("REPRODUCED", True) == (call.spec["verdict"]["verdict"], _started_ahead(tmp_path / "ws"))
    assert ran == (attempts if "test_bag" in command else 0)


@pytest.mark.parametrize("command", [
    "cd tests && pytest test_bag.py",                 # a shell operator
    "PYTHONWARNINGS=error pytest " + NODE,             # an env assignment
    "pytest 'tests/test_bag.py::test_count_keeps_duplicates'",  # quoting
    "pytest  " + NODE,                                 # two spaces: not one plain command
    "pytest test_count_keeps_duplicates::x",           # a bare node id
    "pytest",                                          # no target
    "python -c 'print(1)'",
    "python tests/test_bag.py",
    "python -m unittest",
    "pip install bag && pytest " + NODE,
    "pytest " + NODE + "\npytest " + NODE,
])
def test_the_plan_declines_what_the_steps_may_run_differently(tmp_path: Path,
                                                               command: str) -> None:
    tree = _project(tmp_path)
    opts = {"repro_command": command, "source_dir": str(tree), "profile": "local",
            "stage": "nightly"}
    assert headstart.plan(opts, tmp_path / "ws", {}) is None


@pytest.mark.parametrize("change", [{"profile": "pytorch-xpu"}, {"stage": "ci_env"},
                                    {"ci_commit": "abc1234"}, {"source_dir": None}])
def test_the_plan_covers_the_local_profile_in_a_tree_only(tmp_path: Path,
                                                          change: dict[str, Any]) -> None:
    tree = _project(tmp_path)
    opts = {"repro_command": f"pytest {NODE}", "source_dir": str(tree), "profile": "local",
            "stage": "nightly", **change}
    assert headstart.plan(opts, tmp_path / "ws", {}) is None


def test_a_tree_whose_package_is_also_installed_is_left_to_the_steps(tmp_path: Path) -> None:
    """The tree's bag/ is also in the interpreter's site-packages: whether the tree would
    shadow an installed copy is the steps' probe to decide, so nothing starts ahead."""
    tree = _project(tmp_path)
    venv = tmp_path / "venv"
    site = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (site / "bag").mkdir(parents=True)
    (venv / "bin").mkdir()
    python = venv / "bin" / "python"
    python.symlink_to(sys.executable)
    opts = {"repro_command": f"pytest {NODE}", "source_dir": str(tree), "profile": "local"}
    assert headstart.plan(opts, tmp_path / "ws",
                          {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)}) is None
    (site / "bag").rmdir()
    assert headstart.plan(opts, tmp_path / "ws",
                          {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)}) is not None


def _gone(pid: int) -> bool:
    try:
        return not Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True


def _wait_for(condition: Any, what: str, bound: float = 120.0) -> None:
    stop = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < stop, f"waited {bound} s for {what}"
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def test_a_wrong_plan_is_ended_and_the_steps_own_run_decides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan that does not spell the steps' run (here: a command of its own) is ended when
    the step asks for its job, before it finishes; the step runs its own, which decides."""
    tree = _project(tmp_path)
    marker = tmp_path / "wrong-ran"
    real = headstart.plan

    pid = tmp_path / "wrong-pid"

    def wrong(opts: dict[str, Any], root: Path, settings: Any) -> Any:
        got = real(opts, root, settings)
        assert got is not None
        slow = f"echo $$ > {pid}; sleep 300; touch {marker}"
        return got._replace(argv=["bash", "-c", slow])

    monkeypatch.setattr(headstart, "plan", wrong)
    call = InProcess(tmp_path / "ws").call(["reproduce", "--profile", "local", "--stage",
                                            "nightly", "--source-dir", str(tree),
                                            "--command", f"pytest {NODE}"])
    assert call.spec is not None
    # ended, not left to its end: its shell (if it got as far as starting) is gone
    if pid.exists():
        _wait_for(lambda: not _alive(int(pid.read_text())), "the wrong run to be ended")
    assert ("REPRODUCED", False, False) == (call.spec["verdict"]["verdict"],
                                            _started_ahead(tmp_path / "ws"), marker.exists())
    log = next((tmp_path / "ws").rglob("stage1.log")).read_text()
    assert "sleep 300" not in log and "-m pytest" in log


def test_a_run_no_step_asks_for_is_ended_with_the_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job started ahead under an id no step asks for is ended when the call ends, and
    its files are gone."""
    tree = _project(tmp_path)
    marker, pid = tmp_path / "stray-ran", tmp_path / "stray-pid"
    real = headstart.plan
    seen: dict[str, Any] = {}

    def stray(opts: dict[str, Any], root: Path, settings: Any) -> Any:
        got = real(opts, root, settings)
        assert got is not None
        seen["plan"] = got
        return got._replace(job_id="stage1-v1-other",
                            argv=["bash", "-c", f"echo $$ > {pid}; sleep 300; touch {marker}"])

    monkeypatch.setattr(headstart, "plan", stray)
    from flow.core import jobs, proc

    started: list[int] = []
    real_start = jobs.start_ahead

    def noting(*args: Any, **kwargs: Any) -> Any:
        early = real_start(*args, **kwargs)
        started.append(early.pid)
        return early

    monkeypatch.setattr(jobs, "start_ahead", noting)
    call = InProcess(tmp_path / "ws").call(["reproduce", "--profile", "local", "--stage",
                                            "nightly", "--source-dir", str(tree),
                                            "--command", f"pytest {NODE}"])
    assert call.spec is not None and "REPRODUCED" == call.spec["verdict"]["verdict"]
    folder = next((tmp_path / "ws").rglob("flow_state.json")).parent
    assert started and _gone(started[0]) and started[0] not in proc._detached
    assert not list((folder / "jobs").glob("stage1-v1-other*"))
    if pid.exists():  # its shell got as far as starting: ended with the call
        _wait_for(lambda: not _alive(int(pid.read_text())), "the stray run to be ended")
    assert not marker.exists()


def test_a_start_refused_after_the_head_start_leaves_no_folder_and_no_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow refuses to start after its run was started ahead: the call answers the
    error (exit 2), the run is ended, and no flow folder is left in the workspace."""
    tree, runs, release = _held_project(tmp_path)
    from flow.core.errors import WorkflowInputError
    from flow.workflows.reproduce import declaration

    def refuse(*args: Any, **kwargs: Any) -> Any:
        _wait_for(runs.exists, "the run started ahead to be under way")
        raise WorkflowInputError("refused for the test", "nothing to mend")

    monkeypatch.setattr(declaration, "start", refuse)
    call = InProcess(tmp_path / "ws").call(
        ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir", str(tree),
         "--command", f"pytest {NODE}"])
    assert (2, "error") == (call.code, call.spec and call.spec["status"])
    for pid in Path(f"{runs}.pid").read_text().split():
        _wait_for(lambda: not _alive(int(pid)), "the run to be ended")
    release.write_text("")  # too late: nothing is left to go on
    assert not list((tmp_path / "ws").rglob("*.json"))
    assert not [p for p in (tmp_path / "ws").rglob("*") if p.is_file()]
    assert ["start"] == runs.read_text().split()


# The killed-call tests' test waits for a release file on its first run only (``hold``):
# the run started ahead is under way, and stays so, until the test lets it end.
HELD = '''import os
import time
from bag import count


def _note(word):
    with open({runs!r}, "a") as fh:
        fh.write(word + "\\n")


def test_count_keeps_duplicates():
    first = not os.path.exists({runs!r})
    with open({runs!r} + ".pid", "a") as fh:
        fh.write(f"{{os.getpid()}}\\n")
    _note("start")
    stop = time.monotonic() + 300
    while first and not os.path.exists({release!r}) and time.monotonic() < stop:
        time.sleep(0.02)
    _note("end")
    assert count(["a", "a"]) == 2
'''


def _held_project(tmp_path: Path) -> tuple[Path, Path, Path]:
    tree = _project(tmp_path)
    runs, release = tmp_path / "runs", tmp_path / "release"
    (tree / "tests" / "test_bag.py").write_text(HELD.format(runs=str(runs),
                                                            release=str(release)))
    return tree, runs, release


def _killed_after_head_start(tmp_path: Path, argv: list[str]) -> tuple[Path, int]:
    """Start the call, kill -9 it the moment its head start's supervisor has taken the job
    (the claim file naming it appears), wait until the run is under way; (the flow's
    folder, the supervisor's pid)."""
    import os
    import signal
    import subprocess

    from tests.contract.driver import ROOT, SCRIPT

    ws = tmp_path / "ws"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    call = subprocess.Popen([sys.executable, str(SCRIPT), "--workspace", str(ws), *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    claims: list[Path] = []
    _wait_for(lambda: claims.extend(ws.rglob("jobs/*.supervisor")) or claims,
              "the head start's claim file")
    call.send_signal(signal.SIGKILL)
    call.wait()
    _wait_for(lambda: (tmp_path / "runs").exists(), "the run started ahead to begin")
    return claims[0].parent.parent, int(claims[0].read_text())


ARGV = ["reproduce", "--profile", "local", "--stage", "nightly", "--command", f"pytest {NODE}"]


@pytest.mark.parametrize("next_call", ["resume", "same start", "resume by id"])
def test_a_call_killed_after_its_head_start_leaves_a_flow_the_next_call_adopts(
        tmp_path: Path, next_call: str) -> None:
    """Killed right after its head start: the flow and its job are there (``status`` shows
    the job running), and the next call (--resume, the same start, or --flow ID --resume)
    adopts the run: the test ran once, start to end, and the verdict is REPRODUCED."""
    tree, runs, release = _held_project(tmp_path)
    argv = [*ARGV, "--source-dir", str(tree)]
    folder, supervisor = _killed_after_head_start(tmp_path, argv)
    flow_id = str(folder.relative_to(tmp_path / "ws"))
    drv = Driver(tmp_path / "ws")
    shown = drv.call(["status", "--json"])
    assert shown.spec is not None, shown.stderr
    [row] = [r for r in shown.spec["flows"] if r["flow_id"] == flow_id]
    assert ["stage1-v1-stage1"] == [j["id"] for j in row["jobs"]], row
    release.write_text("")
    again = {"resume": [*argv, "--resume"], "same start": argv,
             "resume by id": ["--flow", flow_id, "--resume"]}[next_call]
    done = drv.call(again)
    for _ in range(20):
        if done.spec is None or done.spec["status"] != "waiting":
            break
        done = drv.shell(done.spec["resume_command"])
    assert done.spec is not None and "verdict" in done.spec, (done.spec, done.stderr)
    audit = _audit(tmp_path / "ws")
    assert ("REPRODUCED", ["start", "end"], flow_id) == (
        done.spec["verdict"]["verdict"], runs.read_text().split(), done.spec["flow_id"])
    assert (1, True, []) == (sum(1 for r in audit if r["event"] == "created"),
                             _started_ahead(tmp_path / "ws"),
                             [r for r in audit if r["event"] == "job_lost"])
    assert not (folder / "ahead.json").exists()
    _wait_for(lambda: not _alive(supervisor), "the adopted run's supervisor to end")


def test_a_run_started_ahead_that_nobody_adopts_is_ended_by_the_next_call(
        tmp_path: Path) -> None:
    """The killed call's run hangs (its test never released); the next call is a
    --restart, which runs the test anew: the orphan is ended first, never left to its
    timeout, and only the new run reaches its end."""
    tree, runs, release = _held_project(tmp_path)
    argv = [*ARGV, "--source-dir", str(tree)]
    folder, supervisor = _killed_after_head_start(tmp_path, argv)
    done = Driver(tmp_path / "ws").call([*argv, "--restart"])
    assert done.spec is not None, done.stderr
    _wait_for(lambda: not _alive(supervisor), "the orphan's supervisor to be ended")
    assert ("REPRODUCED", ["start", "start", "end"]) == (done.spec["verdict"]["verdict"],
                                                         runs.read_text().split())


# A git whose status reads wait while the file ``$HELD_GIT`` is there. The first call's
# reads of the tree (for its flow key, and prepare's, in the foreground or as a job) then
# cannot answer before it ends, however busy the machine: a quick git that answered anyway
# (a read that finished as the budget ran out, a job done before the call looked again)
# would carry prepare on to Stage 1 within that call.
HELD_GIT = """#!/bin/sh
case " $* " in
  *" status "*)
    i=0
    while [ -e "$HELD_GIT" ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done ;;
esac
exec {git} "$@"
"""


def _held_git(tmp_path: Path) -> dict[str, str]:
    """The environment of a call whose git status reads wait for ``HELD_GIT`` to go."""
    import os

    from tests.reproduce.gitwrap import wrapped_path

    hold = tmp_path / "git-held"
    hold.write_text("")
    return {"PATH": wrapped_path(tmp_path / "held-bin", HELD_GIT, os.environ["PATH"]),
            "HELD_GIT": str(hold)}


def test_a_call_whose_budget_runs_out_before_stage1_leaves_its_early_run_to_be_adopted(
        tmp_path: Path) -> None:
    """The call's foreground budget is spent before Stage 1 asks for its run: the call
    answers waiting and its run started ahead goes on; the --resume that reaches Stage 1
    adopts it (the test ran once) instead of ending it and running the test again."""
    tree, runs, release = _held_project(tmp_path)
    argv = [*ARGV, "--source-dir", str(tree)]
    drv = Driver(tmp_path / "ws")
    held = _held_git(tmp_path)
    first = drv.call(argv, {"ORCHESTRATOR_FOREGROUND_S": "0.001", **held})
    assert first.spec is not None and first.spec["status"] == "waiting", first.stderr
    assert not any(r["event"] == "job_recorded" and r.get("job_id") == "stage1-v1-stage1"
                   for r in _audit(tmp_path / "ws")), "the budget lasted to Stage 1"
    Path(held["HELD_GIT"]).unlink()
    _wait_for(lambda: runs.exists(), "the run started ahead to begin")
    release.write_text("")
    done = first
    for _ in range(40):
        if done.spec is None or done.spec["status"] != "waiting":
            break
        done = drv.shell(done.spec["resume_command"])
    assert done.spec is not None, done.stderr
    assert ("REPRODUCED", ["start", "end"], True) == (
        done.spec["verdict"]["verdict"], runs.read_text().split(),
        _started_ahead(tmp_path / "ws"))


def test_the_way_to_the_head_start_imports_no_heavy_module() -> None:
    """Everything a call imports before its run starts ahead (the CLI's parsing and
    dispatch, the plan, the lock, the runner and the job starter) loads no pydantic,
    orjson, dataclasses (which imports inspect) or transitions: those cost the test's
    start-up time when they came first."""
    import subprocess

    code = ("import sys; sys.argv = ['orchestrator.py']\n"
            "import orchestrator\n"
            "from flow.cli import ahead, argv, main\n"
            "from flow.core import jobs, proc\n"
            "from flow.workflows.reproduce import headstart, identity\n"
            "from workspace import lock, paths, selection\n"
            "print(' '.join(sorted(sys.modules)))\n")
    root = Path(__file__).resolve().parents[2]
    loaded = set(subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True,
                                text=True, check=True).stdout.split())
    assert set() == {"pydantic", "orjson", "dataclasses", "inspect", "transitions"} & loaded
