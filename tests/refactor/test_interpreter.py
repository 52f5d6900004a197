"""The test interpreter rule: ORCHESTRATOR_PYTHON, the checkout's environment, the active one, ours."""

from __future__ import annotations

import sys
from pathlib import Path

from flow.workflows.refactor.interpreter import choose_python


def _env(root: Path) -> Path:
    python = root / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    return python


def test_the_rule_in_order(tmp_path: Path) -> None:
    """Each source wins over the ones after it; with none, the orchestrator's own interpreter."""
    checkout, active = tmp_path / "pytorch", tmp_path / "active"
    checkout.mkdir()
    assert sys.executable == choose_python({}, checkout)[0]
    active_python = _env(active)
    assert (str(active_python), "the active environment VIRTUAL_ENV") == choose_python({"VIRTUAL_ENV": str(active)}, checkout)
    own = _env(checkout / ".venv")
    assert str(own) == choose_python({"VIRTUAL_ENV": str(active)}, checkout)[0]
    assert ("/opt/py", "set by ORCHESTRATOR_PYTHON") == choose_python({"ORCHESTRATOR_PYTHON": "/opt/py", "VIRTUAL_ENV": str(active)}, checkout)


def test_a_non_executable_candidate_is_passed_over(tmp_path: Path) -> None:
    """A checkout folder named venv without a runnable python is not taken for an environment."""
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin" / "python").write_text("")
    assert sys.executable == choose_python({}, tmp_path)[0]
