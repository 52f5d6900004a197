#!/usr/bin/env python3
"""The three reproducer forms on real bugs, at the buggy and at the fixed commit, next to
what bash itself says.

Bugs come from two places:

- BugsInPy (github:soarsmu/BugsInPy: ``bug.info`` names the commits and the test file,
  ``run_test.sh`` the failing test), for tqdm (``tqdm:2,3,4,8,9``);
- fix commits of other projects, chosen for this bench and described in ``FIXES`` in our
  own words (``tabulate:38d345b,...``: the project and the fix commit; the buggy commit is
  the fix's first parent; the test file(s) the fix touched, the node that fails, a
  snippet and its failure pattern).

The trees are checked out as ``bench/reproduce_real.py`` does it (the buggy commit with the
fix's test files on top, then the fixed commit; for ``FIXES`` with every ignored file but
``_version.py`` removed, so no build output of another commit is read). Each bug is given
in these forms:

1. ``pytest``: ``python -m pytest NODE`` (a bare ``pytest`` would not put the tree on
   ``sys.path``: bash's own run would fail to import a flat-layout project at both
   commits); a parametrized node whose id holds a space is double-quoted, as an issue
   writes it, one with only brackets is left bare (bash leaves a glob that matches no
   file as written);
2. ``python -c``: a snippet written for this bench (the failing call, in our words) with
   ``--failure-pattern`` naming the error it raises at the buggy commit;
3. ``shell``: an issue-body block: ``cd TREE``, make a venv and activate it, install the
   tree editable, then the snippet. Per project (``BLOCK_SETUP``): for tqdm offline,
   ``python -m venv --system-site-packages VENV`` and ``pip install --no-deps
   --no-build-isolation -e .`` (the venv borrows the base interpreter's setuptools; tqdm
   has no run-time dependency); for the others the block most issues show, ``python -m
   venv VENV`` and ``pip install -q -e .``, whose isolated build fetches the project's
   build backend (setuptools-scm, flit-scm, hatch-vcs) from the package index (they have
   no run-time dependency either);
4. ``shell-away``: the same block with ``cd "$(mktemp -d)"`` before the snippet, as a
   block that tests the installed copy from outside the tree is written (there only the
   activated venv can import the project);
5. ``shell-pytest`` (projects with ``TEST_TOOLS``): a block that installs the tree and the
   project's test tools into its own venv and ends with the venv's bare ``pytest NODE``
   (the failing test, as an issue asks to run it after an editable install).

For every form and state, bash's own exit code (``bash -c COMMAND`` from the tree, the
project interpreter's bin first on PATH: a person's shell) is recorded next to the
verdict of ``orchestrator.py reproduce --profile local --stage nightly --source-dir TREE``
(``ORCHESTRATOR_REPRODUCE_PYTHON`` the project interpreter). A right pair is REPRODUCED at
the buggy commit and NOT_REPRODUCED at the fixed one, on a bug bash fails then passes;
the buggy verdict's ``refined_command`` is run once more from ``env -i
PATH=/usr/bin:/bin`` (usable: it fails there).

Prepared beforehand (clones, the projects' interpreters):

    git clone <BugsInPy> /tmp/bip; git clone <tqdm> /tmp/repos/tqdm
    python3.8 -m venv /tmp/py38 && /tmp/py38/bin/pip install 'pytest<8' nose
    git clone <python-tabulate> /tmp/repos/tabulate; git clone <humanize> /tmp/repos/humanize
    python3.11 -m venv /tmp/py-tabulate && /tmp/py-tabulate/bin/pip install pytest
    python3.11 -m venv /tmp/py-humanize && /tmp/py-humanize/bin/pip install pytest \
        pytest-cov freezegun hatchling hatch-vcs editables setuptools-scm
    /tmp/py-humanize/bin/pip install --no-deps --no-build-isolation -e /tmp/repos/humanize

(humanize has a ``src`` layout: its tests import the installed copy, an editable one,
as its developers work; tabulate's import the tree itself.)

Usage: python bench/reproduce_forms.py --bugsinpy /tmp/bip --repos /tmp/repos
           --python /tmp/py38/bin/python --python tabulate=/tmp/py-tabulate/bin/python
           --python humanize=/tmp/py-humanize/bin/python [--json FILE] [--forms shell]
           tqdm:2,3,4,8,9 tabulate:38d345b,6c48142 humanize:b1ee687
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Fix:
    """A fix commit of a project outside BugsInPy: the commit, the test file(s) it added
    or changed, the node that fails before it (as an issue would write it), a snippet of
    the failing call written for this bench, and the --failure-pattern of its error."""

    commit: str
    tests: tuple[str, ...]
    node: str
    snippet: str
    pattern: str


# (project, the fix commit as given on the command line): the bug it fixes
FIXES: dict[tuple[str, str], Fix] = {
    # an infinite iterator as showindex: the buggy code takes its length
    ("tabulate", "38d345b"): Fix(
        "38d345b", ("test/test_regression.py",), "test/test_regression.py::test_iterable_row_index",
        "import itertools; from tabulate import tabulate; out = tabulate([['a'], ['b']], "
        "showindex=itertools.islice(itertools.count(1), 5), tablefmt='plain'); "
        "assert out == '1  a\\n2  b', repr(out)",
        "index must be as long as"),
    # maxcolwidths wraps a cell and drops the line breaks it held
    ("tabulate", "6c48142"): Fix(
        "6c48142", ("test/test_regression.py",),
        "test/test_regression.py::test_preserve_line_breaks_with_maxcolwidths",
        "from tabulate import tabulate; out = tabulate([['ab cd\\nef']], tablefmt='plain', "
        "maxcolwidths=10); assert len(out.splitlines()) == 2, repr(out)",
        "AssertionError"),
    # no rows at all with maxcolwidths: an index error
    ("tabulate", "20c6370"): Fix(
        "20c6370", ("test/test_regression.py",),
        "test/test_regression.py::test_exception_on_empty_data_with_maxcolwidths",
        "from tabulate import tabulate; out = tabulate([], maxcolwidths=5); "
        "assert out == '', repr(out)",
        "list index out of range"),
    # a cell reading 'True' is parsed to a bool before it is wrapped
    ("tabulate", "d29909b"): Fix(
        "d29909b", ("test/test_textwrapper.py",),
        "test/test_textwrapper.py::test_wrap_optional_bool_strs",
        "from tabulate import tabulate; print(tabulate([['x', 'True']], maxcolwidths=[3, 3]))",
        "no attribute"),
    # headers only, with maxheadercolwidths: the column count read from the first row
    ("tabulate", "87a9a4e"): Fix(
        "87a9a4e", ("test/test_regression.py",),
        "test/test_regression.py::test_empty_table_with_maxheadercolwidths",
        "from tabulate import tabulate; print(tabulate([], headers=['a', 'b'], "
        "maxheadercolwidths=3))",
        "list index out of range"),
    # asciidoc rows padded with trailing blanks
    ("tabulate", "3aa568c"): Fix(
        "3aa568c", ("test/test_output.py", "test/test_regression.py"),
        "test/test_regression.py::test_asciidoc_without_trailing_whitespace",
        "from tabulate import tabulate; out = tabulate([['x']], headers=['wide header'], "
        "tablefmt='asciidoc'); bad = [l for l in out.splitlines() if l != l.rstrip()]; "
        "assert not bad, bad",
        "AssertionError"),
    # metric(0): log10 of zero
    ("humanize", "b1ee687"): Fix(
        "b1ee687", ("tests/test_number.py",), "tests/test_number.py::test_metric[[0]-0.00]",
        "import humanize; print(humanize.metric(0, 'V'))", "math domain error"),
    # intcomma of a decimal string with ndigits formats the string with 'f'
    ("humanize", "33005e5"): Fix(
        "33005e5", ("tests/test_number.py",),
        "tests/test_number.py::test_intcomma[test_args13-1,234,567.1]",
        "import humanize; print(humanize.intcomma('9876543.21', 1))", "Unknown format code"),
    # intword past the last name steps to googol at 10**36
    ("humanize", "8705e29"): Fix(
        "8705e29", ("tests/test_number.py",),
        '"tests/test_number.py::test_intword[test_args25-1000.0 decillion]"',
        "import humanize; out = humanize.intword(10 ** 36); "
        "assert out == '1000.0 decillion', out",
        "AssertionError"),
    # naturalsize of a float below one kB keeps its fraction
    ("humanize", "11e62ee"): Fix(
        "11e62ee", ("tests/test_filesize.py",),
        '"tests/test_filesize.py::test_naturalsize[test_args62-1 Bytes]"',
        "import humanize; out = humanize.naturalsize(2.75); assert out == '2 Bytes', out",
        "AssertionError"),
    # naturalday of an aware datetime compares its date with the local today
    ("humanize", "a47a89e"): Fix(
        "a47a89e", ("tests/test_time.py",), "tests/test_time.py::test_naturaldate_tz_aware",
        "import datetime as dt, humanize; got = [humanize.naturalday(dt.datetime.now("
        "dt.timezone(dt.timedelta(hours=h)))) for h in (14, -12)]; "
        "assert got == ['today', 'today'], got",
        "AssertionError"),
    # naturalsize rounds 999999 B to '1000.0 kB' instead of carrying to MB
    ("humanize", "823ad60"): Fix(
        "823ad60", ("tests/test_filesize.py",),
        '"tests/test_filesize.py::test_naturalsize[test_args70-1.0 MB]"',
        "import humanize; out = humanize.naturalsize(999999); assert out == '1.0 MB', out",
        "AssertionError"),
}
# The block's venv and install lines per project (VENV: the venv's folder, quoted).
OFFLINE_SETUP = ("python -m venv --system-site-packages {venv} && . {venv}/bin/activate",
                 "pip install -q --no-deps --no-build-isolation -e .")
BLOCK_SETUP: dict[str, tuple[str, str]] = {
    "tqdm": OFFLINE_SETUP,
    "*": ("python -m venv {venv} && . {venv}/bin/activate", "pip install -q -e ."),
}
# What the ``shell-pytest`` block installs beside the tree to run the test (the test tools
# the project's own test setup names); a project not listed has no such block (tqdm's
# offline venv could not fetch them).
TEST_TOOLS: dict[str, str] = {"tabulate": "pytest", "humanize": "pytest pytest-cov freezegun"}
FORMS = ("pytest", "python", "shell", "shell-away", "shell-pytest")


def fix_info(tree: Path, fix: Fix) -> dict[str, str]:
    """``bug_info``'s keys for a ``Fix``: the buggy commit is the fix's first parent."""
    def rev(name: str) -> str:
        return subprocess.run(["git", "-C", str(tree), "rev-parse", name], check=True,
                              capture_output=True, text=True).stdout.strip()

    return {"buggy_commit_id": rev(f"{fix.commit}^"), "fixed_commit_id": rev(fix.commit),
            "test_file": ";".join(fix.tests), "command": f"python -m pytest {fix.node}"}


def commands(node: str, snippet: str, tree: Path, venv: Path, setup: tuple[str, str],
             tools: str | None = None) -> dict[str, str]:
    """The bug's reproducer in each form (``node`` as the issue writes it, quotes
    included; ``setup``: the block's venv and install lines; ``shell-away``: the block
    with its snippet run from a fresh folder; double quotes around the snippet, as the
    refined_command contract asks; the snippets hold no ``"``, ``$`` or backtick). With
    ``tools``, ``shell-pytest`` too: a block whose own venv installs the tree and those
    test tools, then runs the failing test with the venv's bare ``pytest NODE``."""
    code = f'python -c "{snippet}"'
    block = "\n".join([
        f"cd {shlex.quote(str(tree))}",
        setup[0].format(venv=shlex.quote(str(venv))),
        setup[1],
        code,
    ])
    away = block.rsplit("\n", 1)
    forms = {"pytest": f"python -m pytest {node}", "python": code, "shell": block,
             "shell-away": f'{away[0]}\ncd "$(mktemp -d)"\n{away[1]}'}
    if tools:
        forms["shell-pytest"] = "\n".join([
            f"cd {shlex.quote(str(tree))}",
            setup[0].format(venv=shlex.quote(f"{venv}-pytest")),
            f"{setup[1]} {tools}",
            f"pytest {node}",
        ])
    return forms


