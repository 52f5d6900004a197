"""Fixtures for the GitHub adapter tests: the fake server and a client pointed at it."""

from __future__ import annotations

import pytest

from flow.github.client import ClientSettings, GitHubClient, connect
from tests.fakegithub.plugin import fake_github  # noqa: F401  (the root conftest may register the plugin instead)
from tests.fakegithub.server import FakeGitHub


@pytest.fixture
def sleeps() -> list[float]:
    """Backoff waits the client asked for (recorded, not slept)."""
    return []


@pytest.fixture
def client(fake_github: FakeGitHub, sleeps: list[float]) -> GitHubClient:  # noqa: F811
    """A client for the fake server with short timeouts and recorded (not real) backoff sleeps."""
    settings = ClientSettings(timeout=2, attempts=3, backoff=0.5, seconds_between_writes=None)
    return connect(settings=settings, sleep=sleeps.append)
