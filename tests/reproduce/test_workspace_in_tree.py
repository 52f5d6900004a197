"""The default workspace inside the project tree (seed: "One flow per input"; ``reuse``'s
flow key): a call made from the tree without ``--workspace`` keeps its flows in
``./agent_space``, inside the tree; the orchestrator's own files there are no change of
the tree, so identical starts racing from the tree make one flow and run the test once,
a later identical start and ``START --resume`` find that flow, and the verdict names
the tree clean. Real processes race (``racer.py``), on the file store and on PostgreSQL.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.contract.driver import ROOT, SCRIPT
from tests.reproduce import tinyproject
from tests.reproduce.test_identical_starts import start_all

CALLERS = 5
TEST = '''def test_total():
    with open({runs!r}, "a") as fh:
        fh.write("ran\\n")
    assert sum([1, 1]) == 3
'''
ARGV = ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir", ".",
        "--command", "pytest tests/test_total.py"]


def _tree(where: Path) -> tuple[Path, Path]:
    """A git project with one failing test that notes each run; (the tree, runs file)."""
    project = where / "proj"
    (project / "tests").mkdir(parents=True)
    runs = where / "runs"
    (project / "tests" / "test_total.py").write_text(TEST.format(runs=str(runs)))
    env = tinyproject.git_env(where)
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a failing test"]):
        subprocess.run(["git", *argv], cwd=project, env=env, check=True)
    return project, runs


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ORCHESTRATOR_WORKSPACE"}
    return {**env, **extra, "ORCHESTRATOR_LOCK_TIMEOUT": "600",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), extra.get("PYTHONPATH")]))}


def _race(project: Path, where: Path, env: dict[str, str]) -> list[tuple[int, dict, str]]:
    """``CALLERS`` identical starts from the tree, no --workspace, let go together."""
    return start_all(None, ARGV, env, where, CALLERS, cwd=project)


def _call(project: Path, argv: list[str], env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, str(SCRIPT), *argv], cwd=project, env=env,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, (json.loads(proc.stdout) if proc.stdout.strip().startswith("{")
                             else {"stderr": proc.stderr[-2000:]})


def _check(project: Path, runs: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    """Race, then start again, then ``--resume``: every answer is the one flow."""
    raced = _race(project, project.parent, env)
    again = _call(project, ARGV, env)
    resumed = _call(project, [*ARGV, "--resume"], env)
    answers = [spec for _, spec, _ in raced] + [again[1], resumed[1]]
    codes = [code for code, _, _ in raced] + [again[0], resumed[0]]
    flows = {spec.get("flow_id") for spec in answers}
    tree = answers[0].get("verdict", {}).get("environment", {}).get("tree", {})
    assert ([0] * (CALLERS + 2), 1, {"done"}, ["ran"], True, False) == (
        codes, len(flows - {None}) if None not in flows else 0,
        {spec.get("status") for spec in answers}, runs.read_text().split(),
        (project / "agent_space").is_dir(), tree.get("dirty")), (
        [(c, s.get("flow_id"), s.get("status"), s.get("error")) for c, s in zip(codes, answers)],
        [err[-1500:] for _, _, err in raced])
    return answers


def test_identical_starts_from_the_tree_make_one_flow_on_the_file_store(tmp_path: Path) -> None:
    project, runs = _tree(tmp_path)
    answers = _check(project, runs, _env({}))
    [audit] = list((project / "agent_space").rglob("audit.jsonl"))
    created = [r for r in map(json.loads, audit.read_text().splitlines())
               if r.get("event") == "created"]
    # one created it; every other racer and the later start joined it and say so
    assert (1, CALLERS) == (len(created),
                            sum(1 for a in answers[:CALLERS + 1] if a.get("reused_from")))


def test_identical_starts_from_the_tree_make_one_flow_on_postgresql(tmp_path: Path,
                                                                    pg_url: str) -> None:
    project, runs = _tree(tmp_path)
    answers = _check(project, runs, _env({"ORCHESTRATOR_STORE": pg_url}))
    from workspace.pgconn import close_all
    from workspace.pgstore import PgFlowStore

    audit = PgFlowStore(project / "agent_space", answers[0]["flow_id"], pg_url).audit_lines()
    close_all()
    assert 1 == sum(1 for r in audit if r.get("event") == "created")


def test_a_tree_outside_git_keeps_its_flow_with_the_workspace_inside(tmp_path: Path) -> None:
    """No git: the tree's key is its source files' names, sizes and mtimes, and the
    workspace's JSON files are not among them: the same start twice, then ``--resume``,
    answer one flow, and the test ran once."""
    project = tmp_path / "proj"
    (project / "tests").mkdir(parents=True)
    runs = tmp_path / "runs"
    (project / "tests" / "test_total.py").write_text(TEST.format(runs=str(runs)))
    env = _env({})
    answers = [_call(project, ARGV, env), _call(project, ARGV, env),
               _call(project, [*ARGV, "--resume"], env)]
    assert ([0, 0, 0], 1, ["ran"]) == (
        [code for code, _ in answers], len({spec.get("flow_id") for _, spec in answers}),
        runs.read_text().split()), answers
