"""Shared helpers: real subprocess runs, a 127.0.0.1 HTTP server, tiny wheels."""
from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

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
