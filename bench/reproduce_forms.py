#!/usr/bin/env python3
"""The three reproducer forms on real bugs, at the buggy and at the fixed commit, next to
what bash itself says.

Bugs come from BugsInPy (github:soarsmu/BugsInPy: ``bug.info`` names the commits and the
test file, ``run_test.sh`` the failing test); the trees are checked out as
``bench/reproduce_real.py`` does it (the buggy commit with the fix's test files on top,
then the fixed commit). Each bug is given three ways:

1. ``pytest``: its BugsInPy command, ``python -m pytest FILE::TEST`` (a bare ``pytest``
   would not put the tree on ``sys.path``: bash's own run would fail to import the
   project at both commits);
2. ``python -c``: a snippet written for this bench (``SNIPPETS``: the failing call, in our
   words) with ``--failure-pattern`` naming the error it raises at the buggy commit;
3. ``shell``: an issue-body block: ``cd TREE``, ``python -m venv --system-site-packages
   VENV && . VENV/bin/activate``, ``pip install --no-deps --no-build-isolation -e .``,
   then the snippet (offline: the venv borrows the base interpreter's setuptools; no
   dependency is fetched, the projects here have none at run time);
4. ``shell-away``: the same block with ``cd "$(mktemp -d)"`` before the snippet, as a
   block that tests the installed copy from outside the tree is written (there only the
   activated venv can import the project).

For every form and state, bash's own exit code (``bash -c COMMAND`` from the tree, the
project interpreter's bin first on PATH: a person's shell) is recorded next to the
verdict of ``orchestrator.py reproduce --profile local --stage nightly --source-dir TREE``
(``ORCHESTRATOR_REPRODUCE_PYTHON`` the project interpreter). A right pair is REPRODUCED at
the buggy commit and NOT_REPRODUCED at the fixed one, on a bug bash fails then passes;
the buggy verdict's ``refined_command`` is run once more from ``env -i
PATH=/usr/bin:/bin`` (usable: it fails there).

Prepared beforehand (nothing here reaches the network):

    git clone <BugsInPy> /tmp/bip; git clone <tqdm> /tmp/repos/tqdm
    python3.8 -m venv /tmp/py38 && /tmp/py38/bin/pip install 'pytest<8' nose

Usage: python bench/reproduce_forms.py --bugsinpy /tmp/bip --repos /tmp/repos
           --python /tmp/py38/bin/python [--json FILE] [--forms shell] tqdm:2,3,4,8,9
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reproduce_real import ROOT, bug_info, checkout, fresh_shell, timed  # noqa: E402

# (project, BugsInPy bug): (a python -c snippet that fails at the buggy commit, the
# --failure-pattern its error prints)
SNIPPETS: dict[tuple[str, int], tuple[str, str]] = {
    ("tqdm", 2): ("from tqdm import tqdm; out = tqdm.format_meter(0, 1000, 13); "
                  "assert out is not None, 'format_meter returned None without ncols'",
                  "format_meter returned None"),
    ("tqdm", 3): ("import io; from tqdm import tqdm; "
                  "assert bool(tqdm((x for x in [1, 2]), file=io.StringIO()))",
                  "cannot be interpreted as an integer"),
    ("tqdm", 4): ("import io; from tqdm import tqdm; "
                  "t = tqdm(total=None, unit_scale=10, file=io.StringIO()); t.update(); t.close()",
                  "unsupported operand"),
    ("tqdm", 8): ("from tqdm import tqdm; out = tqdm.format_meter(20, 100, 12, ncols=14, "
                  "rate=8.1, bar_format='{l_bar}{bar}|{n_fmt}/{total_fmt}'); "
                  "assert len(out) == 14, repr(out)", "AssertionError"),
    ("tqdm", 9): ("from tqdm._tqdm import format_meter; "
                  "out = format_meter(1, 9999, 1, unit_scale=True); "
                  "assert '10.0K ' in out, repr(out)", "AssertionError"),
}
FORMS = ("pytest", "python", "shell", "shell-away")


def commands(info: dict[str, str], snippet: str, tree: Path, venv: Path) -> dict[str, str]:
    """The bug's reproducer in each form (``shell-away``: the block with its snippet run
    from a fresh folder; double quotes around the snippet, as the
    refined_command contract asks; the snippets hold no ``"``, ``$`` or backtick)."""
    node = info["command"].split("pytest", 1)[1].split()[-1]
    code = f'python -c "{snippet}"'
    block = "\n".join([
        f"cd {shlex.quote(str(tree))}",
        f"python -m venv --system-site-packages {shlex.quote(str(venv))} && "
        f". {shlex.quote(str(venv))}/bin/activate",
        "pip install -q --no-deps --no-build-isolation -e .",
        code,
    ])
    away = block.rsplit("\n", 1)
    return {"pytest": f"python -m pytest {node}", "python": code, "shell": block,
            "shell-away": f'{away[0]}\ncd "$(mktemp -d)"\n{away[1]}'}


