"""Glob matching keeps * within a segment; module names follow import roots."""

from __future__ import annotations

import pytest

from flow.workflows.targeted.paths import glob_match, module_name

GLOBS = [
    ("docker/x.py", "docker/*.py", True),
    ("docker/sub/x.py", "docker/*.py", False),
    ("miles/a/b.py", "miles/**/*.py", True),
    ("miles/b.py", "miles/**/*.py", True),
    ("a/test_x.py", "**/test_*.py", True),
    ("test_x.py", "**/test_*.py", True),
    (".github/scripts/x.py", ".github/**/*.py", True),
    ("tests/manual/a.py", "tests/manual/", True),
    ("miles_plugins/a.py", "miles/**/*.py", False),
]


@pytest.mark.parametrize("path,pattern,expected", GLOBS)
def test_glob(path, pattern, expected):
    """Globs match with shell meaning: * stays in a segment, ** spans directories."""
    assert expected == glob_match(path, pattern)


@pytest.mark.parametrize("path,roots,expected", [
    ("pkg/a.py", ["."], "pkg.a"),
    ("pkg/__init__.py", ["."], "pkg"),
    ("src/pkg/a.py", ["src"], "pkg.a"),
    ("tests/fast-gpu/a.py", ["."], None),
    ("README.md", ["."], None),
])
def test_module_name(path, roots, expected):
    """A .py file under an import root has a dotted name; others have none."""
    assert expected == module_name(path, roots)
