"""A git put first on a call's PATH: a shell script whose text the test gives (``{git}`` in
it names the real git, which it ends by running), for tests that need a git read slow, late
or held at a moment of their choosing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REAL_GIT = shutil.which("git") or "/usr/bin/git"


def wrapped_path(bin_dir: Path, script: str, path: str) -> str:
    """Write ``script`` as ``bin_dir/git`` (executable); ``path`` with ``bin_dir`` first."""
    bin_dir.mkdir()
    (bin_dir / "git").write_text(script.format(git=REAL_GIT))
    (bin_dir / "git").chmod(0o755)
    return f"{bin_dir}{os.pathsep}{path}"
