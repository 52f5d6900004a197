"""A verdict agrees with bash run in the tree (seed: Stage 1 "Working directory", "Run
test"): a ``cd``/``export``/``source`` prefix runs in the project tree as bash runs it
typed there; a legacy ``setup.py develop`` install (an ``.egg-link``) of another clone is
known for the editable install it is; and "this verdict ran other code than the tree" is
said from what the run imported, never from the install record alone.

Every case is a real git tree (``tinyproject``, buggy then fixed), a real venv holding
another clone of the project, and ``bash -c`` of the same command in the tree with that
venv first on PATH as the truth, at both commits."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce import tinyproject
from tests.reproduce.intree import bash_exit, verdict_spec
from tests.reproduce.conftest import PYTHON

ASSERT = 'from tinycalc import add; assert add(1, 2) == 3'
FRESH = {"PATH": "/usr/bin:/bin"}


def _venv(where: Path, with_pytest: bool = False) -> Path:
    """A venv without pip (fast); ``with_pytest``: the test tools lent by this
    interpreter's site-packages (a ``.pth`` after the venv's own)."""
    if with_pytest:
        return projectenv.lending(where)
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(where)], check=True)
    return where / "bin" / "python"


def _pip_editable(python: Path, project: Path) -> None:
    """``pip install -e`` of ``project`` into ``python``'s venv (this interpreter's pip,
    ``--python``; the in-tree backend, so no index and no isolation)."""
    subprocess.run([PYTHON, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-index", "--no-build-isolation", "--no-deps", "-e", str(project)],
                   check=True, capture_output=True)


def _develop(python: Path, project: Path) -> None:
    """What a legacy ``setup.py develop`` leaves, written by hand: the project's
    ``tinycalc.egg-info`` beside its package, ``tinycalc.egg-link`` naming the folder and
    ``easy-install.pth`` putting it on sys.path (no ``direct_url.json`` anywhere)."""
    site = next(python.parent.parent.glob("lib/python*/site-packages"))
    egg = project / "tinycalc.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: tinycalc\nVersion: 1.0\n")
    (egg / "top_level.txt").write_text("tinycalc\n")
    (site / "tinycalc.egg-link").write_text(f"{project}\n.\n")
    (site / "easy-install.pth").write_text(f"{project}\n")


def _both_commits(tmp_path: Path, command: str, *, src_layout: bool, other: str,
                  other_fixed: bool, with_pytest: bool = False,
                  extra: dict[str, str] | None = None) -> list[tuple[int, dict]]:
    """(bash's exit code, the spec) at the buggy and at the fixed commit of the tree; the
    venv holds another clone (``other``: "editable" by pip, "develop" by egg-link),
    buggy or fixed as ``other_fixed`` says."""
    clone = tinyproject.make(tmp_path / "other-clone", src_layout=src_layout)
    if other_fixed:
        tinyproject.fix(clone)
    tree = tinyproject.make(tmp_path / "tree", src_layout=src_layout)
    for name, text in (extra or {}).items():
        (tree / name).write_text(text)
    if extra:
        subprocess.run(["git", "add", "-A"], cwd=tree, check=True,
                       env=tinyproject.git_env(tmp_path))
        subprocess.run(["git", "commit", "-qm", "env"], cwd=tree, check=True,
                       env=tinyproject.git_env(tmp_path))
    python = _venv(tmp_path / "venv", with_pytest)
    (_pip_editable if other == "editable" else _develop)(python, clone)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    out = [(bash_exit(command, tree, python), verdict_spec(drv, tree, command))]
    _ALONE[id(out[0][1])] = _alone(out[0][1])
    tinyproject.fix(tree)
    shutil.rmtree(tree / ("src" if src_layout else ".") / "tinycalc" / "__pycache__",
                  ignore_errors=True)
    out.append((bash_exit(command, tree, python), verdict_spec(drv, tree, command)))
    return out


_ALONE: dict[int, int] = {}


def _alone(spec: dict) -> int:
    """refined_command's exit code by itself from a fresh shell (``env -i``), now."""
    refined = spec["verdict"].get("refined_command") or "true"
    return subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", refined],
                          capture_output=True).returncode


def _agrees(code: int, spec: dict) -> bool:
    return spec["verdict"]["verdict"] == ("REPRODUCED" if code else "NOT_REPRODUCED")


def _warned(spec: dict) -> list[str]:
    return [n for n in spec["report"]["notes"] if n.startswith("WARNING")]


PREFIXED = [
    f'export PYTHONPATH=src && python -c "{ASSERT}"',
    f'export PYTHONPATH=src; python -c "{ASSERT}"',
    f'cd src && python -c "{ASSERT}"',
    f'. ./dev.env && python -c "{ASSERT}"',
]


