"""The PyGithub floor in pyproject.toml stays at what the code needs, and .ci/pygithub-floor tests it."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_floor_is_at_least_what_the_code_needs() -> None:
    """withLazy and mark_ready_for_review arrived in PyGithub 2.6: the floor may not be lower."""
    floor = re.search(r'"PyGithub>=([0-9.]+)"', (ROOT / "pyproject.toml").read_text())
    assert floor is not None
    assert tuple(int(x) for x in floor.group(1).split(".")) >= (2, 6)


def test_the_floor_script_runs_the_github_tests() -> None:
    """The CI step reads the floor from pyproject and runs the GitHub-facing test folders."""
    script = ROOT / ".ci" / "pygithub-floor"
    text = script.read_text()
    assert (True, True, True) == (os.access(script, os.X_OK), 'PyGithub>=' in text,
                                  "tests/github tests/sidecars tests/ci" in text)
