"""A batch entry that ``cd``s into another git tree is credited with that tree's commit
(``environment.tree`` and ``base``), not with --source-dir's; an entry run in --source-dir
keeps its HEAD. At Stage 2 each entry runs against a build of the tree it ran in."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.contract.driver import CRASH_HOOK, Driver
from tests.reproduce import tinyproject


def test_an_entry_that_cds_into_another_tree_names_that_tree(tmp_path: Path) -> None:
    src = tinyproject.make(tmp_path / "src")
    other = tmp_path / "other-clone"
    subprocess.run(["git", "clone", "-q", str(src), str(other)], check=True,
                   env=tinyproject.git_env(tmp_path))
    (other / "NOTES.txt").write_text("a commit only the clone has\n")
    subprocess.run(["git", "-C", str(other), "add", "-A"], check=True,
                   env=tinyproject.git_env(tmp_path))
    subprocess.run(["git", "-C", str(other), "commit", "-qm", "clone only"], check=True,
                   env=tinyproject.git_env(tmp_path))
    node = "tests/test_add.py::TestAdd::test_add"
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "here", "stage": "nightly", "command": f"pytest {node}"},
        {"id": "there", "stage": "nightly", "command": f"cd {other} && python -m pytest {node}"},
    ]))
    call = Driver(tmp_path / "ws").call(["reproduce", "--profile", "local", "--source-dir",
                                          str(src), "--batch", str(batch)])
    assert call.spec is not None, call.stderr
    rows = {r["id"]: r["verdict"] for r in
            json.loads(Path(call.spec["report_json_path"]).read_text())["rows"]}

    def credited(row: dict) -> tuple:
        tree = (row.get("environment") or {}).get("tree") or {}
        return row["verdict"], row.get("base"), tree.get("head"), tree.get("path")

    src_head, other_head = tinyproject.head(src), tinyproject.head(other)
    assert ((("REPRODUCED", src_head, src_head, str(src)),
             ("REPRODUCED", other_head, other_head, str(other)))) == (
        credited(rows["here"]), credited(rows["there"])), rows


def _feed_builds(drv: Driver, spec: dict) -> tuple[dict, list[list[str]]]:
    """Run each build task the flow asks for and feed its exit code, until it is done; the
    final spec and every task's argv. A task the flow is still waiting on whose result is
    already written (its feed call was killed) is fed again, as a harness does, not run."""
    ran: list[list[str]] = []
    while spec["status"] in {"need_agent", "waiting"}:
        task = spec["tasks"][0]
        if spec["status"] == "need_agent" or not Path(task["feed_file"]).is_file():
            ran.append(task["argv"])
            proc = subprocess.run(task["command"], shell=True, capture_output=True, text=True,
                                  env={k: v for k, v in drv.env.items() if "TEST_CRASH" not in k})
            Path(task["log_file"]).write_text(proc.stdout + proc.stderr)
            Path(task["feed_file"]).write_text(json.dumps({"exit_code": proc.returncode,
                                                           "log_path": task["log_file"]}))
        call = drv.shell(task["feed_command"])
        assert call.spec is not None, call.stderr
        spec = call.spec
    return spec, ran



def _two_tree_start(tmp_path: Path, a: Path, b: Path,
                    env: dict[str, str] | None = None) -> tuple[Driver, list[str]]:
    """An ``auto`` batch to start with --source-dir A: entry in-a runs there, in-b ``cd``s
    into B; both pass only outside a built venv. Its driver and start words."""
    check = "import sys, {0}; assert '/build' not in sys.executable, sys.executable"
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "in-a", "command": f'python -c "{check.format("tinycalc")}"'},
        {"id": "in-b", "command": f'cd {b} && python -c "{check.format("othercalc")}"'},
    ]))
    drv = Driver(tmp_path / "ws", {**tinyproject.git_env(tmp_path),
                                   "ORCHESTRATOR_REPRODUCE_OFFLINE": "1", **(env or {})})
    return drv, ["reproduce", "--profile", "local", "--source-dir", str(a), "--batch",
                 str(batch)]


def _two_tree_batch(tmp_path: Path, a: Path, b: Path) -> tuple[dict, list[list[str]]]:
    """The two-tree batch with every build it asks for run and fed; the last spec and the
    build commands run."""
    drv, argv = _two_tree_start(tmp_path, a, b)
    first = drv.call(argv)
    assert first.spec is not None, first.stderr
    return _feed_builds(drv, first.spec)


def _rows(spec: dict) -> dict:
    rows = json.loads(Path(spec["report_json_path"]).read_text())["rows"]
    return {r["id"]: (r["verdict"]["verdict"], r["verdict"].get("stage"),
                      (r["verdict"].get("environment") or {}).get("interpreter")) for r in rows}


@pytest.mark.slow
def test_a_kill_between_the_two_trees_builds_resumes_at_the_second_never_the_first(
        tmp_path: Path) -> None:
    """A SIGKILL at each write of the call that takes tree A's build (fed) and asks for tree
    B's, then the start command again: the flow asks for B's build only (A's is kept, never
    asked for twice) and ends with the rows of an uninterrupted run."""
    a = tinyproject.make(tmp_path / "a")
    b = tinyproject.make_named(tmp_path / "b", "othercalc", src_layout=False)
    counter = tmp_path / "count"
    drv, argv = _two_tree_start(tmp_path, a, b, {"PYTHONPATH": str(CRASH_HOOK),
                                                 "ORCHESTRATOR_TEST_CRASH_AT": "999999",
                                                 "ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter)})
    first = drv.call(argv)
    assert first.spec is not None and "need_agent" == first.spec["status"], first.stderr
    task = first.spec["tasks"][0]
    assert str(a) == task["argv"][task["argv"].index("--source") + 1]
    built = subprocess.run(task["command"], shell=True, capture_output=True, text=True,
                           env={k: v for k, v in drv.env.items() if "TEST_CRASH" not in k})
    Path(task["log_file"]).write_text(built.stdout + built.stderr)
    Path(task["feed_file"]).write_text(json.dumps({"exit_code": built.returncode,
                                                   "log_path": task["log_file"]}))
    ws, snapshot = tmp_path / "ws", tmp_path / "a-built"
    shutil.copytree(ws, snapshot, symlinks=True)  # restored at the same path: the venv holds
    before = int(counter.read_text())
    asked = drv.shell(task["feed_command"])
    assert asked.spec is not None, asked.stderr
    writes = int(counter.read_text()) - before
    clean, ran = _feed_builds(drv, asked.spec)
    assert "done" == clean["status"] and [str(b)] == [r[r.index("--source") + 1] for r in ran]
    expected = _rows(clean)
    assert ("REPRODUCED", "source_build") == expected["in-b"][:2], expected
    for n in sorted({before + 1, before + (writes + 1) // 2, before + writes}):
        shutil.rmtree(ws)
        shutil.copytree(snapshot, ws, symlinks=True)
        (tmp_path / f"c{n}").write_text(str(before))
        armed = Driver(ws, {**drv.env, "ORCHESTRATOR_TEST_CRASH_AT": str(n),
                            "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / f"c{n}")})
        assert armed.shell(task["feed_command"]).code in (-9, 137), f"point {n} did not kill"
        again = drv.call(argv)
        assert again.spec is not None, again.stderr
        spec, ran = _feed_builds(drv, again.spec)
        assert ("done", [str(b)], expected) == (
            spec["status"], [r[r.index("--source") + 1] for r in ran], _rows(spec)), f"point {n}"


def test_auto_entries_in_two_trees_are_each_run_against_a_build_of_their_own_tree(
        tmp_path: Path) -> None:
    """An ``auto`` batch: one entry runs in --source-dir (project A), one ``cd``s into
    project B's clone; both pass Stage 1 and fail only in a built venv. Stage 2 builds
    each tree once, A then B, each into a venv of its own, and each entry's verdict names
    its own build's interpreter and its own project installed there."""
    a = tinyproject.make(tmp_path / "a")
    b = tinyproject.make_named(tmp_path / "b", "othercalc", src_layout=False)
    spec, ran = _two_tree_batch(tmp_path, a, b)
    assert "done" == spec["status"], spec
    rows = {r["id"]: r["verdict"] for r in
            json.loads(Path(spec["report_json_path"]).read_text())["rows"]}

    def told(row: dict) -> tuple:
        env = row.get("environment") or {}
        return (row["verdict"], row.get("stage"), Path(env.get("interpreter", "")).parts[-4:],
                env.get("project"), env.get("project_install"))

    assert ([str(a), str(b)],
            ("REPRODUCED", "source_build", ("build", "venv", "bin", "python"), "tinycalc",
             "editable"),
            ("REPRODUCED", "source_build", ("build2", "venv", "bin", "python"), "othercalc",
             "editable")) == (
        [argv[argv.index("--source") + 1] for argv in ran], told(rows["in-a"]),
        told(rows["in-b"])), rows


