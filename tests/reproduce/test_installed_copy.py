"""A copy of the project installed non-editable in the project interpreter does not move
the local profile's run out of the tree (seed: Stage 1 "Working directory", whose rule is
about a nightly wheel under test; here the tree is what the user asks about): a copy
from the package index (as a test tool's dependency pulls one in) or one installed from
the tree before its fix, and the verdict equals bash typed in the tree at both commits.
Only a compiled copy whose tree is not built in place takes the run out of the tree.

Real git trees (``tinyproject``), real venvs, real pip installs; bash is the truth."""
from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

from flow.workflows.reproduce.prepare.rules import RULE_IN_TREE, RULE_PREFIX_IN_TREE
from tests.contract.driver import Driver
from tests.reproduce import tinyproject
from tests.reproduce.intree import bash_exit, verdict_spec
from tests.reproduce.conftest import PYTHON

ASSERT = "from tinycalc import add; assert add(1, 2) == 3"
PIP = [PYTHON, "-m", "pip"]
QUIET = ["-q", "--no-index", "--no-build-isolation", "--no-deps"]


def _venv(where: Path) -> Path:
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def _index_install(python: Path, project: Path, wheels: Path) -> None:
    """``project`` installed as pip installs a requirement found on an index: a wheel
    built from it, installed by name from a folder of wheels (no ``direct_url.json``)."""
    subprocess.run([*PIP, "wheel", *QUIET, "-w", str(wheels), str(project)], check=True,
                   capture_output=True)
    subprocess.run([*PIP, "--python", str(python), "install", *QUIET, "--find-links",
                    str(wheels), "tinycalc"], check=True, capture_output=True)


def _verdict(drv: Driver, tree: Path, command: str) -> dict:
    return verdict_spec(drv, tree, command)["verdict"]


def _fix(tree: Path) -> None:
    tinyproject.fix(tree)
    shutil.rmtree(tree / "tinycalc" / "__pycache__", ignore_errors=True)


def _expected(code: int) -> str:
    return "REPRODUCED" if code else "NOT_REPRODUCED"


@pytest.mark.parametrize("command", [f'python -c "{ASSERT}"',
                                     f'export PYTHONDONTWRITEBYTECODE=1 && python -c "{ASSERT}"'],
                         ids=["plain", "export"])
def test_a_copy_from_the_index_does_not_move_the_run_out_of_the_tree(
        tmp_path: Path, command: str) -> None:
    """The venv holds tinycalc from an "index" (another clone, already fixed, installed by
    name: no direct_url.json); the tree is buggy, then fixed. bash in the tree imports the
    tree: exit 1, then 0; the verdicts are REPRODUCED, then NOT_REPRODUCED (not the
    copy's NOT_REPRODUCED at the buggy commit), run in the tree, importing the tree only,
    with nothing to reinstall after a fix."""
    clone = tinyproject.make(tmp_path / "other-clone")
    tinyproject.fix(clone)
    tree = tinyproject.make(tmp_path / "tree")
    python = _venv(tmp_path / "venv")
    _index_install(python, clone, tmp_path / "wheels")
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    got = []
    for state in ("buggy", "fixed"):
        if state == "fixed":
            _fix(tree)
        code, verdict = bash_exit(command, tree, python), _verdict(drv, tree, command)
        env = verdict["environment"]
        got.append((code, verdict["verdict"] == _expected(code), verdict["cwd_rule"],
                    env["project_install"], env.get("other_code"),
                    all(f.startswith(f"{tree}/") for f in env.get("imported_from") or ["-"]),
                    verdict.get("rerun_after_fix") or ""))
    rule = RULE_PREFIX_IN_TREE if command.startswith("export") else RULE_IN_TREE
    assert [(1, True, rule, "installed", None, True, ""),
            (0, True, rule, "installed", None, True, "")] == got


