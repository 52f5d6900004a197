"""The dashboard's test set-up: a workspace of real flows, ``orchestrator.py serve`` over it,
and Debian's headless Chromium driven by Playwright (no browser is downloaded): one Chromium
process per test session (per xdist worker), which each test module's Playwright connects to
over the DevTools protocol. Without Chromium the tests are skipped with the reason on a
developer's machine and fail under CI (``CI`` set), where ``.ci/test`` installs it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.workspace import build, serving

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    """The system Chromium (``ORCHESTRATOR_TEST_CHROMIUM`` overrides the search)."""
    given = os.environ.get("ORCHESTRATOR_TEST_CHROMIUM")
    if given:
        return given
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


def _need(what: str, hint: str) -> None:
    message = f"{what} is missing: {hint}"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="session")
def chromium(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One headless Chromium for the worker: the DevTools WebSocket URL it listens on.

    Started once (its start is most of what a module's own browser cost), with a profile of
    its own and no background networking (this machine's network is closed)."""
    import subprocess

    import importlib.util

    if importlib.util.find_spec("playwright") is None:  # the tests drive it through Playwright
        _need("playwright", "pip install -e '.[test]'")
    path = chromium_path()
    if path is None:
        _need("Chromium", "apt-get install -y chromium")
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen(
        [path, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:  # it names its endpoint on stderr once it listens
        seen.append(line)
        if line.startswith("DevTools listening on "):
            break
    else:
        pytest.fail(f"Chromium ended without listening: {''.join(seen)[-2000:]}")
    url = line.split(" on ", 1)[1].strip()
    import threading

    threading.Thread(target=proc.stderr.read, daemon=True).start()  # keep its pipe drained
    try:
        yield url
    finally:
        # Chromium's singleton socket lives in a folder of its own under TMPDIR, which a
        # terminated browser leaves behind: the profile's link names it
        socket = profile / "SingletonSocket"
        folder = socket.resolve().parent if socket.is_symlink() else None
        proc.terminate()
        proc.wait(timeout=60)
        if folder is not None and folder.name.startswith("org.chromium.Chromium."):
            import shutil

            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Any]:
    """The worker's Chromium as seen by one test module. Playwright is started per module,
    not per session: its sync API keeps an asyncio loop running in this thread while it is
    open, and later tests in the same worker that run their own loop (the MCP client's)
    would fail with "Already running asyncio"."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.connect_over_cdp(chromium)
        yield b
        b.close()  # disconnects; the worker's Chromium goes on for the next module


@pytest.fixture(scope="session")
def real_flows(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A workspace holding the README's main job and flows waiting on an agent and a person,
    plus hostile text from a feed and from a command line."""
    root = tmp_path_factory.mktemp("dashboard") / "agent_space"
    return root, build(root)


@pytest.fixture(scope="session")
def served(real_flows: tuple[Path, dict[str, str]]) -> Iterator[tuple[str, dict[str, Any]]]:
    root, _ = real_flows
    from tests.web.workspace import FAKE_TOKEN

    with serving(root, GITHUB_TOKEN=FAKE_TOKEN) as live:
        yield live


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page that records every dialog (an alert would mean a script of the data ran)."""
    context = browser.new_context()
    pg = context.new_page()
    pg.dialogs = []  # type: ignore[attr-defined]
    pg.on("dialog", lambda d: (pg.dialogs.append(d.message), d.dismiss()))  # type: ignore[attr-defined]
    yield pg
    context.close()