def test_a_tree_whose_build_fails_decides_only_its_own_entries(tmp_path: Path) -> None:
    """The same batch with project B's build broken (its backend raises): B's entry is
    CANNOT_VERIFY at source_build, naming B's tree and quoting the build's error; A's entry still runs
    against A's build and is REPRODUCED there."""
    a = tinyproject.make(tmp_path / "a")
    b = tinyproject.make_named(tmp_path / "b", "othercalc", src_layout=False)
    backend = b / "tinybackend.py"
    backend.write_text(backend.read_text() + (
        "\n\ndef build_wheel(*args, **kwargs):\n    raise RuntimeError('othercalc cannot be built')"
        "\n\n\nbuild_editable = build_wheel\n"))
    spec, ran = _two_tree_batch(tmp_path, a, b)
    rows = {r["id"]: r["verdict"] for r in
            json.loads(Path(spec["report_json_path"]).read_text())["rows"]}
    assert ("done", 2, ("REPRODUCED", "source_build"), ("CANNOT_VERIFY", "source_build", True, True)) == (
        spec["status"], len(ran), (rows["in-a"]["verdict"], rows["in-a"]["stage"]),
        (rows["in-b"]["verdict"], rows["in-b"]["stage"],
         "othercalc cannot be built" in rows["in-b"]["blocker"],
         rows["in-b"]["blocker"].startswith(f"the tree {b} fails to build"))), rows
