"""Stage 3 through the ``pytorch-xpu`` profile, for real: a ``--stage auto`` run whose
Stage 1 installs tiny nightly wheels from a 127.0.0.1 index into a throwaway venv, whose
Stage 2 build task is answered ok, and whose Stage 3 downloads a CI artifact (Path A,
intel/torch-xpu-ops on the fake GitHub) holding a tiny torch wheel built from a commit
that reached the tree's ``origin`` only after the tree was prepared: the stack is
uninstalled, the CI wheel force-installed, the tree fetched and detached at the wheel's
``git_version``, and the reproducer (which fails only under the CI wheel) run.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub
from tests.reproduce.conftest import build_wheel
from tests.reproduce.test_xpu_install import _clean, _env, _index, venv_python  # noqa: F401

CI_TORCH = "2.10.0a0+gitc1"
COMMAND = ('python -c "import sys, torch; print(\'torch\', torch.__version__); '
           f'sys.exit(1 if torch.__version__ == \'{CI_TORCH}\' else 0)"')
PATTERN = f"torch {CI_TORCH}"


def _git(env: dict[str, str], *argv: str) -> str:
    return subprocess.run(["git", *argv], capture_output=True, text=True, env=env, check=True,
                          timeout=60).stdout.strip()


def _trees(tmp_path: Path, env: dict[str, str]) -> tuple[Path, Path]:
    """``upstream`` (one commit on main) and ``pytorch``, its clone (remote ``origin``)."""
    upstream, tree = tmp_path / "upstream", tmp_path / "pytorch"
    _git(env, "init", "-q", "-b", "main", str(upstream))
    (upstream / "README").write_text("trunk\n")
    _git(env, "-C", str(upstream), "add", "README")
    _git(env, "-C", str(upstream), "commit", "-q", "-m", "trunk")
    _git(env, "clone", "-q", str(upstream), str(tree))
    return upstream, tree


def _ci_commit(upstream: Path, env: dict[str, str]) -> str:
    """A commit on upstream's ``ci`` branch (the tree has not fetched it); its sha."""
    _git(env, "-C", str(upstream), "checkout", "-q", "-b", "ci")
    (upstream / "README").write_text("ci\n")
    _git(env, "-C", str(upstream), "commit", "-q", "-am", "ci")
    sha = _git(env, "-C", str(upstream), "rev-parse", "HEAD")
    _git(env, "-C", str(upstream), "checkout", "-q", "main")
    return sha


def _ci_wheel(folder: Path, sha: str) -> Path:
    return build_wheel(folder, "torch", CI_TORCH, {
        "torch/__init__.py": "from torch import version\n__version__ = version.__version__\n",
        "torch/version.py": f'__version__ = "{CI_TORCH}"\ngit_version = "{sha}"\n'})


def _torch_in(python: Path) -> str:
    code = "import importlib.metadata as m; print(m.version('torch'))"
    return subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip()


def _feed_build(drv: Driver, spec: dict[str, Any]) -> dict[str, Any]:
    """Answer Stage 2's build task as the harness would after a successful build."""
    assert ("need_agent", "source_build") == (spec["status"], spec.get("stage")), spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps({"ok": True}))
    call = drv.shell(task["feed_command"])
    assert call.spec is not None, call.stderr
    return call.spec


def test_stage3_installs_the_ci_wheel_and_detaches_the_tree_at_its_commit(
        tmp_path: Path, venv_python: Path, fake_github: FakeGitHub,  # noqa: F811
        git_env: dict[str, str]) -> None:
    """pytorch-xpu auto: stages 1 and 2 pass; Stage 3 force-installs the CI artifact's torch
    into the named venv, fetches origin and detaches the tree at the wheel's git_version,
    and the reproducer failing only there is REPRODUCED(ci_env, base=origin/main)."""
    _clean(venv_python)
    upstream, tree = _trees(tmp_path, git_env)
    with _index(tmp_path, lands=True) as index:
        drv = Driver(tmp_path / "ws", {**_env(index.url, venv_python),
                                       "ORCHESTRATOR_GITHUB_API": fake_github.base_url,
                                       "GITHUB_TOKEN": fake_github.token})
        first = drv.call(["reproduce", "--profile", "pytorch-xpu", "--stage", "auto",
                          "--pytorch-dir", str(tree), "--command", COMMAND,
                          "--failure-pattern", PATTERN])
        assert first.spec is not None, first.stderr
        sha = _ci_commit(upstream, git_env)  # lands upstream after the tree was prepared
        repo = fake_github.repo("intel/torch-xpu-ops")
        run = repo.add_run(repo.add_workflow("nightly", ".github/workflows/nightly_ondemand.yml"),
                           sha, head_branch="main", jobs=[])
        repo.add_job(run, "test", "success", log="")
        wheel = _ci_wheel(tmp_path / "ci-wheels", sha)
        run.add_artifact("Torch-XPU-Wheel-1", {f"dist/{wheel.name}": wheel.read_bytes()})
        spec = _feed_build(drv, first.spec)
    verdict = spec.get("verdict") or {}
    assert ("done", "REPRODUCED", "ci_env", "origin/main") == (
        spec["status"], verdict.get("verdict"), verdict.get("stage"), verdict.get("base")), spec
    assert (sha, CI_TORCH) == (_git(git_env, "-C", str(tree), "rev-parse", "HEAD"),
                               _torch_in(venv_python))
    report = spec["report"]
    assert CI_TORCH == report["installed_versions"].get("torch")
    assert any(sha in note and "detached" in note for note in report["notes"])
