#!/usr/bin/env python3
"""Reproducer forms on real fix commits of projects the code never names, at the fix and
at its parent, each verdict next to what bash itself says (``bench/reproduce_forms.py``'s
sibling: that one covers tqdm, tabulate and humanize).

The case table (``CASES``) is ours: a project, a fix commit, the test file(s) the fix
touched, the node that fails before it and, for some, a ``python -c`` snippet of the
failing call written for this bench with its ``--failure-pattern``. Nothing of the
projects is kept here: each is cloned at run time from ``--repos DIR/<project>`` (a clone
or a bare mirror) into a temp folder, one clone per case, so the batch can hold every
case's tree at once. ``buggy`` is the fix's parent with the fix's test files on top,
``fixed`` the fix (``reproduce_real.checkout``).

Forms, each run through ``orchestrator.py reproduce --profile local --stage nightly
--source-dir TREE`` (``ORCHESTRATOR_REPRODUCE_PYTHON`` the project interpreter) and
through ``bash -c`` from the tree (that interpreter's bin first on PATH: a person's shell):

- ``pytest``: ``python -m pytest NODE`` (``PYTHONPATH=src`` before it for a src layout,
  as a person runs the tests of a project not installed);
- ``export``: the same with an ``export`` prefix, ``export PYTHONPATH=src && python -m
  pytest NODE`` (flat layouts export ``PYTHONDONTWRITEBYTECODE=1``);
- ``python``: ``python -c "SNIPPET"`` with ``--failure-pattern``. The project
  interpreter holds python-dateutil from the package index (freezegun depends on it), so
  dateutil's rows run with a non-editable copy of the project installed from elsewhere
  than the tree: bash in the tree imports the tree, and so must the run;
- ``export-c``: ``export PYTHONPATH=src && python -c "SNIPPET"`` (flat: as above);
- ``other-clone`` (src layouts with a snippet): ``export PYTHONPATH=src && python -c
  "SNIPPET"`` run with a second interpreter, in which another clone of the project is
  installed editable: bash imports the tree through ``PYTHONPATH``, a run anywhere else
  imports that clone;
- ``egg-link`` (flat layouts): ``python -c "SNIPPET"`` (and ``egg-link-pytest``:
  ``python -m pytest NODE``) with the second interpreter: bash in the tree imports the
  tree (``sys.path[0]`` is the folder), a run anywhere else imports the other clone.

  The second interpreter is a venv lending the first one's packages, with one other clone
  of each project installed: for a project whose trees have a src layout, at the oldest
  parent of the table (none of its fixes in), else at the clone's newest commit (every
  fix in); installed by ``pip install -e`` when that clone has a src layout, else by
  ``setup.py develop`` (an ``.egg-link`` and ``easy-install.pth``). cachetools' oldest
  parent (3.1.0) has a flat layout, so its other clone is an egg-link too;
- ``batch``: one ``--batch`` of every case as ``cd TREE && <pytest form>`` (ids the
  cases), ``--stage nightly``, ``--source-dir`` the first case's tree, at all parents and
  then all fixes: each row's verdict against bash's exit of the same entry, its
  ``environment.project`` against the case's project and its ``rerun_after_fix`` against
  naming another case's tree.

A verdict agrees with bash when it is REPRODUCED where bash exits non-zero and
NOT_REPRODUCED where bash exits 0. Prepared beforehand: the clones (``fetch`` mirrors
will do) and one project interpreter holding pytest and the projects' dependencies:

    python3.11 -m venv /tmp/bf/venv && /tmp/bf/venv/bin/pip install pytest attrs boltons \\
        face six pytest-cov hypothesis freezegun

Usage: python bench/reproduce_fixes.py --repos /work/.mirror-clones --python
           /tmp/bf/venv/bin/python [--json FILE] [--only FORM,FORM]
(``--repos DIR`` holds ``cachetools``, ``glom``, ``parso``, ``dateutil``: clones, or
bare git dirs.)
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reproduce_forms import bash_exit, orchestrate  # noqa: E402
from reproduce_real import checkout  # noqa: E402


@dataclass(frozen=True)
class Case:
    """A fix commit: the test file(s) it changed, the node that fails at its parent, and
    optionally a snippet of the failing call (ours) with the pattern its error prints."""

    project: str
    commit: str
    tests: tuple[str, ...]
    node: str
    snippet: str = ""
    pattern: str = ""

    @property
    def id(self) -> str:
        return f"{self.project}-{self.commit}"


CASES: tuple[Case, ...] = (
    # a mock autospec of a class with a cached method warned (the descriptor inspected None)
    Case("cachetools", "57d2e48", ("tests/test_cachedmethod.py",),
         "tests/test_cachedmethod.py::AutospecTest::test_autospec_no_warnings"),
    # a pickled hash key carried its cached hash value along
    Case("cachetools", "462e867", ("tests/test_keys.py",),
         "tests/test_keys.py::CacheKeysTest::test_pickle",
         "import pickle; from cachetools.keys import hashkey; k = hashkey('abc', 1); hash(k); "
         "p = pickle.loads(pickle.dumps(k)); assert not p.__dict__, p.__dict__",
         "AssertionError"),
    # TTLCache.expire() returned nothing instead of the expired pairs
    Case("cachetools", "bb4b37c", ("tests/test_ttl.py",),
         "tests/test_ttl.py::TTLCacheTest::test_ttl_expire",
         "from cachetools import TTLCache; c = TTLCache(maxsize=4, ttl=1, timer=lambda: 10); "
         "c[1] = 1; got = c.expire(20); assert list(got) == [(1, 1)], got",
         "NoneType"),
    # a PathAccessError's path was a plain tuple, not a Path
    Case("glom", "0d6a45b", ("glom/test/test_error.py",), "glom/test/test_error.py::test_pae_api"),
    # A.a (assign to the scope) changed the target
    Case("glom", "25e4e6a", ("glom/test/test_let_vars.py",),
         "glom/test/test_let_vars.py::test_vars",
         "from glom import glom, A, S; got = glom(1, A.a); assert got == 1, got",
         "AssertionError"),
    # '**' left the root value out of what it iterates
    Case("glom", "85a7a3a", ("glom/test/test_path_and_t.py",),
         "glom/test/test_path_and_t.py::test_path_star",
         "import glom.core; glom.core.PATH_STAR = True; from glom import glom; "
         "val = {'a': 1}; got = glom(val, '**'); assert got == [val, 1], got",
         "AssertionError"),
    # a grammar version newer than any known one was refused instead of using the newest
    Case("parso", "baa3c90", ("test/test_load_grammar.py",),
         "test/test_load_grammar.py::test_load_grammar_uses_older_syntax"),
    # the newline at the end of a file was misjudged with other line endings
    Case("parso", "7000dd2", ("test/test_pep8.py", "test/test_prefix.py", "test/test_utils.py"),
         "test/test_pep8.py::test_eof_newline"),
    # a with-item target that is no plain name was not found in its with statement
    Case("parso", "606c528", ("test/test_parser_tree.py",),
         "test/test_parser_tree.py::test_with_stmt_get_test_node_from_name",
         "from parso import parse; w = parse('with A as X.Y, B as (Z): pass', version='3')"
         ".children[0]; got = [w.get_test_node_from_name(n).value for n in "
         "w.get_defined_names(include_setitem=True)]; assert got == ['A', 'B'], got",
         "not actually part of a with statement"),
    # gettz('') was None while gettz() gave the local zone
    Case("dateutil", "bd69e8e", ("dateutil/test/test_tz.py",),
         "dateutil/test/test_tz.py::test_gettz_same_result_for_none_and_empty_string",
         "from dateutil import tz; a, b = tz.gettz(), tz.gettz(''); "
         "assert b is not None and a == b, (a, b)",
         "AssertionError"),
)
# the distribution name a project's tree declares, where it is not the project's own
DIST = {"dateutil": "python-dateutil"}
FORMS = ("pytest", "export", "python", "export-c", "other-clone", "egg-link", "batch")


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def info(tree: Path, case: Case) -> dict[str, str]:
    """``reproduce_real.checkout``'s keys: the buggy commit is the fix's first parent."""
    return {"buggy_commit_id": git("-C", str(tree), "rev-parse", f"{case.commit}^"),
            "fixed_commit_id": git("-C", str(tree), "rev-parse", case.commit),
            "test_file": ";".join(case.tests)}


def src_layout(tree: Path) -> bool:
    return (tree / "src").is_dir()


def forms(case: Case, tree: Path) -> dict[str, tuple[str, str | None, str]]:
    """{form: (command, failure pattern, interpreter role)}; role ``main`` is the project
    interpreter, ``other`` the one with another clone installed."""
    src = src_layout(tree)
    prefix = "PYTHONPATH=src " if src else ""
    export = "export PYTHONPATH=src && " if src else "export PYTHONDONTWRITEBYTECODE=1 && "
    code = f'python -c "{case.snippet}"'
    out: dict[str, tuple[str, str | None, str]] = {
        "pytest": (f"{prefix}python -m pytest {case.node}", None, "main"),
        "export": (f"{export}python -m pytest {case.node}", None, "main"),
    }
    if case.snippet:
        out["python"] = (f"{prefix}{code}", case.pattern, "main")
        out["export-c"] = (f"{export}{code}", case.pattern, "main")
        if src:
            out["other-clone"] = (f"export PYTHONPATH=src && {code}", case.pattern, "other")
        else:
            out["egg-link"] = (code, case.pattern, "other")
    if not src:
        out["egg-link-pytest"] = (f"python -m pytest {case.node}", None, "other")
    return out


def where(verdict: dict, tree: Path) -> dict:
    """Where the run went and what it loaded: its ``cwd_rule``, the project's install kind
    and origin, and whether every file it imported the project from lies in the tree."""
    env = verdict.get("environment") or {}
    files = env.get("imported_from")
    return {"cwd_rule": verdict.get("cwd_rule"), "install": env.get("project_install"),
            "origin": env.get("project_origin"),
            "imported_tree": None if files is None else all(
                Path(f).resolve().is_relative_to(tree.resolve()) for f in files)}


def agrees(verdict: str | None, bash: int) -> bool:
    return verdict == ("REPRODUCED" if bash != 0 else "NOT_REPRODUCED")


def other_interpreter(base: Path, python: str, repos: Path, oldest: dict[str, str]) -> str:
    """A second project interpreter: a venv lending the first one's packages, with
    another clone of each src-layout project installed editable (at ``oldest``: no fix
    in) and of each flat one by ``setup.py develop`` (an egg-link; at its newest commit)."""
    venv = base / "other-venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    lent = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    own = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                         check=True, capture_output=True, text=True).stdout.strip()
    Path(own, "zz_lent.pth").write_text(lent + "\n")
    for project, commit in oldest.items():
        clone = base / "other-clones" / project
        git("clone", "-q", str(repos / project), str(clone))
        if commit:
            git("-C", str(clone), "checkout", "-q", commit)
        if src_layout(clone):
            subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "-e", str(clone)],
                           check=True, capture_output=True)
        else:
            subprocess.run([py, "setup.py", "-q", "develop", "--no-deps"], cwd=clone,
                           check=True, capture_output=True)
    return py


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", required=True, help="DIR/<project>: a clone or bare mirror")
    parser.add_argument("--python", required=True, help="the project interpreter")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--only", default=",".join(FORMS), help="these forms only")
    args = parser.parse_args()
    only = set(args.only.split(","))
    repos = Path(args.repos)
    base = Path(tempfile.mkdtemp(prefix="reproduce-fixes-"))
    trees: dict[str, Path] = {}
    infos: dict[str, dict[str, str]] = {}
    for case in CASES:
        tree = base / "trees" / case.id
        git("clone", "-q", str(repos / case.project), str(tree))
        trees[case.id], infos[case.id] = tree, info(tree, case)
    # the other clones: src layouts at the oldest parent of the table, flat ones newest
    oldest: dict[str, str] = {}
    for case in CASES:
        if case.project in oldest:
            continue
        tree = trees[case.id]
        if src_layout(tree):
            parents = [infos[c.id]["buggy_commit_id"] for c in CASES if c.project == case.project]
            oldest[case.project] = min(parents, key=lambda sha: int(git(
                "-C", str(tree), "show", "-s", "--format=%ct", sha)))
        else:
            oldest[case.project] = ""
    other = (other_interpreter(base, args.python, repos, oldest)
             if only & {"other-clone", "egg-link"} else None)
    rows: list[dict] = []
    for case in CASES:
        tree = trees[case.id]
        for state in ("buggy", "fixed"):
            checkout(tree, infos[case.id], state, ignored=True)
            for form, (command, pattern, role) in forms(case, tree).items():
                if ("egg-link" if form.startswith("egg-link") else form) not in only:
                    continue
                python = args.python if role == "main" else other
                if python is None:
                    continue
                bash = bash_exit(command, tree, python)
                checkout(tree, infos[case.id], state, ignored=True)
                spec = orchestrate(python, base / "ws" / case.id / form,
                                   ["--source-dir", str(tree), "--command", command,
                                    "--timeout", "600",
                                    *(["--failure-pattern", pattern] if pattern else [])])
                verdict = (spec.get("verdict") or {})
                row = {"case": case.id, "project": case.project, "form": form, "state": state,
                       "command": command, "bash": bash, "verdict": verdict.get("verdict"),
                       "agrees": agrees(verdict.get("verdict"), bash), **where(verdict, tree)}
                if not row["agrees"]:
                    row["detail"] = {k: verdict.get(k) for k in (
                        "blocker", "reason", "refined_command", "cwd_rule", "environment")}
                    row["notes"] = (spec.get("report") or {}).get("notes")
                rows.append(row)
                print(json.dumps({k: row[k] for k in ("case", "form", "state", "bash", "verdict",
                                                      "agrees")}), flush=True)
    if "batch" in only:
        rows += batch(base, args.python, trees, infos)
    summary = tally(rows)
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    return 0


def batch(base: Path, python: str, trees: dict[str, Path],
          infos: dict[str, dict[str, str]]) -> list[dict]:
    """Every case in one ``--batch`` (``cd TREE && <pytest form>``), at all parents, then
    at all fixes; a row per entry and state."""
    entries = []
    for case in CASES:
        tree = trees[case.id]
        command = forms(case, tree)["pytest"][0]
        entries.append({"id": case.id, "command": f"cd {shlex.quote(str(tree))} && {command}"})
    path = base / "batch.json"
    path.write_text(json.dumps(entries, indent=1))
    source = trees[next(c.id for c in CASES if c.project == "glom")]
    rows = []
    for state in ("buggy", "fixed"):
        bash = {}
        for case, entry in zip(CASES, entries):
            checkout(trees[case.id], infos[case.id], state, ignored=True)
            bash[case.id] = bash_exit(entry["command"], trees[case.id], python)
            checkout(trees[case.id], infos[case.id], state, ignored=True)
        spec = orchestrate(python, base / "ws" / f"batch-{state}",
                           ["--source-dir", str(source), "--batch", str(path), "--timeout", "600"])
        report = json.loads(Path(spec["report_json_path"]).read_text()) if spec.get(
            "report_json_path") else {"rows": []}
        got = {r["id"]: r for r in report["rows"]}
        for case in CASES:
            r = got.get(case.id) or {}
            verdict = r.get("verdict") or {}
            env = verdict.get("environment") or {}
            rerun = verdict.get("rerun_after_fix") or ""
            foreign = [str(t) for k, t in trees.items() if k != case.id and str(t) in rerun]
            row = {"case": case.id, "project": case.project, "form": "batch", "state": state,
                   "command": next(e["command"] for e in entries if e["id"] == case.id),
                   "bash": bash[case.id], "verdict": verdict.get("verdict"),
                   "stages": verdict.get("checked_stages") or verdict.get("stage"),
                   "project_said": env.get("project"), "tree_said": (env.get("tree") or {}).get("path"),
                   "rerun_after_fix": rerun, "own_tree": not foreign and (
                       env.get("tree") or {}).get("path") == str(trees[case.id]),
                   "agrees": agrees(verdict.get("verdict"), bash[case.id])}
            if not row["agrees"]:
                # no row at all: the batch did not end (a source build asked for)
                row["note"] = r.get("note") if r else (
                    f"no verdict: the batch answered {spec.get('status')} at "
                    f"{spec.get('phase')}")
            rows.append(row)
            print(json.dumps({k: row[k] for k in ("case", "form", "state", "bash", "verdict",
                                                  "project_said", "own_tree", "agrees")}),
                  flush=True)
    return rows


def tally(rows: list[dict]) -> dict:
    """Per form and project: cases, verdicts agreeing with bash at each state, both."""
    out: dict = {}
    for row in rows:
        cell = out.setdefault(row["form"], {}).setdefault(row["project"], {
            "buggy": [0, 0], "fixed": [0, 0], "bash": []})
        cell[row["state"]][0] += row["agrees"]
        cell[row["state"]][1] += 1
        cell["bash"].append(row["bash"])
    for form in out.values():
        for cell in form.values():
            cell["bash"] = " ".join(map(str, cell["bash"]))
    own = [r for r in rows if r["form"] == "batch"]
    if own:
        out["batch_own_project"] = sum(r["project_said"] == DIST.get(r["project"], r["project"])
                                       for r in own)
        out["batch_own_tree"] = sum(bool(r["own_tree"]) for r in own)
        out["batch_entries"] = len(own)
    out["load_average"] = os.getloadavg()
    return out


if __name__ == "__main__":
    raise SystemExit(main())
