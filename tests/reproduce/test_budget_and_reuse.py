"""A check the foreground budget cut short is asked again, never recorded (the verdict's
tree state under a 1 s budget and a slowed git), and a finished verdict is found again by
``--resume`` after its own run wrote ``__pycache__`` into a git tree, or a data file into
its tree."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.contract.driver import Driver
from tests.reproduce.conftest import REPO
from tests.reproduce.gitwrap import REAL_GIT, wrapped_path

FAILING = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"

# A git that is slow the second time it is asked for the tree's status (a cold disk, a big
# tree): longer than the whole 1 s budget. The first read is the flow key's, before the flow
# exists; the second is the verdict's. Every other call is the real git at once.
SLOW_GIT = """#!/bin/sh
case " $* " in
  *" status --porcelain=v2 "*)
    if mkdir "$SLOW_GIT_ARMED.seen" 2>/dev/null; then :
    elif mkdir "$SLOW_GIT_ARMED.fired" 2>/dev/null; then sleep 3; fi ;;
esac
exec {git} "$@"
"""


def _git_calc(tmp_path: Path, env: dict[str, str]) -> Path:
    """examples/calc committed in a fresh git repository with no .gitignore (so the run's
    __pycache__ folders show as untracked files)."""
    src = Path(shutil.copytree(REPO / "examples" / "calc", tmp_path / "calc",
                               ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache",
                                                             "*.egg-info")))
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "calc"]):
        subprocess.run([REAL_GIT, *argv], cwd=src, env=env, check=True, capture_output=True)
    return src


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid",
               GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    return env


def _drive(drv: Driver, argv: list[str], after_first: Any = None,
           max_calls: int = 400) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Start, then follow ``waiting`` answers (sleeping a little, never poll_after_s in
    full) until the flow is done; (last spec, every spec). ``after_first(spec)`` runs
    after the first call."""
    first = drv.call(argv)
    assert first.spec is not None, first.stderr
    specs = [first.spec]
    spec = first.spec
    if after_first is not None:
        after_first(spec)
    for _ in range(max_calls):
        if spec["status"] != "waiting":
            break
        time.sleep(0.2)
        nxt = drv.shell(spec["resume_command"])
        assert nxt.spec is not None, nxt.stderr
        spec = nxt.spec
        specs.append(spec)
    return spec, specs


