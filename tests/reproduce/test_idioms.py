"""The reproduce workflow on the idioms of real projects (examples/idioms), end to end
through the CLI: where the command runs, setup errors, setup.py projects, an old pip."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.reproduce.prepare.rules import RULE_IN_TREE
from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce.conftest import PYTHON, REPO

IDIOMS = REPO / "examples" / "idioms"
PY37 = Path("/root/.pyenv/versions/3.7.16/bin/python3.7")
FRESH = {"PATH": "/usr/bin:/bin"}


def _copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(IDIOMS / name, tmp_path / name))


def _reproduce(tmp_path: Path, src: Path, command: str, ws: str, *extra: str,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    call = Driver(tmp_path / ws).call(["reproduce", "--profile", "local", "--stage", "nightly",
                                       "--source-dir", str(src), "--command", command, *extra],
                                      extra_env=env)
    assert call.spec is not None, call.stderr
    return call.spec["verdict"]


def _fresh_shell(command: str, env: dict[str, str] | None = None) -> int:
    """``env -i PATH=/usr/bin:/bin bash -c COMMAND`` from /: its exit code."""
    return subprocess.run(["bash", "-c", command], cwd="/", env={**FRESH, **(env or {})},
                          capture_output=True, timeout=300).returncode


def _fix(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


def test_test_reading_a_root_relative_file_runs_in_the_tree(tmp_path: Path) -> None:
    """A test that opens data/names.txt relative to the project root reproduces, its
    refined_command fails before the fix and passes after it, and the fixed tree is
    NOT_REPRODUCED (the local profile runs in the project tree, and says so)."""
    src = _copy(tmp_path, "rootfiles")
    command = "pytest tests/test_names.py::test_names_from_the_data_file"
    buggy = _reproduce(tmp_path, src, command, "ws1")
    before = _fresh_shell(buggy["refined_command"])
    _fix(src / "rootfiles" / "__init__.py", 'text.split("\\n")', 'text.splitlines()')
    after = _fresh_shell(buggy["refined_command"])
    fixed = _reproduce(tmp_path, src, command, "ws2")
    assert ("REPRODUCED", RULE_IN_TREE, True, 0, "NOT_REPRODUCED") == (
        buggy["verdict"], buggy["cwd_rule"], before != 0, after, fixed["verdict"])


def test_python_m_unittest_module_path_reproduces(tmp_path: Path) -> None:
    """``python -m unittest test.test_words.WordsTest.test_title`` (a module path that
    resolves only from the project root, shadowing the stdlib's test package) is
    REPRODUCED, not a false "missing dependency", and NOT_REPRODUCED after the fix."""
    src = _copy(tmp_path, "unittest_mod")
    command = "python -m unittest test.test_words.WordsTest.test_title"
    buggy = _reproduce(tmp_path, src, command, "ws1")
    _fix(src / "unitmod" / "__init__.py", "text.capitalize()", "text.title()")
    after = _fresh_shell(buggy["refined_command"])
    fixed = _reproduce(tmp_path, src, command, "ws2")
    assert ("REPRODUCED", 0, "NOT_REPRODUCED") == (buggy["verdict"], after, fixed["verdict"])


def test_setup_error_is_cannot_verify(tmp_path: Path) -> None:
    """Every selected test erroring in a conftest fixture (no test body ran) is
    CANNOT_VERIFY with the error's line as the blocker, not REPRODUCED."""
    src = _copy(tmp_path, "setup_error")
    verdict = _reproduce(tmp_path, src, "pytest tests/test_sum.py::test_total", "ws")
    assert ("CANNOT_VERIFY", True, True) == (
        verdict["verdict"], "setup or collection" in verdict["blocker"],
        "get_marker" in verdict["blocker"])


def test_setup_error_matching_the_failure_pattern_reproduces(tmp_path: Path) -> None:
    """A setup error that is the bug the caller named (its failure pattern) reproduces."""
    src = _copy(tmp_path, "setup_error")
    verdict = _reproduce(tmp_path, src, "pytest tests/test_sum.py::test_total", "ws",
                         "--failure-pattern", "has no attribute 'get_marker'")
    assert "REPRODUCED" == verdict["verdict"]


OFFLINE_PIP = {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_CONFIG_FILE": os.devnull}


def _install(py: Path, *args: str) -> None:
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", *args], check=True,
                   env={**os.environ, **OFFLINE_PIP}, capture_output=True)


def test_setup_py_project_installed_editable_is_known(tmp_path: Path) -> None:
    """A setup.py-only project installed editable is identified from its installed
    metadata (name, version, editable), runs in the tree and needs no rerun after a fix."""
    src = _copy(tmp_path, "shoebox")
    py = projectenv.lending(tmp_path / "venv")
    _install(py, "-e", str(src))
    verdict = _reproduce(tmp_path, src, "pytest tests/test_boxes.py::test_partial_box_counts",
                         "ws", env={"ORCHESTRATOR_REPRODUCE_PYTHON": str(py)})
    env = verdict["environment"]
    assert ("REPRODUCED", "shoebox", "1.0", "editable", RULE_IN_TREE, "") == (
        verdict["verdict"], env["project"], env["project_version"], env["project_install"],
        verdict["cwd_rule"], verdict["rerun_after_fix"])


def test_setup_py_project_installed_non_editable_still_runs_in_the_tree(tmp_path: Path) -> None:
    """A setup.py project installed non-editable from the tree: the run stays in the tree
    (the copy is no reason to leave it), imports the tree's shoebox and says so, so a fix
    in the tree is seen at once: refined_command passes on the fixed tree without the
    reinstall, and a fresh reproduce says NOT_REPRODUCED."""
    src = _copy(tmp_path, "shoebox")
    py = projectenv.lending(tmp_path / "venv")
    _install(py, str(src))
    command = "pytest tests/test_boxes.py::test_partial_box_counts"
    settings = {"ORCHESTRATOR_REPRODUCE_PYTHON": str(py)}
    buggy = _reproduce(tmp_path, src, command, "ws1", env=settings)
    _fix(src / "shoebox" / "__init__.py", "items // size", "-(-items // size)")
    after = _fresh_shell(buggy["refined_command"])
    fixed = _reproduce(tmp_path, src, command, "ws2", env=settings)
    env = buggy["environment"]
    assert ("REPRODUCED", "installed", RULE_IN_TREE, True, "", 0, "NOT_REPRODUCED") == (
        buggy["verdict"], env["project_install"], buggy["cwd_rule"],
        all(f.startswith(f"{src}/") for f in env["imported_from"] or ["-"]),
        buggy["rerun_after_fix"], after, fixed["verdict"]), buggy


@pytest.mark.slow
@pytest.mark.skipif(not PY37.exists(), reason="no Python 3.7 under /root/.pyenv here")
def test_stage2_build_with_python37_stock_pip(tmp_path: Path) -> None:
    """The Stage 2 build of a setup.py project for a Python 3.7 venv with its stock pip
    (22.0.4, no ``--python`` option) works: the target's own pip installs it."""
    py37 = str(_stock_venv(tmp_path, PY37))
    no_option = subprocess.run([py37, "-m", "pip", "--python", py37, "--version"],
                               capture_output=True, text=True)
    src = _copy(tmp_path, "shoebox")
    code = subprocess.run([PYTHON, "-m", "flow.workflows.reproduce.stage2.build", "--source",
                           str(src), "--work", str(tmp_path / "build"), "--python", py37,
                           "--offline"], cwd=REPO, capture_output=True, timeout=600).returncode
    built = tmp_path / "build" / "venv" / "bin" / "python"
    imported = subprocess.run([str(built), "-c", "import shoebox, sys; print(shoebox.__file__)"],
                              capture_output=True, text=True, cwd="/")
    assert (True, 0, str(src / "shoebox" / "__init__.py")) == (
        no_option.returncode != 0, code, imported.stdout.strip())


def test_refined_command_outside_a_tree_survives_the_workspace(tmp_path: Path) -> None:
    """A reproducer run outside any tree cds to a fresh ``mktemp -d``, not the flow's
    scratch dir: with the workspace deleted it still exits with the reproducer's own code."""
    call = Driver(tmp_path / "ws").call(["reproduce", "--profile", "local", "--stage", "nightly",
                                         "--command", 'python -c "raise SystemExit(3)"'])
    assert call.spec is not None, call.stderr
    refined = call.spec["verdict"]["refined_command"]
    shutil.rmtree(tmp_path / "ws")
    assert (True, 3) == (refined.startswith('cd "$(mktemp -d)" && '), _fresh_shell(refined))


@pytest.mark.parametrize("files, expected", [
    ({"pyproject.toml": '[project]\nname = "one"\n'}, "one"),
    ({"setup.cfg": "[metadata]\nname = two\n", "setup.py": "from setuptools import setup\nsetup()\n"}, "two"),
    ({"setup.py": "from setuptools import setup\nsetup(name='three', version='1')\n"}, "three"),
    ({"setup.py": "from setuptools import setup\nsetup(name=NAME)\n"}, None),
], ids=["pyproject", "setup.cfg", "setup.py", "computed"])
def test_project_name_of_every_kind_of_project(tmp_path: Path, files: dict[str, str],
                                                expected: str | None) -> None:
    """The declared name comes from pyproject.toml, setup.cfg or a literal in setup.py; a
    computed name is None (the installed metadata names it then)."""
    from flow.workflows.reproduce.verdict.environment import project_name

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert expected == project_name(str(tmp_path))


def test_cannot_verify_next_steps_say_what_passed_and_offline() -> None:
    """CANNOT_VERIFY at stage 3 says stages 1 and 2 passed; a verdict's hint (a missing
    module: ``verdict.hints``) is a next step of its own."""
    from types import SimpleNamespace

    from flow.workflows.reproduce.verdict.models import CannotVerify, Stage
    from flow.workflows.reproduce.verdict.report import _cannot_verify_steps

    ctx = SimpleNamespace(data=SimpleNamespace(profile="local"), settings={})
    ci = _cannot_verify_steps(ctx, CannotVerify(stage=Stage.CI_ENV, blocker="no GitHub token"))
    build = _cannot_verify_steps(ctx, CannotVerify(
        stage=Stage.SOURCE_BUILD, blocker="missing dependency: ModuleNotFoundError: No module named 'x'",
        hint="the source-build venv lacks x: re-run with ORCHESTRATOR_REPRODUCE_OFFLINE=1"))
    assert (True, True) == ("stages nightly and source_build ran and the test passed" in ci[0],
                            "ORCHESTRATOR_REPRODUCE_OFFLINE=1" in build[0])


def test_legacy_develop_install_is_found_by_its_egg_info(tmp_path: Path) -> None:
    """A ``setup.py develop`` install (old pip: an .egg-info in the tree, the tree on
    sys.path through a .pth, no direct_url.json) is identified as the tree's editable
    install, whatever name the setup.py computes."""
    from flow.workflows.reproduce.verdict import environment as envinfo, probe

    src = _copy(tmp_path, "shoebox")
    (src / "setup.py").write_text("from setuptools import setup\nNAME = 'shoe' + 'box'\n"
                                  "setup(name=NAME, version='1.0', packages=['shoebox'])\n")
    egg = src / "shoebox.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.0\nName: shoebox\nVersion: 1.0\n")
    (egg / "top_level.txt").write_text("shoebox\n")
    py = projectenv.lending(tmp_path / "venv")
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "easy-install.pth").write_text(f"{src}\n")
    out = subprocess.run(probe.probe_argv(str(py), ["pytest"], str(src)), capture_output=True,
                         text=True, cwd="/").stdout
    env = envinfo.read_probe(str(py), out, envinfo.project_name(str(src)), ["pytest"], None)
    assert ("shoebox", "1.0", "editable") == (env.project, env.project_version, env.project_install)


