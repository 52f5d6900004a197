"""pytest plugin: the `fake_github` fixture (a started FakeGitHub, stopped after the test).

Register with `pytest_plugins = ["tests.fakegithub.plugin"]` in the root conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakegithub.server import FakeGitHub


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