def test_budget_cut_tree_state_is_asked_again_not_recorded(tmp_path: Path) -> None:
    """ORCHESTRATOR_FOREGROUND_S=1 and a git that takes 3 s once: the call whose budget ran
    out answers waiting (the read runs again as a job), and the verdict's tree is the git tree at its
    HEAD, never ``git: false`` / ``working-tree``. The slowed read is the verdict's read of
    the tree the command cd'd into (the tree of --source-dir was read for the flow id, before
    any run, and prepare takes that read)."""
    env = _env(tmp_path)
    src = _git_calc(tmp_path, env)
    other = tmp_path / "other-clone"
    subprocess.run([REAL_GIT, "clone", "-q", str(src), str(other)], env=env, check=True,
                   capture_output=True)
    head = subprocess.run([REAL_GIT, "rev-parse", "HEAD"], cwd=other, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    env.update(PATH=wrapped_path(tmp_path / "bin", SLOW_GIT, env["PATH"]), ORCHESTRATOR_FOREGROUND_S="1",
               SLOW_GIT_ARMED=str(tmp_path / "armed"))
    drv = Driver(tmp_path / "ws", env=env)
    argv = ["reproduce", "--profile", "local", "--source-dir", str(src), "--command",
            f"cd {other} && {FAILING}"]
    spec, specs = _drive(drv, argv)
    tree = spec["verdict"]["environment"]["tree"]
    assert ("done", "REPRODUCED", True, head, str(other)) == (
        spec["status"], spec["verdict"]["verdict"], tree["git"], tree["head"], tree["path"])
    assert (tmp_path / "armed.fired").is_dir(), "the slowed git status never ran"
    # the cut read is asked again as a job of the flow's own: the call answers waiting on it
    cut = [s for s in specs if s["status"] == "waiting" and s.get("waiting_on") == "job"
           and s["job"]["key"].startswith("query-")]
    assert cut and all(s["tasks"] == [] and s["resume_command"] for s in cut), [
        (s["status"], s.get("waiting_on"), (s.get("job") or {}).get("key")) for s in specs]


def test_resume_of_finished_flow_survives_its_own_pycache(tmp_path: Path) -> None:
    """The run writes tests/__pycache__ into the (gitignore-less) tree; the same command
    with --resume still finds the finished flow and prints its verdict again."""
    env = _env(tmp_path)
    src = _git_calc(tmp_path, env)
    drv = Driver(tmp_path / "ws", env=env)
    argv = ["reproduce", "--profile", "local", "--source-dir", str(src), "--command", FAILING]
    spec, _ = _drive(drv, argv)
    assert ("done", "REPRODUCED") == (spec["status"], spec["verdict"]["verdict"])
    debris = sorted(str(p.relative_to(src)) for p in src.rglob("__pycache__"))
    assert debris, "the run left no __pycache__: the test would prove nothing"
    again = drv.call([*argv, "--resume"])
    assert again.spec is not None, again.stderr
    assert ("done", spec["flow_id"], spec["verdict"]["verdict"]) == (
        again.spec["status"], again.spec["flow_id"], again.spec["verdict"]["verdict"]), json.dumps(
        again.spec.get("error"))
    # a real change of the tree is still another flow
    (src / "calc" / "__init__.py").write_text((src / "calc" / "__init__.py").read_text() + "\n# edited\n")
    changed = drv.call([*argv, "--resume"])
    assert changed.spec is not None and changed.spec["status"] == "error", changed.spec
    assert "flow_not_found" == changed.spec["error"]["code"]

# A git whose every status read after the first (the flow key's, before any run) waits
# until the test has written into the tree: what a busy machine does to a run started ahead
# of the flow's own steps, made certain.
LATE_GIT = """#!/bin/sh
case " $* " in
  *" status --porcelain=v2 "*)
    if ! mkdir "$LATE_GIT_ARMED.seen" 2>/dev/null; then
      i=0
      while ! grep -q written "$LATE_GIT_WATCH" && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
    fi ;;
esac
exec {git} "$@"
"""


def test_a_stage1_verdict_names_the_tree_as_the_run_found_it(tmp_path: Path) -> None:
    """A test that writes into a tracked file of its own tree does not make the verdict's
    tree look changed, even when the run started ahead wrote before the flow's prepare
    step ran: a Stage 1 verdict names the tree as the call found it before any run (the
    same reads the flow's key was made from)."""
    env = _env(tmp_path)
    src = _git_calc(tmp_path, env)
    late = dict(env, PATH=wrapped_path(tmp_path / "late-bin", LATE_GIT, env["PATH"]),
                LATE_GIT_ARMED=str(tmp_path / "late"), LATE_GIT_WATCH=str(src / "notes.txt"))
    (src / "tests" / "test_writes.py").write_text(
        "from pathlib import Path\n\n\ndef test_writes_then_fails():\n"
        "    Path('notes.txt').write_text('written by the test\\n')\n    assert False\n")
    (src / "notes.txt").write_text("tracked\n")
    for argv in (["add", "-A"], ["commit", "-qm", "a test that writes"]):
        subprocess.run([REAL_GIT, *argv], cwd=src, env=env, check=True, capture_output=True)
    head = subprocess.run([REAL_GIT, "rev-parse", "HEAD"], cwd=src, env=env, check=True,
                          capture_output=True, text=True).stdout.strip()
    spec, _ = _drive(Driver(tmp_path / "ws", env=late),
                     ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir",
                      str(src), "--command", "pytest tests/test_writes.py::test_writes_then_fails"])
    tree = spec["verdict"]["environment"]["tree"]
    assert ("REPRODUCED", head, False) == (spec["verdict"]["verdict"], tree["head"], tree["dirty"])
    assert "written by the test\n" == (src / "notes.txt").read_text()  # it did write


WRITES = '''from pathlib import Path


def test_mean():
    # the test leaves a data file in its own tree, as many do
    (Path(__file__).parent / "measured.json").write_text("[1, 2]")
    assert sum([1, 2]) / 2 == 2
'''


def test_resume_of_finished_flow_survives_a_data_file_its_test_wrote(tmp_path: Path) -> None:
    """The test writes a new data file into its (non-git) tree: the same command with
    --resume, and the same start, still find the finished flow by its id; a file a person
    changes afterwards is still another flow."""
    tree = tmp_path / "proj"
    (tree / "tests").mkdir(parents=True)
    (tree / "tests" / "test_mean.py").write_text(WRITES)
    drv = Driver(tmp_path / "ws")
    argv = ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir", str(tree),
            "--command", "pytest tests/test_mean.py"]
    spec, _ = _drive(drv, argv)
    assert ("done", "REPRODUCED") == (spec["status"], spec["verdict"]["verdict"])
    assert (tree / "tests" / "measured.json").exists()
    again = drv.call([*argv, "--resume"])
    assert again.spec is not None, again.stderr
    assert ("done", spec["flow_id"]) == (again.spec["status"], again.spec["flow_id"]), \
        json.dumps(again.spec.get("error"))
    start = drv.call(argv)
    assert start.spec is not None and (spec["flow_id"], True) == (
        start.spec["flow_id"], "reused_from" in start.spec), start.spec
    (tree / "tests" / "measured.json").write_text("[1, 2, 3]  # edited by a person")
    changed = drv.call([*argv, "--resume"])
    assert changed.spec is not None and "flow_not_found" == changed.spec["error"]["code"]
