"""What ``environment`` says in every verdict: a collection error's CANNOT_VERIFY names the
interpreter and tree as a REPRODUCED one does, and a run that imports the project from
another folder than --source-dir (an editable install of another clone) says so loudly, in
a note and in ``environment``."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce import tinyproject
from tests.reproduce.conftest import REPO


def _verdict(drv: Driver, src: Path, command: str) -> dict:
    call = drv.call(["reproduce", "--profile", "local", "--source-dir", str(src),
                     "--stage", "nightly", "--command", command])
    assert call.spec is not None and call.spec["status"] == "done", call.stderr
    return call.spec


def test_a_collection_error_verdict_has_its_environment(tmp_path: Path, project_python: str) -> None:
    src = Path(shutil.copytree(REPO / "examples" / "calc", tmp_path / "calc"))
    (src / "tests" / "test_broken.py").write_text(
        "import a_module_nobody_installed\n\n\ndef test_x():\n    pass\n")
    spec = _verdict(Driver(tmp_path / "ws"), src, "pytest tests/test_broken.py::test_x")
    verdict = spec["verdict"]
    env = verdict.get("environment") or {}
    assert ("CANNOT_VERIFY", project_python, "calc", str(src)) == (
        verdict["verdict"], env.get("interpreter"), env.get("project"),
        (env.get("tree") or {}).get("path")), verdict


def test_an_editable_install_of_another_folder_is_said_loudly(tmp_path: Path) -> None:
    """The interpreter has the project installed editable from another clone (still
    buggy); --source-dir is fixed. The verdict names that folder in ``environment`` and a
    WARNING note; rerun_after_fix installs the tree editable, after which refined_command
    passes."""
    other = tinyproject.make(tmp_path / "other-clone", src_layout=True)
    src = tinyproject.make(tmp_path / "src", src_layout=True)
    tinyproject.fix(src)
    python = projectenv.make(tmp_path / "venv", ["pip"])
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index",
                    "--no-build-isolation", "--no-deps", "-e", str(other)], check=True)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    spec = _verdict(drv, src, 'python -c "from tinycalc import add; assert add(1, 2) == 3"')
    verdict = spec["verdict"]
    env = verdict.get("environment") or {}
    fresh = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    rerun = subprocess.run(["bash", "-c", verdict.get("rerun_after_fix") or "false"],
                           env={**fresh, "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0"},
                           capture_output=True, text=True)
    after = subprocess.run(["bash", "-c", verdict.get("refined_command", "")], env=fresh,
                           capture_output=True, text=True)
    warned = [n for n in spec["report"]["notes"] if n.startswith("WARNING") and str(other) in n]
    assert ("editable", True, True, 1, 0, 0) == (
        env.get("project_install"), str(other) in (env.get("other_code") or ""),
        "not from the tree" in (env.get("other_code") or ""), len(warned),
        rerun.returncode, after.returncode), (verdict, rerun.stderr, spec["report"]["notes"])