def _stock_venv(tmp_path: Path, python: str | Path = PYTHON) -> Path:
    """A venv made by ``python -m venv`` (its interpreter's bundled pip and setuptools,
    nothing downloaded); its python. Its temporary files go to ``tmp_path``: the pip 22.0.4
    that Python 3.7 bundles unpacks a CA bundle from its wheel and never removes it."""
    venv = tmp_path / "stock"
    subprocess.run([str(python), "-m", "venv", str(venv)], check=True, capture_output=True,
                   timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    return venv / "bin" / "python"


@pytest.mark.slow
def test_offline_build_without_wheel_names_the_mend(tmp_path: Path) -> None:
    """The offline Stage 2 build of a setup.py project whose environment has setuptools
    before 70.1 and no ``wheel`` really fails with "invalid command 'bdist_wheel'" (the
    editable install and the built wheel both need it), and the error says which package
    is missing and the command that adds it to that environment."""
    py = _stock_venv(tmp_path)
    has = subprocess.run([str(py), "-c", "import importlib.metadata, importlib.util, setuptools; print("
                          "setuptools.__version__, importlib.util.find_spec('wheel') is None, "
                          "importlib.metadata.version('pip'))"],
                         capture_output=True, text=True, check=True).stdout.split()
    if not (tuple(int(p) for p in has[0].split(".")[:2]) < (70, 1) and has[1] == "True"):
        pytest.skip(f"this interpreter's bundled setuptools {has[0]} builds wheels by itself")
    if tuple(int(p) for p in has[2].split(".")[:2]) < (23, 1):  # Debian's python3.11: 23.0.1
        pytest.skip(f"this interpreter's bundled pip {has[2]} still falls back to "
                    "'setup.py develop' without wheel (pip 23.1 dropped that)")
    src = _copy(tmp_path, "shoebox")
    build = subprocess.run([PYTHON, "-m", "flow.workflows.reproduce.stage2.build", "--source",
                            str(src), "--work", str(tmp_path / "build"), "--python", str(py),
                            "--offline"], cwd=REPO, capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    assert (1, True, True) == (
        build.returncode, "invalid command 'bdist_wheel'" in build.stderr,
        f"needs the 'wheel' package in {py}'s environment: {py} -m pip install wheel"
        in build.stderr), build.stderr[-2000:]


def _py37_without_backport(tmp_path: Path) -> Path:
    """A stock Python 3.7 venv (pip 22.0.4, setuptools 47): no importlib.metadata, and
    no importlib_metadata backport either."""
    py = _stock_venv(tmp_path, PY37)
    assert 0 != subprocess.run([str(py), "-c", "import importlib_metadata"],
                               capture_output=True).returncode
    return py


@pytest.mark.slow
@pytest.mark.skipif(not PY37.exists(), reason="no Python 3.7 under /root/.pyenv here")
def test_python37_without_importlib_metadata_knows_the_project(tmp_path: Path) -> None:
    """On a Python 3.7 venv without importlib_metadata, a setup.py project installed
    non-editable (legacy ``setup.py install``: an .egg-info, no direct_url.json) is known
    from its metadata files; the run stays in the tree as bash would (the copy is pure
    Python: no reason to leave), so it imports the tree and needs no reinstall after a
    fix."""
    py = _py37_without_backport(tmp_path)
    src = _copy(tmp_path, "shoebox")
    _install(py, "--no-build-isolation", str(src))
    verdict = _reproduce(tmp_path, src, 'python -c "from shoebox import boxes; '
                         'assert boxes(5, 2) == 3"', "ws",
                         env={"ORCHESTRATOR_REPRODUCE_PYTHON": str(py)})
    env = verdict["environment"]
    assert ("REPRODUCED", "3.7.16", "shoebox", "1.0", "installed", ["shoebox"], RULE_IN_TREE,
            "") == (
        verdict["verdict"], env["python_version"], env["project"], env["project_version"],
        env["project_install"], env["project_imports"], verdict["cwd_rule"],
        verdict["rerun_after_fix"])


@pytest.mark.skipif(not PY37.exists(), reason="no Python 3.7 under /root/.pyenv here")
def test_python37_child_probe_reads_metadata_files(tmp_path: Path) -> None:
    """The probe run in a Python 3.7 interpreter without importlib_metadata reads the
    .dist-info/.egg-info files on its sys.path itself: pip's version, and a setup.py
    project installed editable (``setup.py develop``: an .egg-link, the tree on sys.path,
    its .egg-info in the tree) as the tree's editable install."""
    from flow.workflows.reproduce.verdict import environment as envinfo, probe

    py = _py37_without_backport(tmp_path)
    src = _copy(tmp_path, "shoebox")
    _install(py, "--no-build-isolation", "-e", str(src))
    out = subprocess.run(probe.probe_argv(str(py), ["pip", "shoebox"], str(src)),
                         capture_output=True, text=True, cwd="/")
    env = envinfo.read_probe(str(py), out.stdout, envinfo.project_name(str(src)), ["pip"], None)
    assert ("3.7.16", "22.0.4", "shoebox", "1.0", "editable") == (
        env.python_version, env.packages.get("pip"), env.project, env.project_version,
        env.project_install), out.stderr


def test_tree_state_asks_git_once_unless_a_tracked_file_changed(
        tmp_path: Path, git_env: dict[str, str]) -> None:
    """The verdict's tree state: one git call for a clean tree and for one with only
    untracked files (the hash still covers their names and bytes, read from the project's
    folder, a subfolder of the repository); ``git diff HEAD`` joins in only
    when a tracked file changed, and changes the hash."""
    import hashlib

    from flow.workflows.reproduce.verdict.environment import tree_state

    top = tmp_path / "repo"
    sub = top / "proj"
    sub.mkdir(parents=True)
    (sub / "a.py").write_text("A = 1\n")
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "a"]):
        subprocess.run(["git", "-C", str(top), *args], env=git_env, check=True,
                       capture_output=True)
    calls: list[list[str]] = []

    def run(argv: list[str]) -> tuple[int, str]:
        calls.append(argv)
        got = subprocess.run(argv, env=git_env, capture_output=True, text=True)
        return got.returncode, got.stdout

    clean = tree_state(str(sub), run)
    clean_calls = len(calls)
    (sub / "new.txt").write_text("n\n")
    untracked = tree_state(str(sub), run)
    untracked_calls = len(calls) - clean_calls
    (sub / "a.py").write_text("A = 2\n")
    tracked = tree_state(str(sub), run)
    expected = hashlib.sha256(b"")
    expected.update(b"new.txt")
    expected.update(b"n\n")
    assert ((False, 1), (True, 1, expected.hexdigest()), (True, 2, True)) == (
        (clean.dirty, clean_calls),
        (untracked.dirty, untracked_calls, untracked.changes_sha256),
        (tracked.dirty, len(calls) - clean_calls - untracked_calls,
         tracked.changes_sha256 != untracked.changes_sha256))
