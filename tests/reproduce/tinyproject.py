"""A tiny installable project in a temp git repo, buildable offline by any pip.

Its ``pyproject.toml`` names an in-tree PEP 517 backend (``backend-path = ["."]``) that
writes the wheel with ``zipfile``, so ``pip install --no-index --no-build-isolation .``
works in a fresh venv without setuptools or wheel. ``make`` commits the buggy state,
``fix`` commits the fixed one; the package ``tinycalc`` has ``add`` (subtracts when buggy).
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

BACKEND = '''\
"""Build a wheel of the package next to this file (the tests' offline backend)."""
import base64
import hashlib
import os
import zipfile

NAME, VERSION = "tinycalc", "1.0"


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    here = os.path.dirname(os.path.abspath(__file__))
    base = os.path.join(here, "src") if os.path.isdir(os.path.join(here, "src")) else here
    return _wheel(wheel_directory, {NAME + "_editable.pth": (base + "\\n").encode()})


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    here = os.path.dirname(os.path.abspath(__file__))
    base = os.path.join(here, "src") if os.path.isdir(os.path.join(here, "src")) else here
    files = {}
    for root, _dirs, names in os.walk(os.path.join(base, NAME)):
        for name in names:
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as handle:
                    files[os.path.relpath(path, base).replace(os.sep, "/")] = handle.read()
    return _wheel(wheel_directory, files)


def _wheel(wheel_directory, files):
    dist = NAME + "-" + VERSION
    files[dist + ".dist-info/METADATA"] = (
        "Metadata-Version: 2.1\\nName: " + NAME + "\\nVersion: " + VERSION + "\\n").encode()
    files[dist + ".dist-info/WHEEL"] = (
        b"Wheel-Version: 1.0\\nGenerator: tiny\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append("%s,sha256=%s,%d" % (path, digest.decode(), len(data)))
    record.append(dist + ".dist-info/RECORD,,")
    files[dist + ".dist-info/RECORD"] = ("\\n".join(record) + "\\n").encode()
    filename = dist + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return filename
'''

PYPROJECT = '''\
[build-system]
requires = []
build-backend = "tinybackend"
backend-path = ["."]

[project]
name = "tinycalc"
version = "1.0"
'''

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"

TEST = '''\
from tinycalc import add


class TestAdd:
    def test_add(self):
        assert add(1, 2) == 3
'''


def git_env(home: Path) -> dict[str, str]:
    """An environment for git that ignores the user's config."""
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid",
               GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_CONFIG_NOSYSTEM="1")
    return env


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=git_env(root.parent), check=True,
                          capture_output=True, text=True).stdout.strip()


def make(root: Path, tests_dir: str = "tests", src_layout: bool = False,
         pytest_config: str = "") -> Path:
    """The project at its buggy commit (tests under ``tests_dir``; the package under
    ``src/`` with ``src_layout``; ``pytest_config`` appended to pyproject.toml)."""
    package = root / ("src" if src_layout else "") / "tinycalc"
    package.mkdir(parents=True)
    (root / "tinybackend.py").write_text(BACKEND)
    (root / "pyproject.toml").write_text(PYPROJECT + pytest_config)
    (package / "__init__.py").write_text(BUGGY)
    (root / tests_dir).mkdir()
    (root / tests_dir / "test_add.py").write_text(TEST)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "buggy")
    return root


def fix(root: Path) -> None:
    """Commit the fixed ``add``."""
    package = root / "src" / "tinycalc" if (root / "src").is_dir() else root / "tinycalc"
    (package / "__init__.py").write_text(FIXED)
    _git(root, "commit", "-qam", "fix")


def head(root: Path) -> str:
    return _git(root, "rev-parse", "HEAD")


def make_named(root: Path, name: str, src_layout: bool = True) -> Path:
    """The project under another distribution and package name ``name``, committed buggy:
    a second project (its own clone) for a batch entry to ``cd`` into."""
    make(root, src_layout=src_layout)
    base = root / "src" if src_layout else root
    (base / "tinycalc").rename(base / name)
    for rel in ("tinybackend.py", "pyproject.toml", "tests/test_add.py"):
        path = root / rel
        path.write_text(path.read_text().replace("tinycalc", name))
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "renamed")
    return root