def bash_exit(command: str, tree: Path, python: str) -> int:
    """What a person's shell says: ``bash -c`` from the tree, the interpreter's bin first."""
    env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    code, _, _ = timed(["bash", "-c", command], cwd=tree, env=env)
    return code


def reproduce(tree: Path, python: str, command: str, workspace: Path,
              pattern: str | None) -> dict:
    """One reproduce call, resumed while it waits on a job; its verdict."""
    env = {**os.environ, "ORCHESTRATOR_REPRODUCE_PYTHON": python, "PYTHONPATH": str(ROOT)}
    orchestrator = [os.environ.get("BENCH_PY", sys.executable), str(ROOT / "orchestrator.py"),
                    "--workspace", str(workspace)]
    argv = [*orchestrator, "reproduce", "--profile", "local", "--stage", "nightly",
            "--source-dir", str(tree), "--command", command, "--timeout", "600",
            *(["--failure-pattern", pattern] if pattern else [])]
    for _ in range(200):
        code, _, out = timed(argv, cwd=ROOT, env=env)
        try:
            spec = json.loads(out[out.index("{"):]) if "{" in out else {}
        except ValueError:
            spec = {}
        if spec.get("status") != "waiting":
            return spec.get("verdict") or {"verdict": f"no verdict (exit {code})",
                                           "tail": out[-300:]}
        time.sleep(1)
        argv = [*orchestrator, "--resume", "--flow", spec["flow_id"]]
    return {"verdict": "still waiting"}


def one_bug(args: argparse.Namespace, project: str, bug: int, base: Path) -> dict:
    info = bug_info(Path(args.bugsinpy), project, bug)
    tree = Path(args.repos) / project
    snippet, pattern = SNIPPETS[(project, bug)]
    venv = base / "venvs" / f"{project}-{bug}"
    forms = {k: v for k, v in commands(info, snippet, tree, venv).items() if k in args.forms}
    row: dict = {"bug": f"{project}:{bug}", "forms": {}}
    for state in ("buggy", "fixed"):
        checkout(tree, info, state)
        for form, command in forms.items():
            got = row["forms"].setdefault(form, {})
            got[f"bash_{state}"] = bash_exit(command, tree, args.python)
            checkout(tree, info, state)  # drop what the bash run left (bytecode, egg-info)
            verdict = reproduce(tree, args.python, command, base / "ws" / f"{project}-{bug}",
                                pattern if form != "pytest" else None)
            got[state] = verdict.get("verdict")
            if state == "buggy":
                refined = verdict.get("refined_command")
                got["refined_fails"] = fresh_shell(refined) != 0 if refined else None
                got["refined"] = refined
                got["interpreter"] = (verdict.get("environment") or {}).get("interpreter")
            elif verdict.get("verdict") != "NOT_REPRODUCED":
                got["fixed_detail"] = verdict
    for got in row["forms"].values():
        bash_says = got["bash_buggy"] != 0 and got["bash_fixed"] == 0
        got["bash_pair"] = bash_says
        got["right_pair"] = (got["buggy"], got["fixed"]) == ("REPRODUCED", "NOT_REPRODUCED")
        got["agrees_with_bash"] = got["right_pair"] == bash_says
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bugsinpy", required=True)
    parser.add_argument("--repos", required=True)
    parser.add_argument("--python", required=True, help="the projects' interpreter")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--forms", default=",".join(FORMS),
                        help="only these forms, comma-separated (default: all three)")
    parser.add_argument("bugs", nargs="+", help="project:1,2,3")
    args = parser.parse_args()
    args.forms = [f for f in args.forms.split(",") if f in FORMS]
    base = Path(tempfile.mkdtemp(prefix="reproduce-forms-"))
    rows = []
    for spec in args.bugs:
        project, numbers = spec.split(":", 1)
        for bug in (int(n) for n in numbers.split(",")):
            row = one_bug(args, project, bug, base)
            rows.append(row)
            print(row["bug"], " ".join(
                f"{form}: bash {f['bash_buggy']}/{f['bash_fixed']} verdicts {f['buggy']}/"
                f"{f['fixed']} refined_fails {f['refined_fails']}"
                for form, f in row["forms"].items()), flush=True)
    summary = {form: {
        "bugs": len(rows),
        "bash_fails_then_passes": sum(r["forms"][form]["bash_pair"] for r in rows),
        "right_pairs": sum(r["forms"][form]["right_pair"] for r in rows),
        "agree_with_bash": sum(r["forms"][form]["agrees_with_bash"] for r in rows),
        "refined_fails_alone": sum(bool(r["forms"][form]["refined_fails"]) for r in rows),
    } for form in args.forms}
    summary["load_average"] = os.getloadavg()
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