@pytest.mark.parametrize("command", PREFIXED, ids=["export&&", "export;", "cd", "source"])
def test_a_prefixed_one_liner_runs_in_the_tree_as_bash_runs_it(tmp_path: Path,
                                                               command: str) -> None:
    """The venv holds an editable install of another clone, still buggy; the tree (src
    layout) is buggy, then fixed. bash in the tree imports the tree's ``src`` (the prefix
    says so): exit 1, then 0. The verdicts are REPRODUCED, then NOT_REPRODUCED (never the
    other clone's REPRODUCED at the fix); they say no other code ran, and the buggy
    refined_command fails by itself from a fresh shell."""
    runs = _both_commits(tmp_path, command, src_layout=True, other="editable",
                         other_fixed=False, extra={"dev.env": "export PYTHONPATH=src\n"})
    codes = [code for code, _ in runs]
    verdicts = [spec["verdict"] for _, spec in runs]
    alone = _ALONE[id(runs[0][1])]
    tree = str(tmp_path / "tree")
    imported = [v["environment"].get("imported_from") or [] for v in verdicts]
    assert ([1, 0], True, True, 1, [[], []], [None, None], True) == (
        codes, all(_agrees(c, s) for c, s in runs), verdicts[0]["cwd_rule"].startswith(
            "the project tree, as bash runs the command typed there"), alone,
        [_warned(s) for _, s in runs], [v["environment"].get("other_code") for v in verdicts],
        all(f and all(p.startswith(tree + "/") for p in f) for f in imported)), verdicts


def test_a_prefixed_batch_entry_runs_in_the_tree_as_bash_runs_it(tmp_path: Path) -> None:
    """The same prefix as a ``--batch`` entry: the venv holds an editable install of another
    clone, already fixed; the tree is buggy. bash in the tree imports the tree's ``src``
    (exit 1), so the entry is REPRODUCED, never the clone's NOT_REPRODUCED that a run from
    the scratch folder would give."""
    import json

    clone = tinyproject.make(tmp_path / "other-clone", src_layout=True)
    tinyproject.fix(clone)
    tree = tinyproject.make(tmp_path / "tree", src_layout=True)
    python = _venv(tmp_path / "venv")
    _pip_editable(python, clone)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([{"id": "export", "command": PREFIXED[0]},
                                 {"id": "cd", "command": PREFIXED[2]}]))
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    call = drv.call(["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir",
                     str(tree), "--batch", str(batch)])
    assert call.spec is not None and call.spec["status"] == "done", call.stderr[-3000:]
    rows = json.loads(Path(call.spec["report_json_path"]).read_text())["rows"]
    verdicts = {r["id"]: r["verdict"] for r in rows}
    codes = [bash_exit(PREFIXED[i], tree, python) for i in (0, 2)]
    assert ([1, 1], ["REPRODUCED", "REPRODUCED"]) == (
        codes, [verdicts[e]["verdict"] for e in ("export", "cd")]), verdicts


def test_a_prefixed_pytest_node_runs_in_the_tree_as_bash_runs_it(tmp_path: Path) -> None:
    """``export PYTHONPATH=src && python -m pytest NODE`` with another clone's editable
    install in the venv: the node fails, then passes, as in bash."""
    command = "export PYTHONPATH=src && python -m pytest tests/test_add.py::TestAdd::test_add"
    runs = _both_commits(tmp_path, command, src_layout=True, other="editable",
                         other_fixed=False, with_pytest=True)
    assert ([1, 0], True) == ([c for c, _ in runs], all(_agrees(c, s) for c, s in runs)), \
        [s["verdict"] for _, s in runs]


def test_a_develop_install_of_another_clone_is_an_editable_install(tmp_path: Path) -> None:
    """The venv holds a legacy ``setup.py develop`` install (egg-link, easy-install.pth)
    of another clone, already fixed; the tree has its package at the root and is buggy,
    then fixed. ``python -c`` typed in the tree imports the tree (its folder is first on
    sys.path): exit 1, then 0. The install is read as editable from that clone (so the
    tree is not left to run the clone's copy), and the run imported the tree."""
    command = f'python -c "{ASSERT}"'
    runs = _both_commits(tmp_path, command, src_layout=False, other="develop",
                         other_fixed=True)
    envs = [s["verdict"]["environment"] for _, s in runs]
    assert ([1, 0], True, ["editable", "editable"], [None, None], [[], []]) == (
        [c for c, _ in runs], all(_agrees(c, s) for c, s in runs),
        [e["project_install"] for e in envs], [e.get("other_code") for e in envs],
        [_warned(s) for _, s in runs]), [s["verdict"] for _, s in runs]


def test_a_run_that_leaves_the_tree_for_a_develop_install_is_warned(tmp_path: Path) -> None:
    """The same develop install, the command run away from the tree (``cd /``): bash
    imports the clone (fixed: exit 0 at both commits); so does the verdict, and the
    warning names the clone, from the run's own import record."""
    command = f'cd / && python -c "{ASSERT}"'
    runs = _both_commits(tmp_path, command, src_layout=False, other="develop",
                         other_fixed=True)
    clone = str(tmp_path / "other-clone")
    assert ([0, 0], True, [True, True]) == (
        [c for c, _ in runs], all(_agrees(c, s) for c, s in runs),
        [any(clone in w for w in _warned(s)) for _, s in runs]), [s["verdict"] for _, s in runs]


