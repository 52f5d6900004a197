"""A CANNOT_VERIFY from a missing import names the module and how to add it where the run
needs it (``verdict.hints``): an extra the tree declares is named for ``--test-extras``; an
undeclared test dependency the project interpreter has is lent by
``ORCHESTRATOR_REPRODUCE_OFFLINE=1``; at Stage 1 the interpreter's own pip install. On real
trees and venvs, with pip served from a local wheelhouse (no network): following the hint
gets past the blocker."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from flow.workflows.reproduce.verdict import hints
from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce import tinyproject, wheelhouse
from tests.reproduce.conftest import build_wheel

NODE = "tests/test_add.py::TestAdd::test_add"
TEST_WITH_HELPER = '''\
import tinyhelper
from tinycalc import add


class TestAdd:
    def test_add(self):
        assert add(1, 2) == tinyhelper.THREE
'''


@pytest.mark.parametrize("files, where", [
    ({"pyproject.toml": '[project]\nname = "p"\n[project.optional-dependencies]\n'
                        'testing = ["tiny_helper>=1", "pytest"]\n'}, "extra 'testing'"),
    ({"setup.cfg": "[options.extras_require]\ntests =\n    Tiny-Helper\n"}, "extra 'tests'"),
    ({"setup.py": "from setuptools import setup\nsetup(name='p', extras_require="
                  "{'test': ['tiny.helper; python_version > \"3\"']})\n"}, "extra 'test'"),
    ({"requirements/test.txt": "-r base.txt\ntiny-helper==1.0\n"}, "requirements/test.txt lists it"),
    ({"tox.ini": "[testenv]\ndeps =\n    pytest\n    tiny-helper\n"}, "tox.ini [testenv] deps"),
    ({"pyproject.toml": '[project]\nname = "p"\n'}, "does not declare it"),
], ids=["pyproject", "setup.cfg", "setup.py", "requirements", "tox", "undeclared"])
def test_the_hint_names_where_the_tree_declares_the_module(tmp_path: Path, files: dict,
                                                           where: str) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    said = hints.hint("tiny_helper.sub", stage="source_build", python="/v/bin/python",
                      project_python="/p/bin/python", tree=str(tmp_path), local_build=True,
                      offline=False, project_has_it=False)
    assert ("the module 'tiny_helper.sub' (distribution tiny-helper)" in said, where in said,
            ("--test-extras" in said), "OFFLINE=1" in said or "extra" in where) == (
        True, True, True, True), said


def test_known_import_names_map_to_their_distribution() -> None:
    assert (["PyYAML", "python-dateutil", "pytest-cov", "attrs"]) == [
        hints.distribution(m) for m in ("yaml.loader", "dateutil.tz", "pytest_cov", "attr")]


def _project_env(tmp_path: Path, wheels: Path) -> Path:
    """The project interpreter: a venv holding pytest and the undeclared test helper."""
    python = projectenv.make(tmp_path / "project-env", ["pip"])
    subprocess.run([str(python), "-m", "pip", "install", "-q", "pytest", "tinyhelper"],
                   check=True, env={**_env(wheels)})
    return python


def _env(wheels: Path) -> dict[str, str]:
    import os

    return {**os.environ, **wheelhouse.offline_pip(wheels)}


def _tree(tmp_path: Path, declare: bool) -> Path:
    """tinyproject at its fixed commit whose test imports ``tinyhelper`` (declared in the
    extra ``test`` or not at all)."""
    src = tinyproject.make(tmp_path / "src")
    tinyproject.fix(src)
    (src / "tests" / "test_add.py").write_text(TEST_WITH_HELPER)
    if declare:
        with (src / "pyproject.toml").open("a") as fh:
            fh.write('\n[project.optional-dependencies]\ntest = ["tinyhelper"]\n')
        # the tree's own backend writes the extra into the wheel's metadata too
        backend = src / "tinybackend.py"
        backend.write_text(backend.read_text().replace(
            '"\\nVersion: " + VERSION + "\\n"',
            '"\\nVersion: " + VERSION + "\\nProvides-Extra: test\\n'
            'Requires-Dist: tinyhelper; extra == \'test\'\\n"'))
        assert "Provides-Extra" in backend.read_text()
    env = tinyproject.git_env(tmp_path)
    subprocess.run(["git", "-C", str(src), "commit", "-qam", "a test helper"], check=True, env=env)
    return src


def _through_build(drv: Driver, argv: list[str], extra: dict[str, str]) -> dict:
    """Start, run the Stage 2 build task the flow asks for (with ``extra`` settings), feed
    it back; the verdict reached after it."""
    call = drv.call(argv, extra)
    spec = call.spec or {}
    assert spec.get("status") == "need_agent", (spec, call.stderr)
    task = spec["tasks"][0]
    build = subprocess.run(task["argv"], cwd=task.get("cwd"), capture_output=True, text=True,
                           env={**drv.env, **extra})
    Path(task["log_file"]).write_text(build.stdout + build.stderr)
    Path(task["feed_file"]).write_text(json.dumps({"exit_code": build.returncode,
                                                   "log_path": task["log_file"]}))
    fed = drv.shell(task["feed_command"], extra)
    assert fed.spec is not None and fed.spec.get("status") == "done", (fed.spec, fed.stderr)
    return fed.spec


@pytest.mark.slow
@pytest.mark.parametrize("declare", [True, False], ids=["declared-extra", "undeclared"])
def test_a_build_venv_without_a_test_dependency_says_how_to_add_it(tmp_path: Path,
                                                                    declare: bool) -> None:
    """At the fixed commit Stage 1 passes (the project interpreter has the helper); the
    source-build venv lacks it: CANNOT_VERIFY(source_build) whose hint names the module and
    the way in (``--test-extras test`` / ``ORCHESTRATOR_REPRODUCE_OFFLINE=1``), in the
    verdict and its next steps. Re-run that way, Stage 2 runs the test and it passes."""
    wheels = wheelhouse.pytest_wheels(tmp_path / "wheels")
    build_wheel(wheels, "tinyhelper", "1.0", {"tinyhelper/__init__.py": "THREE = 3\n"})
    python = _project_env(tmp_path, wheels)
    src = _tree(tmp_path, declare)
    settings = {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python), **wheelhouse.offline_pip(wheels)}
    drv = Driver(tmp_path / "ws", settings)
    argv = ["reproduce", "--profile", "local", "--source-dir", str(src), "--command",
            f"python -m pytest {NODE}"]
    spec = _through_build(drv, argv, {})
    verdict = spec["verdict"]
    way = "--test-extras test" if declare else "ORCHESTRATOR_REPRODUCE_OFFLINE=1"
    hint = verdict.get("hint") or ""
    assert ("CANNOT_VERIFY", "source_build", True, True, True, True) == (
        verdict["verdict"], verdict["stage"], "'tinyhelper'" in verdict["blocker"],
        "the module 'tinyhelper'" in hint, way in hint, hint in spec["next_steps"]), spec

    mended = (["--test-extras", "test"], {}) if declare else (
        [], {"ORCHESTRATOR_REPRODUCE_OFFLINE": "1"})
    again = _through_build(Driver(tmp_path / "ws2", settings), [*argv, *mended[0]], mended[1])
    # Stage 2 passed: the flow went on to Stage 3, which the local profile cannot run here
    # without a CI repository
    assert ("CANNOT_VERIFY", "ci_env") == (again["verdict"]["verdict"],
                                           again["verdict"]["stage"]), again["verdict"].get("blocker")


@pytest.mark.slow
def test_a_batch_row_carries_the_hint(tmp_path: Path) -> None:
    """In a --stage nightly batch, an entry whose interpreter lacks a module the tree's
    extra declares: the row's note names the module and the interpreter's pip install of
    that extra; following it, the same batch passes."""
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinyhelper", "1.0", {"tinyhelper/__init__.py": "THREE = 3\n"})
    src = _tree(tmp_path, declare=True)
    venv = tmp_path / "venv"
    # pytest lent from this environment (the base interpreter's, which
    # --system-site-packages would give, may have none)
    python = projectenv.lending(venv, pip=True)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([{"id": "helper", "command": f"python -m pytest {NODE}"}]))
    argv = ["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir", str(src),
            "--batch", str(batch)]
    settings = {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)}
    call = Driver(tmp_path / "ws", settings).call(argv)
    assert call.spec is not None, call.stderr
    [row] = json.loads(Path(call.spec["report_json_path"]).read_text())["rows"]
    markdown = Path(call.spec["report_path"]).read_text()
    install = f"{python} -m pip install -e '{src}[test]'"
    assert ("unverified", True, True, True) == (
        row["bucket"], "the module 'tinyhelper'" in row["note"], install in row["note"],
        install in markdown), row
    subprocess.run(["bash", "-c", install], check=True, capture_output=True,
                   env=_env(wheels) | {"PIP_NO_BUILD_ISOLATION": "0"})
    again = Driver(tmp_path / "ws2", settings).call(argv)
    [row] = json.loads(Path(again.spec["report_json_path"]).read_text())["rows"]
    assert "already_fixed" == row["bucket"], row["note"]
