"""Importing the refactor core stays cheap: libcst loads only when a codemod runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["analysis", "assess", "codemods", "collect", "decisions", "devices", "distribute", "errors", "fields",
           "findings", "imports", "interpreter", "junit", "lint", "preexisting", "rules", "sentinels", "summary", "testids",
           "verify"]


def test_no_libcst_or_github_at_import() -> None:
    """Every module of flow.workflows.refactor imports without pulling in libcst or PyGithub."""
    code = "import sys\n" + "".join(f"import flow.workflows.refactor.{m}\n" for m in MODULES) + (
        "print(sorted(m for m in ('libcst', 'github', 'torch') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "[]" == proc.stdout.strip()
