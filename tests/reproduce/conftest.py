"""Shared helpers: real subprocess runs, a 127.0.0.1 HTTP server, tiny wheels, and the
project environment every reproduce test's flow runs its reproducer with."""
from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests import projectenv

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "reproduce"
REPO = Path(__file__).resolve().parents[2]
PYTHON = sys.executable


def run(argv: list[str] | str, cwd: str | Path | None = None, *, shell: bool = False,
        env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run a command, return (exit code, stdout+stderr)."""
    proc = subprocess.run(argv, cwd=cwd, shell=shell, env=env, capture_output=True, text=True,
                          timeout=300)
    return proc.returncode, proc.stdout + proc.stderr


def build_wheel(folder: Path, name: str, version: str,
                extra: dict[str, str] | None = None) -> Path:
    """Write a minimal pure-python wheel ``name==version`` (with a valid RECORD) into
    ``folder``; ``extra`` adds files ``{path in the wheel: text}``."""
    dist = f"{name}-{version}"
    files = {
        f"{name}/__init__.py": f'__version__ = "{version}"\n'.encode(),
        **{path: text.encode() for path, text in (extra or {}).items()},
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    files[f"{dist}.dist-info/RECORD"] = ("\n".join(record) + "\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel


@pytest.fixture
def git_env(tmp_path: Path) -> dict[str, str]:
    """An environment for git that ignores the user's config."""
    import os

    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", GIT_CONFIG_GLOBAL=str(tmp_path / "gitconfig"),
               GIT_CONFIG_NOSYSTEM="1")
    return env


@pytest.fixture(scope="session")
def project_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A project's interpreter with pytest, pip and setuptools and no other tool of ours
    (``tests.projectenv``), one per worker."""
    venv = tmp_path_factory.mktemp("project-env") / "venv"
    return str(projectenv.make(venv, ["pytest", "pip", "setuptools"]))


@pytest.fixture(autouse=True)
def _reproduce_with_the_project_python(project_python: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The flows these tests start run reproducers with ``project_python``, as a user's do
    with their project's (``ORCHESTRATOR_REPRODUCE_PYTHON``); a test that sets its own, or
    removes it to pin the default (this interpreter), wins. The contract suite and the
    README's example run with the default."""
    monkeypatch.setenv("ORCHESTRATOR_REPRODUCE_PYTHON", project_python)
