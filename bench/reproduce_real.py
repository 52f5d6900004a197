#!/usr/bin/env python3
"""The reproduce workflow on real bugs of real projects, at the buggy and at the fixed commit.

Bugs come from the BugsInPy dataset (github:soarsmu/BugsInPy): each bug folder's
``bug.info`` names the buggy and the fixed commit and the test file(s), ``run_test.sh`` the
failing test command (its first line is used). The buggy tree is checked out the way
BugsInPy does it: the buggy commit with the fix commit's test file(s) on top.

Per bug, in the project's own clone (``--repos DIR/<project>``) and with the project's
environment (``--venvs DIR/bip-<project>/bin/python``, given as
``ORCHESTRATOR_REPRODUCE_PYTHON``):

1. ground truth: the command run directly in the tree (venv bin first on PATH), at the
   buggy and at the fixed commit; a bug counts when it fails at the first and passes at
   the second;
2. ``orchestrator.py reproduce --profile local --stage nightly --source-dir TREE
   --command CMD`` into a fresh workspace, at both commits: the right pair is REPRODUCED
   then NOT_REPRODUCED;
3. the buggy run's ``refined_command`` in a fresh shell (``env -i PATH=/usr/bin:/bin bash
   -c``): usable when it fails at the buggy commit and passes once the fix is checked out;
4. overhead: the reproduce call's wall time over the direct run's, per run; the median is
   printed (over every run, over the runs whose direct run took under a second, and per
   project), with the load average at the end (the machine is shared: say it with the
   figures), and how many runs were started ahead of the workflow's imports (``headstart``).

``--timeout S`` passes ``--timeout S`` to every reproduce call. The orchestrator runs as
``BENCH_PY`` (default ``python3``).

Prints one line per bug and a JSON summary; ``--json FILE`` writes every figure.
Nothing here reaches the network: clones, venvs and the dataset are prepared beforehand:

    git clone <BugsInPy> /tmp/bip; git clone <project> /tmp/bench/<project>
    python3.8 -m venv /work/venvs/bip-<project>   # ansible: python3.6
    /work/venvs/bip-<project>/bin/pip install <the bug's requirements.txt pins>
    /work/venvs/bip-<project>/bin/pip install --no-deps -e /tmp/bench/<project>  # ansible, sanic

(figures and the bugs used: the README's Performance table).

Usage: python bench/reproduce_real.py --bugsinpy /tmp/bip --repos /tmp/bench
           --venvs /work/venvs fastapi:1,2,3 scrapy:1,2 ...
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600


def bug_info(bugsinpy: Path, project: str, bug: int) -> dict[str, str]:
    """bug.info's keys, and ``command``: run_test.sh's first command (UTF-16 or UTF-8)."""
    folder = bugsinpy / "projects" / project / "bugs" / str(bug)
    info = dict(re.findall(r'(\w+)="([^"]*)"', (folder / "bug.info").read_text()))
    raw = (folder / "run_test.sh").read_bytes()
    text = raw.decode("utf-16") if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else raw.decode()
    lines = [l.strip() for l in text.replace("\r", "").splitlines() if l.strip()]
    info["command"] = lines[0]
    return info


def git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)


def checkout(tree: Path, info: dict[str, str], which: str, *, ignored: bool = False) -> None:
    """The buggy commit with the fix's test files on top (BugsInPy's checkout), or the
    fixed commit. Untracked build outputs (egg-info of an editable install, the
    ``_version.py`` a setuptools-scm or hatch-vcs install writes and the package imports)
    are kept; with ``ignored``, every other ignored file goes too (an earlier commit's
    egg-info or version file, which a later build would read its version from), only
    ``_version.py`` stays. The tree's bytecode caches are not kept: Python trusts a
    ``.pyc`` whose source has the same size and the same mtime to the second, so a fix
    that keeps a file's size, checked out within a second of the buggy run, would run the
    buggy bytecode."""
    import shutil

    git(tree, "checkout", "-qf", info["fixed_commit_id"])
    if ignored:
        git(tree, "clean", "-fdxq", "-e", "_version.py")
    else:
        git(tree, "clean", "-fdq", "-e", "*.egg-info", "-e", "*.so", "-e", "_version.py")
    if which == "buggy":
        git(tree, "checkout", "-qf", info["buggy_commit_id"])
        tests = [t for t in info.get("test_file", "").split(";") if t]
        if tests:
            git(tree, "checkout", info["fixed_commit_id"], "--", *tests)
    for cache in list(tree.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)


def timed(argv: list[str] | str, *, cwd: Path | str, env: dict[str, str],
          shell: bool = False) -> tuple[int, float, str]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(argv, cwd=cwd, env=env, shell=shell, capture_output=True,
                              text=True, timeout=TIMEOUT)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired:
        code, out = 124, "timed out"
    return code, time.perf_counter() - started, out


def direct(tree: Path, python: str, command: str) -> tuple[int, float]:
    """The bug's command as a person runs it: in the tree, the project's venv first on PATH."""
    env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    code, took, _ = timed(["bash", "-c", command], cwd=tree, env=env)
    return code, took


def reproduce(tree: Path, python: str, command: str, workspace: Path,
              extra: list[str] | None = None) -> tuple[dict, float, bool]:
    """One fresh reproduce call (``extra``: more flags, ``--timeout S``); (its verdict,
    wall seconds, whether its run was started ahead)."""
    env = {**os.environ, "ORCHESTRATOR_REPRODUCE_PYTHON": python,
           "PYTHONPATH": str(ROOT)}
    code, took, out = timed(["python3" if not os.environ.get("BENCH_PY") else os.environ["BENCH_PY"],
                             str(ROOT / "orchestrator.py"), "--workspace", str(workspace),
                             "reproduce", "--profile", "local", "--stage", "nightly",
                             "--source-dir", str(tree), "--command", command, *(extra or [])],
                            cwd=ROOT, env=env)
    try:
        spec = json.loads(out[out.index("{"):]) if "{" in out else {}
    except ValueError:
        spec = {}
    verdict = spec.get("verdict") or {"verdict": f"no verdict (exit {code})", "tail": out[-300:]}
    # whether the run was started ahead of the workflow's imports (the audit says so)
    ahead = any('"started_ahead":true' in p.read_text() for p in workspace.rglob("audit.jsonl"))
    return verdict, took, ahead


def fresh_shell(refined: str) -> int:
    code, _, _ = timed(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", refined], cwd="/",
                       env={"PATH": "/usr/bin:/bin"})
    return code


def one_bug(args: argparse.Namespace, project: str, bug: int, base: Path) -> dict:
    info = bug_info(Path(args.bugsinpy), project, bug)
    tree = Path(args.repos) / project
    python = str(Path(args.venvs) / f"bip-{project}" / "bin" / "python")
    command = info["command"]
    row: dict = {"project": project, "bug": bug, "command": command}
    checkout(tree, info, "buggy")
    direct(tree, python, command)  # untimed: writes the bytecode both timed runs then find
    row["direct_buggy"], t_buggy = direct(tree, python, command)
    extra = ["--timeout", str(args.timeout)] if args.timeout else []
    v_buggy, f_buggy, a_buggy = reproduce(tree, python, command, base / f"{project}-{bug}-buggy", extra)
    refined = v_buggy.get("refined_command")
    row["refined_buggy_exit"] = fresh_shell(refined) if refined else None
    checkout(tree, info, "fixed")
    direct(tree, python, command)
    row["direct_fixed"], t_fixed = direct(tree, python, command)
    v_fixed, f_fixed, a_fixed = reproduce(tree, python, command, base / f"{project}-{bug}-fixed", extra)
    row["refined_fixed_exit"] = fresh_shell(refined) if refined else None
    row["verdicts"] = [v_buggy.get("verdict"), v_fixed.get("verdict")]
    row["blockers"] = [v.get("blocker") for v in (v_buggy, v_fixed) if v.get("blocker")]
    row["cwd_rule"] = v_buggy.get("cwd_rule")
    env = v_buggy.get("environment") or {}
    row["project_identity"] = [env.get("project"), env.get("project_install")]
    row["refined_command"] = refined
    row["counts"] = row["direct_buggy"] != 0 and row["direct_fixed"] == 0
    row["right_pair"] = row["verdicts"] == ["REPRODUCED", "NOT_REPRODUCED"]
    row["usable_refined"] = bool(refined) and row["refined_buggy_exit"] not in (0, None) \
        and row["refined_fixed_exit"] == 0
    row["timings"] = [[t_buggy, f_buggy], [t_fixed, f_fixed]]
    row["started_ahead"] = [a_buggy, a_fixed]
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bugsinpy", required=True)
    parser.add_argument("--repos", required=True)
    parser.add_argument("--venvs", required=True)
    parser.add_argument("--json")
    parser.add_argument("--timeout", type=float,
                        help="pass --timeout S to reproduce (a run that fits the call's "
                             "foreground budget then runs in the foreground)")
    parser.add_argument("bugs", nargs="+", help="project:1,2,3")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.bugs:
            project, ids = spec.split(":")
            for bug in [int(i) for i in ids.split(",") if i]:
                row = one_bug(args, project, bug, Path(tmp))
                rows.append(row)
                print(f"{project}-{bug}: direct {row['direct_buggy']}/{row['direct_fixed']} "
                      f"verdicts {row['verdicts']} refined {row['refined_buggy_exit']}/"
                      f"{row['refined_fixed_exit']} {row['blockers'][:1]}", flush=True)
    counted = [r for r in rows if r["counts"]]
    ratios = [f / d for r in rows for d, f in r["timings"] if d > 0]
    fast = [f / d for r in rows for d, f in r["timings"] if 0 < d < 1.0]
    summary = {
        "bugs": len(rows), "projects": sorted({r["project"] for r in rows}),
        "fail_then_pass_directly": len(counted),
        "right_pairs": sum(r["right_pair"] for r in counted),
        "usable_refined_commands": sum(r["usable_refined"] for r in counted),
        "wrong": [f"{r['project']}-{r['bug']}: {r['verdicts']} {r['blockers'][:1]}"
                  for r in counted if not (r["right_pair"] and r["usable_refined"])],
        "not_counted": [f"{r['project']}-{r['bug']}: direct exits {r['direct_buggy']}/"
                        f"{r['direct_fixed']}" for r in rows if not r["counts"]],
        "median_overhead": round(statistics.median(ratios), 3) if ratios else None,
        "median_overhead_under_1s": round(statistics.median(fast), 3) if fast else None,
        "runs_under_1s": len(fast),
        "runs_started_ahead": sum(sum(r["started_ahead"]) for r in rows),
        "median_overhead_by_project": {
            p: round(statistics.median(f / d for r in rows if r["project"] == p
                                       for d, f in r["timings"] if d > 0), 3)
            for p in sorted({r["project"] for r in rows})},
        "median_direct_s": round(statistics.median(d for r in rows for d, _ in r["timings"]), 3)
        if rows else None,
        "median_added_s": round(statistics.median(f - d for r in rows for d, f in r["timings"]), 3)
        if rows else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
