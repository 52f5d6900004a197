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


def test_a_wrong_plan_is_ended_and_the_steps_own_run_decides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan that does not spell the steps' run (here: a command of its own) is ended when
    the step asks for its job, before it finishes; the step runs its own, which decides."""
    tree = _project(tmp_path)
    marker = tmp_path / "wrong-ran"
    real = headstart.plan

    def wrong(opts: dict[str, Any], root: Path, settings: Any) -> Any:
        got = real(opts, root, settings)
        assert got is not None
        slow = f"sleep 3; touch {marker}"
        return got._replace(argv=["bash", "-c", slow])

    monkeypatch.setattr(headstart, "plan", wrong)
    call = InProcess(tmp_path / "ws").call(["reproduce", "--profile", "local", "--stage",
                                            "nightly", "--source-dir", str(tree),
                                            "--command", f"pytest {NODE}"])
    assert call.spec is not None
    time.sleep(3.5)
    assert ("REPRODUCED", False, False) == (call.spec["verdict"]["verdict"],
                                            _started_ahead(tmp_path / "ws"), marker.exists())
    log = next((tmp_path / "ws").rglob("stage1.log")).read_text()
    assert "sleep 3" not in log and "-m pytest" in log


def test_a_run_no_step_asks_for_is_ended_with_the_call(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job started ahead under an id no step asks for is ended when the call ends, and
    its files are gone."""
    tree = _project(tmp_path)
    marker = tmp_path / "stray-ran"
    real = headstart.plan
    seen: dict[str, Any] = {}

    def stray(opts: dict[str, Any], root: Path, settings: Any) -> Any:
        got = real(opts, root, settings)
        assert got is not None
        seen["plan"] = got
        return got._replace(job_id="stage1-v1-other",
                            argv=["bash", "-c", f"sleep 3; touch {marker}"])

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
    time.sleep(3.5)
    assert not marker.exists()


def test_a_start_refused_after_the_head_start_leaves_no_folder_and_no_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow refuses to start after its run was started ahead: the call answers the
    error (exit 2), the run is ended, and no flow folder is left in the workspace."""
    tree = _project(tmp_path, nap=2)
    runs = tmp_path / "runs"
    from flow.core.errors import WorkflowInputError
    from flow.workflows.reproduce import declaration

    def refuse(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.3)  # the run started ahead is under way
        raise WorkflowInputError("refused for the test", "nothing to mend")

    monkeypatch.setattr(declaration, "start", refuse)
    call = InProcess(tmp_path / "ws").call(
        ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir", str(tree),
         "--command", f"pytest {NODE}"])
    assert (2, "error") == (call.code, call.spec and call.spec["status"])
    time.sleep(2.5)
    assert not list((tmp_path / "ws").rglob("*.json"))
    assert not [p for p in (tmp_path / "ws").rglob("*") if p.is_file()]
    assert "end" not in (runs.read_text() if runs.exists() else "")


def test_a_call_killed_after_its_head_start_never_runs_the_test_twice_at_once(
        tmp_path: Path) -> None:
    """The call is killed after it started the run ahead and before any state was saved:
    the next call ends that orphaned run before it starts its own, so the test ran to its
    end once, and the verdict is REPRODUCED."""
    tree = _project(tmp_path, nap=2)
    runs = tmp_path / "runs"
    counter = tmp_path / "counter"
    argv = ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir", str(tree),
            "--command", f"pytest {NODE}"]
    hook = {"ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter),
            "PYTHONPATH": str(Path(__file__).parents[1] / "crashhook")}
    # a traced run first (never killed) names the writes: kill before the first state save,
    # when the run started ahead is under way and no state knows it yet
    trace = tmp_path / "trace"
    Driver(tmp_path / "traced", {**hook, "ORCHESTRATOR_TEST_CRASH_AT": "999",
                                 "ORCHESTRATOR_TEST_CRASH_TRACE": str(trace)}).call(argv)
    first_save = next(int(n) for n, dest in (line.split("\t") for line in
                                             trace.read_text().splitlines())
                      if dest.endswith("flow_state.json"))
    assert first_save > 1  # the job's spec was written before it
    counter.unlink()
    runs.unlink()
    first = Driver(tmp_path / "ws", {**hook, "ORCHESTRATOR_TEST_CRASH_AT": str(first_save)})
    killed = first.call(argv)
    assert killed.code == -9 and killed.spec is None
    stop = time.monotonic() + 10
    while not (runs.exists() and "start" in runs.read_text()) and time.monotonic() < stop:
        time.sleep(0.05)
    done = Driver(tmp_path / "ws").call(argv)
    assert done.spec is not None, done.stderr
    time.sleep(2.5)  # long enough for an orphan left running to reach its end
    assert ("REPRODUCED", ["start", "start", "end"]) == (
        done.spec["verdict"]["verdict"], runs.read_text().split())


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
