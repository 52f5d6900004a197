"""A shell block runs as bash runs it: the venv it makes and activates, what it exports and
where it cds carry into the reproduce step, whose interpreter is the activated venv's (not
the project interpreter, which here imports an older copy of the package from another
folder). The verdict agrees with ``bash -c BLOCK`` at the buggy and the fixed commit, and
refined_command runs by itself from ``env -i PATH=/usr/bin:/bin``."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.contract.driver import Driver
from tests.reproduce import tinyproject
from tests.reproduce.conftest import PYTHON

SNIPPET = ('python -c "import os, tinycalc; assert os.environ[\'TINY_MODE\'] == \'strict\'; '
           'assert tinycalc.add(1, 2) == 3, tinycalc.__file__"')


def project_interpreter(tmp: Path, stale_from: Path) -> Path:
    """A venv (no pip) whose site-packages holds an editable-style path to a copy of the
    buggy package made elsewhere: what the project interpreter would import."""
    stale = tmp / "stale-clone"
    shutil.copytree(stale_from / "tinycalc", stale / "tinycalc")
    venv = tmp / "project-venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run([str(venv / "bin" / "python"), "-c",
                           "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "stale_clone.pth").write_text(f"{stale}\n")
    return venv / "bin" / "python"


def block(proj: Path, venv: Path, elsewhere: Path, activate: str) -> str:
    return "\n".join([
        f"cd {proj}",
        f"python -m venv {venv} && {activate} {venv}/bin/activate",
        "pip install --no-index --no-build-isolation --no-deps .",
        "export TINY_MODE=strict",
        f"cd {elsewhere}",
        SNIPPET,
    ])


def bash_exit(text: str, python: Path) -> int:
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": "/tmp"}
    return subprocess.run(["bash", "-c", text], env=env, capture_output=True).returncode


@pytest.mark.slow
@pytest.mark.parametrize("activate", [".", "source"])
def test_a_block_runs_in_the_venv_it_activates(tmp_path: Path, activate: str) -> None:
    proj = tinyproject.make(tmp_path / "proj")
    python = project_interpreter(tmp_path, proj)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    text = block(proj, tmp_path / "block-venv", elsewhere, activate)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})

    def verdict() -> dict:
        call = drv.call(["reproduce", "--profile", "local", "--source-dir", str(proj),
                         "--stage", "nightly", "--command", text])
        assert call.spec is not None and call.spec["status"] == "done", call.stderr
        return call.spec["verdict"]

    buggy_bash, buggy = bash_exit(text, python), verdict()
    rerun = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c",
                            buggy.get("refined_command", "")], capture_output=True, text=True)
    tinyproject.fix(proj)
    fixed_bash, fixed = bash_exit(text, python), verdict()
    venv_python = str(tmp_path / "block-venv" / "bin" / "python")
    assert (buggy_bash, buggy["verdict"], (buggy.get("environment") or {}).get("interpreter"),
            str(tmp_path / "ws") in buggy.get("refined_command", ""), rerun.returncode,
            "block-venv/lib" in rerun.stderr, fixed_bash, fixed["verdict"],
            (fixed.get("environment") or {}).get("interpreter")) == (
        1, "REPRODUCED", venv_python, False, 1, True, 0, "NOT_REPRODUCED", venv_python), (
        buggy, fixed, rerun.stderr)


GREETS = "python -c \"import os, sys; sys.exit(os.environ['GREETING'] == 'hello')\""


def _refined_alone(ws: Path, text: str, *, cleaned: Path | None = None) -> tuple[dict, str, int]:
    """Reproduce the block ``text``; (its verdict, its refined_command, that command's exit
    from ``env -i PATH=/usr/bin:/bin``), after removing the empty folder ``cleaned``."""
    call = Driver(ws).call(["reproduce", "--profile", "local", "--stage", "nightly",
                            "--command", text])
    assert call.spec is not None, call.stderr
    verdict = call.spec["verdict"]
    refined = verdict.get("refined_command", "")
    if cleaned is not None:
        cleaned.rmdir()  # what a cleaned /tmp does to the folder the block made
    alone = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", "bash", "-c", refined]).returncode
    return verdict, refined, alone


def test_a_block_that_stays_in_its_empty_folder_runs_in_a_fresh_one(tmp_path: Path) -> None:
    """A block whose setup writes nothing and cds nowhere: its refined_command starts in a
    fresh ``mktemp -d``, never in the workspace's scratch folder."""
    verdict, refined, alone = _refined_alone(tmp_path / "ws",
                                             f"export GREETING=hello\ntrue\n{GREETS}")
    assert ("REPRODUCED", True, False, 1) == (
        verdict["verdict"], refined.startswith('cd "$(mktemp -d)" && '),
        str(tmp_path / "ws") in refined.split(" -c ")[0], alone), verdict


def test_a_block_that_runs_away_into_a_temp_folder_refines_to_a_fresh_one(
        tmp_path: Path) -> None:
    """A block that cds into a folder it makes (``cd "$(mktemp -d)"``, to run away from the
    tree) and writes nothing there: its refined_command cds to a fresh ``mktemp -d`` rather
    than naming that folder, so it still runs once the folder is cleaned away."""
    away = tmp_path / "away"
    verdict, refined, alone = _refined_alone(
        tmp_path / "ws", f"mkdir -p {away} && cd {away}\nexport GREETING=hello\n{GREETS}",
        cleaned=away)
    assert ("REPRODUCED", True, False, 1) == (
        verdict["verdict"], refined.startswith('cd "$(mktemp -d)" && '),
        str(away) in refined, alone), verdict
