"""Importing the pure parts, and the ci workflow itself, must not import PyGithub (a --resume or --feed stays fast)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("module", ["flow.github", "flow.github.errors", "flow.github.models", "flow.github.remote",
                                    "flow.workflows.ci", "flow.workflows.ci.classify", "flow.workflows.ci.patterns", "flow.workflows.ci.logs",
                                    "flow.workflows.ci.decide", "flow.workflows.ci.required", "flow.workflows.ci.feeds", "flow.workflows.ci.text", "flow.workflows.ci.declaration",
                                    "flow.github.access", "flow.github.trouble", "flow.workflows.review_queue.declaration",
                                    "flow.workflows.ingest.declaration"])
def test_pure_modules_do_not_import_pygithub(module: str) -> None:
    """`github` is absent from sys.modules after importing the module in a fresh interpreter."""
    code = f"import sys, {module}; print('github' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "False" == out.stdout.strip()