def bash_exit(command: str, cwd: Path, python: str) -> int:
    """What a person's shell says: ``bash -c`` from the tree, the interpreter's bin first."""
    env = {"PATH": f"{Path(python).parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    code, _, _ = timed(["bash", "-c", command], cwd=cwd, env=env)
    return code


def orchestrate(python: str, workspace: Path, args: list[str]) -> dict:
    """One ``reproduce --profile local --stage nightly ARGS`` call, resumed while it waits on
    a job; its final spec (``error`` when there was none)."""
    env = {**os.environ, "ORCHESTRATOR_REPRODUCE_PYTHON": python, "PYTHONPATH": str(ROOT)}
    orchestrator = [os.environ.get("BENCH_PY", sys.executable), str(ROOT / "orchestrator.py"),
                    "--workspace", str(workspace)]
    argv = [*orchestrator, "reproduce", "--profile", "local", "--stage", "nightly", *args]
    for _ in range(300):
        code, _, out = timed(argv, cwd=ROOT, env=env)
        try:
            spec = json.loads(out[out.index("{"):]) if "{" in out else {}
        except ValueError:
            spec = {}
        if spec.get("status") != "waiting":
            return spec or {"error": f"no spec (exit {code}): {out[-300:]}"}
        time.sleep(1)
        argv = [*orchestrator, "--resume", "--flow", spec["flow_id"]]
    return {"error": "still waiting"}


def reproduce(tree: Path, python: str, command: str, workspace: Path,
              pattern: str | None) -> dict:
    """One reproduce call of ``command`` in ``tree``, to its end; its verdict."""
    spec = orchestrate(python, workspace, [
        "--source-dir", str(tree), "--command", command, "--timeout", "600",
        *(["--failure-pattern", pattern] if pattern else [])])
    return spec.get("verdict") or {"verdict": spec.get("error") or "no verdict",
                                   "tail": json.dumps(spec)[-300:]}


def one_bug(args: argparse.Namespace, project: str, bug: str, base: Path) -> dict:
    tree = Path(args.repos) / project
    fix = FIXES.get((project, bug))
    if fix:
        info, node, snippet, pattern = fix_info(tree, fix), fix.node, fix.snippet, fix.pattern
    else:
        if not args.bugsinpy:
            raise SystemExit(f"{project}:{bug} is a BugsInPy bug: give --bugsinpy")
        info = bug_info(Path(args.bugsinpy), project, int(bug))
        node = info["command"].split("pytest", 1)[1].split()[-1]
        snippet, pattern = SNIPPETS[(project, int(bug))]
    python = args.python.get(project) or args.python.get("*")
    if not python:
        raise SystemExit(f"no --python for {project}")
    venv = base / "venvs" / f"{project}-{bug}"
    setup = BLOCK_SETUP.get(project, BLOCK_SETUP["*"])
    forms = {k: v for k, v in commands(node, snippet, tree, venv, setup,
                                       TEST_TOOLS.get(project)).items() if k in args.forms}
    row: dict = {"bug": f"{project}:{bug}", "python": python, "forms": {}}
    for state in ("buggy", "fixed"):
        checkout(tree, info, state, ignored=bool(fix))
        for form, command in forms.items():
            got = row["forms"].setdefault(form, {})
            got["command"] = command
            got[f"bash_{state}"] = bash_exit(command, tree, python)
            # drop what the bash run left (bytecode, egg-info)
            checkout(tree, info, state, ignored=bool(fix))
            verdict = reproduce(tree, python, command, base / "ws" / f"{project}-{bug}",
                                None if "pytest" in form else pattern)
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
    parser.add_argument("--bugsinpy", help="a BugsInPy clone (for its projects' bugs)")
    parser.add_argument("--repos", required=True)
    parser.add_argument("--python", required=True, action="append",
                        help="the projects' interpreter, or PROJECT=PATH for one project "
                             "(repeatable)")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--forms", default=",".join(FORMS),
                        help="only these forms, comma-separated (default: all of them)")
    parser.add_argument("bugs", nargs="+", help="project:1,2,3")
    args = parser.parse_args()
    args.forms = [f for f in args.forms.split(",") if f in FORMS]
    args.python = dict(p.split("=", 1) if "=" in p else ("*", p) for p in args.python)
    base = Path(tempfile.mkdtemp(prefix="reproduce-forms-"))
    rows = []
    for spec in args.bugs:
        project, numbers = spec.split(":", 1)
        for bug in numbers.split(","):
            row = one_bug(args, project, bug, base)
            rows.append(row)
            print(row["bug"], " ".join(
                f"{form}: bash {f['bash_buggy']}/{f['bash_fixed']} verdicts {f['buggy']}/"
                f"{f['fixed']} refined_fails {f['refined_fails']}"
                for form, f in row["forms"].items()), flush=True)

    def tally(some: list[dict]) -> dict:
        out = {}
        for form in args.forms:
            got = [r["forms"][form] for r in some if form in r["forms"]]
            if got:
                out[form] = {
                    "bugs": len(got),
                    "bash_fails_then_passes": sum(g["bash_pair"] for g in got),
                    "right_pairs": sum(g["right_pair"] for g in got),
                    "agree_with_bash": sum(g["agrees_with_bash"] for g in got),
                    "refined_fails_alone": sum(bool(g["refined_fails"]) for g in got),
                    "bash_exits": " ".join(f'{g["bash_buggy"]}/{g["bash_fixed"]}' for g in got),
                }
        return out

    projects = sorted({r["bug"].split(":")[0] for r in rows})
    summary: dict = tally(rows)
    if len(projects) > 1:
        summary["per_project"] = {
            p: tally([r for r in rows if r["bug"].split(":")[0] == p]) for p in projects}
    summary["load_average"] = os.getloadavg()
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