def test_a_copy_installed_from_the_tree_before_its_fix_is_not_what_runs(tmp_path: Path) -> None:
    """``pip install .`` of the buggy tree, then the fix committed without a reinstall:
    bash typed in the tree imports the fixed tree (exit 0), and so does the run
    (NOT_REPRODUCED in the tree), never the stale copy's REPRODUCED."""
    tree = tinyproject.make(tmp_path / "tree")
    python = _venv(tmp_path / "venv")
    subprocess.run([*PIP, "--python", str(python), "install", *QUIET, str(tree)], check=True,
                   capture_output=True)
    _fix(tree)
    command = f'python -c "{ASSERT}"'
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    verdict = _verdict(drv, tree, command)
    stale = subprocess.run([str(python), "-c", ASSERT], cwd="/", capture_output=True).returncode
    assert (0, 1, "NOT_REPRODUCED", RULE_IN_TREE, "installed") == (
        bash_exit(command, tree, python), stale, verdict["verdict"], verdict["cwd_rule"],
        verdict["environment"]["project_install"]), verdict


SPEED_C = """\
#include <Python.h>

static PyObject *add(PyObject *self, PyObject *args) {
    long a, b;
    if (!PyArg_ParseTuple(args, "ll", &a, &b)) return NULL;
    return PyLong_FromLong(a - b);  /* the bug: subtracts */
}

static PyMethodDef methods[] = {{"add", add, METH_VARARGS, "add"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speed", NULL, -1, methods};
PyMODINIT_FUNC PyInit__speed(void) { return PyModule_Create(&module); }
"""


def _compiled_wheel(tree: Path, so: Path, folder: Path) -> Path:
    """A wheel of the tree's tinycalc holding the compiled ``_speed`` module ``so``."""
    files = {"tinycalc/__init__.py": (tree / "tinycalc" / "__init__.py").read_bytes(),
             f"tinycalc/{so.name}": so.read_bytes(),
             "tinycalc-1.0.dist-info/METADATA":
                 b"Metadata-Version: 2.1\nName: tinycalc\nVersion: 1.0\n",
             "tinycalc-1.0.dist-info/WHEEL":
                 b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: false\nTag: "
                 + sysconfig.get_platform().replace("-", "_").replace(".", "_").encode()
                 + b"\n"}
    record = [f"{p},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}"
              for p, d in files.items()]
    files["tinycalc-1.0.dist-info/RECORD"] = ("\n".join(
        [*record, "tinycalc-1.0.dist-info/RECORD,,"]) + "\n").encode()
    tag = f"cp{sysconfig.get_python_version().replace('.', '')}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    wheel = folder / f"tinycalc-1.0-{tag}-{tag}-{platform}.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler here")
def test_a_compiled_copy_whose_tree_is_not_built_takes_the_run_out_of_the_tree(
        tmp_path: Path) -> None:
    """The tree's tinycalc imports its compiled ``_speed`` (C source only, not built in
    place); the venv holds a built copy (buggy). bash in the tree cannot import it at all,
    so the run leaves the tree, says why, tests the installed copy (REPRODUCED) and warns
    that it ran other code than the tree. Once the extension is built in place, the run
    stays in the tree."""
    tree = tinyproject.make(tmp_path / "tree")
    (tree / "tinycalc" / "__init__.py").write_text("from tinycalc._speed import add\n")
    (tree / "tinycalc" / "_speed.c").write_text(SPEED_C)
    subprocess.run(["git", "add", "-A"], cwd=tree, check=True, env=tinyproject.git_env(tmp_path))
    subprocess.run(["git", "commit", "-qm", "compiled"], cwd=tree, check=True,
                   env=tinyproject.git_env(tmp_path))
    so = tmp_path / "build" / f"_speed{sysconfig.get_config_var('EXT_SUFFIX')}"
    so.parent.mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", f"-I{sysconfig.get_paths()['include']}",
                    "-o", str(so), str(tree / "tinycalc" / "_speed.c")], check=True)
    python = _venv(tmp_path / "venv")
    subprocess.run([*PIP, "--python", str(python), "install", *QUIET,
                    str(_compiled_wheel(tree, so, tmp_path / "wheels"))], check=True,
                   capture_output=True)
    command = f'python -c "{ASSERT}"'
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    away = _verdict(drv, tree, command)
    shutil.copy(so, tree / "tinycalc" / so.name)  # built in place: the tree can run
    built = _verdict(drv, tree, command)
    assert ("REPRODUCED", True, True, True, "REPRODUCED", RULE_IN_TREE, None) == (
        away["verdict"], "left the tree" in away["cwd_rule"],
        "compiled modules" in away["cwd_rule"], bool(away["environment"].get("other_code")),
        built["verdict"], built["cwd_rule"], built["environment"].get("other_code")), (
        away, built)
