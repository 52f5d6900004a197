"""One flow's page is rendered once per saved version of the flow, on both stores: a poll
sending back the ETag it holds is answered 304 from the flow's version alone (no template
rendered, counted), a change of the flow renders it once more under a new ETag, and a page
rendered again later with nothing changed is byte for byte the same (no "3 s ago" in it), so
its ETag holds and the poll keeps getting 304s. Real flows made by the orchestrator, a real
PostgreSQL store; no browser."""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.web.workspace import call, feed


def _client(root: Path, url: str | None) -> Any:
    from starlette.testclient import TestClient

    from flow.web.app import create_app

    return TestClient(create_app(root, url), base_url="http://127.0.0.1")


def _state(app: Any) -> Any:
    """The Starlette app's state (it sits under two ASGI wrappers)."""
    seen = [app]
    while seen:
        obj = seen.pop()
        state = getattr(obj, "state", None)
        if state is not None and hasattr(state, "pages"):
            return state
        for cell in getattr(obj, "__closure__", None) or ():
            seen.append(cell.cell_contents)
    raise AssertionError("no app state found")


def _later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    """The page's clock (``flow.cli.inbox``'s and the jobs' ``time.time``) ``seconds`` on."""
    import flow.cli.inbox as inbox
    import flow.cli.jobstate as jobstate

    fake = SimpleNamespace(**{k: getattr(time, k) for k in dir(time) if not k.startswith("_")})
    fake.time = lambda: time.time() + seconds
    monkeypatch.setattr(inbox, "time", fake)
    monkeypatch.setattr(jobstate, "time", fake)


@pytest.fixture(params=["file", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str | None]:
    """A workspace (and, for ``postgres``, a fresh database of the session's cluster)."""
    url = request.getfixturevalue("pg_url") if request.param == "postgres" else None
    return tmp_path / "agent_space", url


def test_a_poll_with_the_etag_held_is_a_304_with_nothing_rendered(
        store: tuple[Path, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    root, url = store
    extra = {"ORCHESTRATOR_STORE": url} if url else {}
    spec = call(root, "start", "notes", "versioned", **extra)
    assert "need_agent" == spec["status"], spec
    flow_id = spec["flow_id"]
    client = _client(root, url)
    state = _state(client.app)

    page = client.get(f"/flow/{flow_id}")
    held = re.search(r'data-etag="W/&#34;(\w+)&#34;"', page.text)
    assert (200, True, True) == (page.status_code, held is not None,
                                 'id="badge">agent</span>' in page.text)
    tag = f'W/"{held.group(1)}"' if held else ""
    rendered = (state.pages.renders, state.renders["flowbody.html"])
    held = state.pages.held_answers
    polls = [client.get(f"/parts/flow/{flow_id}", headers={"If-None-Match": tag})
             for _ in range(5)]
    # each answered on the event loop from the version read there, no worker thread
    assert ([304] * 5, [b""] * 5, rendered, held + 5) == (
        [p.status_code for p in polls], [p.content for p in polls],
        (state.pages.renders, state.renders["flowbody.html"]), state.pages.held_answers)

    # the page rendered again half an hour later (its cache aged out), nothing changed:
    # the same bytes, the same ETag, still a 304
    monkeypatch.setattr("flow.web.pagecache.MAX_AGE_S", 0.0)
    _later(monkeypatch, 1800)
    again = client.get(f"/parts/flow/{flow_id}", headers={"If-None-Match": tag})
    assert (304, rendered[0] + 1) == (again.status_code, state.pages.renders)
    monkeypatch.undo()

    # the flow moves on: one render, a new ETag, and the page shows the change
    done = feed(spec["tasks"][0], {"note": "it moved", "link": "https://example.com/n"},
                **extra)
    assert "done" == done["status"], done
    moved = client.get(f"/parts/flow/{flow_id}", headers={"If-None-Match": tag})
    count = state.pages.renders
    settled = [client.get(f"/parts/flow/{flow_id}",
                          headers={"If-None-Match": moved.headers["etag"]}) for _ in range(3)]
    assert (200, True, True) == (moved.status_code, moved.headers["etag"] != tag,
                                 'id="badge">done' in moved.text)
    assert ([304] * 3, count) == ([s.status_code for s in settled], state.pages.renders)


def test_a_lost_session_of_the_event_loop_is_opened_again_and_no_poll_fails(tmp_path: Path, pg_url: str) -> None:
    """The PostgreSQL store's version is read on the event loop over a session of its own.
    That session ended by the server (as a restart or a dropped connection would) costs no
    poll an error: the poll that finds it gone is answered from a worker thread, the next
    opens a new session and is answered on the loop again."""
    import psycopg

    root = tmp_path / "agent_space"
    spec = call(root, "start", "notes", "session", ORCHESTRATOR_STORE=pg_url)
    flow_id = spec["flow_id"]
    with _client(root, pg_url) as client:  # one event loop for every request, as a server has
        state = _state(client.app)
        tag = client.get(f"/parts/flow/{flow_id}").headers["etag"]

        def poll() -> int:
            return client.get(f"/parts/flow/{flow_id}", headers={"If-None-Match": tag}).status_code

        assert (304, 1) == (poll(), state.pages.held_answers)
        with psycopg.connect(pg_url, autocommit=True) as admin:  # as an operator finds it
            ended = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                "application_name = 'skill-orchestrator dashboard' AND "
                "datname = current_database()").fetchall()
        assert ended == [(True,)]
        after = [poll() for _ in range(3)]
    assert ([304, 304, 304], 3) == (after, state.pages.held_answers)


def test_the_list_rendered_again_with_nothing_changed_keeps_its_etag(
        store: tuple[Path, str | None], monkeypatch: pytest.MonkeyPatch) -> None:
    """The list is rendered again each minute (whether a flow is stuck moves with the clock);
    with nothing changed it is the same bytes, so the poll's ETag still answers 304."""
    root, url = store
    extra = {"ORCHESTRATOR_STORE": url} if url else {}
    for name in ("one", "two"):
        assert "need_agent" == call(root, "start", "notes", name, **extra)["status"]
    client = _client(root, url)
    state = _state(client.app)
    first = client.get("/parts/flows")
    before = state.renders["listing.html"]
    _later(monkeypatch, 90)
    monkeypatch.setattr("flow.web.app.time", SimpleNamespace(time=lambda: time.time() + 90))
    again = client.get("/parts/flows", headers={"If-None-Match": first.headers["etag"]})
    assert (200, 304, before + 1) == (first.status_code, again.status_code,
                                      state.renders["listing.html"])


def test_a_running_jobs_log_moving_is_a_new_version(tmp_path: Path) -> None:
    """The page shows a running job's log tail: its log growing renders the page again,
    though the flow's own files did not move."""
    from tests.web.workspace import start_slow_job, stop_jobs

    root = tmp_path / "agent_space"
    source = tmp_path / "slow"
    source.mkdir()
    flow_id = start_slow_job(root, source)
    try:
        client = _client(root, None)
        tags = []
        deadline = time.monotonic() + 60
        while len(set(tags)) < 3 and time.monotonic() < deadline:
            got = client.get(f"/parts/flow/{flow_id}")
            assert 200 == got.status_code
            tags.append(got.headers["etag"])
            time.sleep(0.2)
        assert len(set(tags)) >= 3, "the page never followed the job's log"
    finally:
        stop_jobs(root, flow_id)


def test_a_missing_flow_is_still_the_404_page(tmp_path: Path) -> None:
    client = _client(tmp_path, None)
    assert [404, 404] == [client.get(p).status_code for p in ("/flow/notes/none",
                                                              "/parts/flow/notes/none")]
