"""The page says when what it shows is no longer live: a poll that never gets an answer is
given up after the page's timeout (``ORCHESTRATOR_POLL_TIMEOUT_S``) and a poll answered with
an error is not taken; either way that part is marked stale and the header's flag reads
"stale, reconnecting" (saying why in its title) instead of "live", and once a poll answers
again the flag is "live" and the part follows its flow. The never-answering server is a real
socket server that reads the request and keeps the connection open; the browser's poll is
sent to it by a Playwright route. Also: the page's icon is served, not a 404."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_dashboard import _until
from tests.web.workspace import call, serving


@pytest.fixture
def silent_server() -> Iterator[tuple[str, list[bytes]]]:
    """A server that accepts every connection, reads the request and never answers; its URL
    and the requests it read."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.settimeout(0.2)  # the loop below looks at ``done`` that often
    held: list[socket.socket] = []
    asked: list[bytes] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)
            conn.settimeout(1)
            try:
                asked.append(conn.recv(65536))
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", asked
    finally:
        done.set()
        thread.join(timeout=10)
        sock.close()
        for conn in held:
            conn.close()


def _flag(page: Any) -> tuple[str, str, str]:
    return (page.inner_text("#live"), str(page.get_attribute("#live", "class")),
            str(page.get_attribute("#live", "title")))


def test_a_poll_that_never_answers_marks_the_part_stale_until_one_does(
        tmp_path: Path, page: Any, silent_server: tuple[str, list[bytes]]) -> None:
    root = tmp_path / "agent_space"
    flow_id = call(root, "start", "notes", "watched")["flow_id"]
    silent, asked = silent_server
    with serving(root, ORCHESTRATOR_POLL_TIMEOUT_S="1") as (url, _):
        page.goto(f"{url}flow/{flow_id}")
        _until(page, lambda: page.get_attribute("#flowbody", "data-polled") is not None)
        fresh = (_flag(page)[:2], page.get_attribute("#flowbody", "class"))
        page.route("**/parts/flow/**", lambda route: route.continue_(
            url=silent + route.request.url.split(url.rstrip("/"), 1)[1]))
        _until(page, lambda: _flag(page)[0] != "live", 20)
        stale = (_flag(page), page.get_attribute("#flowbody", "class"))
        page.unroute("**/parts/flow/**")
        _until(page, lambda: _flag(page)[0] == "live", 20)
        back = (_flag(page)[:2], page.get_attribute("#flowbody", "class"))
    assert ((("live", "live"), None), True) == (fresh, any(b"/parts/flow/" in a for a in asked))
    assert ("stale, reconnecting", "live off", True, "stale") == (
        stale[0][0], stale[0][1], "had no answer in 1 s" in stale[0][2], stale[1])
    assert (("live", "live"), "") == back


def test_a_poll_answered_with_an_error_is_stale_too(tmp_path: Path, page: Any) -> None:
    """The list's poll answered 503 (a store that does not answer): stale, with the reason;
    the rows it showed stay as they were."""
    root = tmp_path / "agent_space"
    flow_id = call(root, "start", "notes", "listed")["flow_id"]
    with serving(root) as (url, _):
        page.goto(url)
        _until(page, lambda: page.get_attribute("#listing", "data-polled") is not None)
        page.route("**/parts/flows*", lambda route: route.fulfill(
            status=503, body="the store did not answer", content_type="text/plain"))
        _until(page, lambda: _flag(page)[0] != "live", 20)
        flag = _flag(page)
        rows = page.locator(f"tr.flow[data-flow='{flow_id}']").count()
    assert ("stale, reconnecting", True, 1) == (flag[0], "was answered 503" in flag[2], rows)


def test_a_page_that_polls_nothing_shows_no_live_flag(tmp_path: Path, page: Any) -> None:
    with serving(tmp_path / "agent_space") as (url, _):
        page.goto(f"{url}nowhere")
        hidden = page.locator("#live").is_hidden()
    assert hidden is True


def test_the_pages_icon_is_served(tmp_path: Path, page: Any) -> None:
    """``/favicon.ico`` (what a browser asks for by itself) and the page's icon link answer
    with our SVG icon."""
    import xml.etree.ElementTree as ET

    with serving(tmp_path / "agent_space") as (url, _):
        page.goto(url)
        link = page.get_attribute("link[rel=icon]", "href")
        got = page.request.get(url + "favicon.ico")
        body, kind, status = got.body(), got.headers["content-type"], got.status
    root = ET.fromstring(body)
    assert ("/favicon.ico", 200, "image/svg+xml", "{http://www.w3.org/2000/svg}svg") == (
        link, status, kind, root.tag)


def test_the_poll_period_and_timeout_settings_fall_back_to_their_defaults(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """ORCHESTRATOR_POLL_PERIOD_S and ORCHESTRATOR_POLL_TIMEOUT_S take a number of seconds;
    unset, not a number, zero or negative, or an hour and more give the defaults (2 s, 10 s)."""
    from flow.web.app import poll_period_s, poll_timeout_s

    seen = []
    for raw in ("", "0.5", "bogus", "0", "-1", "3600"):
        monkeypatch.setenv("ORCHESTRATOR_POLL_PERIOD_S", raw)
        monkeypatch.setenv("ORCHESTRATOR_POLL_TIMEOUT_S", raw)
        seen.append((poll_period_s(), poll_timeout_s()))
    assert [(2.0, 10.0), (0.5, 0.5), (2.0, 10.0), (2.0, 10.0), (2.0, 10.0), (2.0, 10.0)] == seen
