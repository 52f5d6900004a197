"""``orchestrator.py serve`` on a terminal: it says in words that it serves (where, how to stop
it), not that it is done, and a signal stops it cleanly."""

from __future__ import annotations

import re
import signal
import urllib.request
from pathlib import Path

import pytest

from tests.terminal import Terminal
from tests.web.workspace import env


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_serve_on_a_terminal_says_it_serves_until_stopped(tmp_path: Path,
                                                          stop: signal.Signals) -> None:
    """The first lines name the URL (which answers) and Ctrl-C; `done` only once it stopped,
    and the signal ends it with exit 0 and no traceback."""
    with Terminal(["--workspace", str(tmp_path / "ws"), "serve"], env()) as term:
        first = term.read_until(lambda text: "Ctrl-C" in text)
        url = re.search(r"http://127\.0\.0\.1:\d+/", first)
        assert url is not None, first
        assert (True, False) == (first.startswith("serving "),
                                 bool(re.search(r"\bdone\b", first)))
        with urllib.request.urlopen(url.group(0), timeout=30) as page:
            assert 200 == page.status
        term.proc.send_signal(stop)
        code, text = term.finish()
    last = text.splitlines()[-1]
    assert (0, "Traceback" in text) == (code, False)
    assert f"stopped serving {url.group(0)}; done" == last