def test_the_warning_is_decided_by_what_the_run_imported(tmp_path: Path) -> None:
    """Another clone (buggy) is installed editable; the tree is src-layout. The inline
    ``PYTHONPATH=src python -c`` imports the tree: no warning at either commit, though the
    install record names the other clone. The bare ``python -c`` imports the clone (the
    tree's code is under src/): the warning is there, naming the clone, at both commits,
    and rerun_after_fix installs the tree."""
    inline = _both_commits(tmp_path / "inline", f'PYTHONPATH=src python -c "{ASSERT}"',
                           src_layout=True, other="editable", other_fixed=False)
    bare = _both_commits(tmp_path / "bare", f'python -c "{ASSERT}"',
                         src_layout=True, other="editable", other_fixed=False)
    clone = str(tmp_path / "bare" / "other-clone")
    assert ([1, 0], [[], []], [1, 1], [True, True], True) == (
        [c for c, _ in inline], [_warned(s) for _, s in inline], [c for c, _ in bare],
        [any(clone in w for w in _warned(s)) for _, s in bare],
        "pip install --no-deps -e" in bare[0][1]["verdict"]["rerun_after_fix"]), (
        [s["verdict"] for _, s in inline + bare])
    assert all(_agrees(c, s) for c, s in inline + bare)


def test_the_import_record_is_invisible_to_the_run(tmp_path: Path) -> None:
    """The run sees PYTHONPATH as the command set it (or not at all), no folder of the
    orchestrator on sys.path and no record variable; bash agrees (exit 0)."""
    tree = tinyproject.make(tmp_path / "tree", src_layout=True)
    python = _venv(tmp_path / "venv")
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    probe = ("import os, sys; assert 'FLOW_IMPORT_RECORD' not in os.environ; "
             "assert not any('importhook' in p for p in sys.path), sys.path; ")
    commands = [f'python -c "{probe}assert \'PYTHONPATH\' not in os.environ"',
                f'PYTHONPATH=src python -c "{probe}assert os.environ[\'PYTHONPATH\'] == \'src\'"',
                f'export PYTHONPATH=src && python -c "{probe}'
                'assert os.environ[\'PYTHONPATH\'] == \'src\'"']
    got = [(bash_exit(c, tree, python), verdict_spec(drv, tree, c)["verdict"]["verdict"])
           for c in commands]
    assert [(0, "NOT_REPRODUCED")] * 3 == got


FINDER = '''\
"""An editable finder as setuptools writes one (our own words): MAPPING names the folder
of each top-level package; install() puts the finder on sys.meta_path."""
import importlib.util
import sys

MAPPING = {mapping!r}


class _Finder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in MAPPING:
            return importlib.util.spec_from_file_location(
                name, MAPPING[name] + "/__init__.py", submodule_search_locations=[MAPPING[name]])
        return None


def install():
    sys.meta_path.append(_Finder)
'''


def test_an_editable_finder_mapping_names_where_the_package_lives(tmp_path: Path) -> None:
    """A setuptools-style editable install (``__editable__.*.pth`` importing a finder
    whose ``MAPPING`` names the package folder; a dist-info whose ``direct_url.json``
    names the project root) of another clone: the probe's ``home`` is the folder the
    interpreter really imports the package from, and the environment says that folder."""
    from flow.workflows.reproduce.verdict import environment as envinfo, probe

    clone = tinyproject.make(tmp_path / "other-clone", src_layout=True)
    tree = tinyproject.make(tmp_path / "tree", src_layout=True)
    python = _venv(tmp_path / "venv")
    site = next(python.parent.parent.glob("lib/python*/site-packages"))
    package = clone / "src" / "tinycalc"
    (site / "__editable___tinycalc_1_0_finder.py").write_text(
        FINDER.format(mapping={"tinycalc": str(package)}))
    (site / "__editable__.tinycalc-1.0.pth").write_text(
        "import __editable___tinycalc_1_0_finder; __editable___tinycalc_1_0_finder.install()\n")
    dist = site / "tinycalc-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tinycalc\nVersion: 1.0\n")
    (dist / "top_level.txt").write_text("tinycalc\n")
    (dist / "direct_url.json").write_text(
        '{"url": "file://%s", "dir_info": {"editable": true}}' % clone)
    real = subprocess.run([str(python), "-c", "import tinycalc; print(tinycalc.__file__)"],
                          cwd="/", capture_output=True, text=True).stdout.strip()
    output = probe.probe_here(["tinycalc"], str(tree), probe.venv_layout(str(python)))
    env = envinfo.read_probe(str(python), output, "tinycalc", [],
                             envinfo.TreeState(path=str(tree), git=True))
    found = [line for line in output.splitlines() if '"home"' in line]
    assert (str(package / "__init__.py"), True, "editable", True) == (
        real, bool(found) and f'"home": "{clone / "src"}"' in found[0], env.project_install,
        f"from {clone / 'src'} " in (env.other_code or "")), (output, env)
