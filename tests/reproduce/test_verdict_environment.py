"""What ``environment`` says in every verdict: a collection error's CANNOT_VERIFY names the
interpreter and tree as a REPRODUCED one does, and a run that imports the project from
another folder than --source-dir (an editable install of another clone) says so loudly, in
a note and in ``environment``."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.contract.driver import Driver
from tests.reproduce import tinyproject
from tests.reproduce.conftest import PYTHON, REPO


def _verdict(drv: Driver, src: Path, command: str) -> dict:
    call = drv.call(["reproduce", "--profile", "local", "--source-dir", str(src),
                     "--stage", "nightly", "--command", command])
    assert call.spec is not None and call.spec["status"] == "done", call.stderr
    return call.spec


def test_a_collection_error_verdict_has_its_environment(tmp_path: Path) -> None:
    src = Path(shutil.copytree(REPO / "examples" / "calc", tmp_path / "calc"))
    (src / "tests" / "test_broken.py").write_text(
        "import a_module_nobody_installed\n\n\ndef test_x():\n    pass\n")
    spec = _verdict(Driver(tmp_path / "ws"), src, "pytest tests/test_broken.py::test_x")
    verdict = spec["verdict"]
    env = verdict.get("environment") or {}
    assert ("CANNOT_VERIFY", PYTHON, "calc", str(src)) == (
        verdict["verdict"], env.get("interpreter"), env.get("project"),
        (env.get("tree") or {}).get("path")), verdict
