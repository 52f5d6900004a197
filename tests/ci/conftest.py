"""The ci workflow's tests share one harness: a fresh workspace talking to the fake GitHub
server with fast retries, driven in-process (the contract suite covers the process boundary)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.driver import Driver, InProcess
from tests.fakegithub import FakeGitHub


@pytest.fixture
def drv(fake_github: FakeGitHub, tmp_path: Path) -> Driver:
    """A harness over a fresh workspace, talking to the fake server with fast retries."""
    return InProcess(tmp_path / "ws", {"ORCHESTRATOR_GITHUB_BACKOFF": "0.01"})
