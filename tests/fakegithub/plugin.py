"""pytest plugin: `fake_github` (a started FakeGitHub, stopped after the test), plus `client`
(a GitHubClient pointed at it) and `sleeps` (the backoff waits that client asked for).

Registered for every test by `pytest_plugins = ["tests.fakegithub.plugin"]` in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.fakegithub.server import FakeGitHub

if TYPE_CHECKING:  # PyGithub is imported only by the tests that ask for `client`
    from flow.github.client import GitHubClient


@pytest.fixture
def fake_github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    """A fake GitHub on 127.0.0.1 with the API URL and token exported the way connect() reads them."""
    fake = FakeGitHub().start()
    monkeypatch.setenv("ORCHESTRATOR_GITHUB_API", fake.base_url)
    monkeypatch.setenv("GITHUB_TOKEN", fake.token)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def sleeps() -> list[float]:
    """Backoff waits the `client` asked for (recorded, not slept)."""
    return []


@pytest.fixture
def client(fake_github: FakeGitHub, sleeps: list[float]) -> GitHubClient:
    """A client for the fake server with short timeouts and recorded (not real) backoff sleeps."""
    from flow.github.client import ClientSettings, connect

    settings = ClientSettings(timeout=2, attempts=3, backoff=0.5, seconds_between_writes=None)
    return connect(settings=settings, sleep=sleeps.append)
