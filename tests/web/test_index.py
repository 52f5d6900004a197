"""The dashboard's index of flows and its safety, over real flows, without a browser: a list
asked twice with nothing changed reads no flow file and answers 304 to the page's ETag; only
the flow that moved is read again; Host names it does not serve get 4xx; a state naming a
file outside the workspace never has it read or shown."""

from __future__ import annotations

import json
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.web.workspace import ROOT, SCRIPT, call, env


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("index") / "agent_space"
    for name in ("one", "two", "three"):
        assert "need_agent" == call(root, "start", "notes", name)["status"]
    return root


def _client(root: Path, host: str = "127.0.0.1", **kw: Any) -> Any:
    from starlette.testclient import TestClient

    from flow.web.app import create_app

    return TestClient(create_app(root, **kw), base_url=f"http://{host}")


def _find_index(app: Any) -> Any:
    """The FlowIndex the app holds (the Starlette app sits under two ASGI wrappers)."""
    seen = [app]
    while seen:
        obj = seen.pop()
        state = getattr(obj, "state", None)
        if state is not None and hasattr(state, "index"):
            return state.index
        for cell in getattr(obj, "__closure__", None) or ():
            seen.append(cell.cell_contents)
    raise AssertionError("no index found")


def test_a_second_refresh_with_nothing_changed_reads_no_flow_file(notes: Path) -> None:
    from flow.web.index import FlowIndex
    from flow.web.source import FolderSource

    index = FlowIndex(notes, FolderSource(notes))
    index.refresh()
    first, generation = index.reads, index.generation
    changed = index.refresh()
    assert (False, first, generation, 3) == (changed, index.reads, index.generation,
                                             len(index.rows()))
    moved = call(notes, "start", "notes", "four")["flow_id"]
    assert index.refresh() is True
    assert (first + 3, generation + 1) == (index.reads, index.generation)  # state, audit, error
    assert moved in {r["flow_id"] for r in index.rows()}


def test_the_list_answers_304_to_an_unchanged_etag_and_reads_nothing(notes: Path) -> None:
    client = _client(notes)
    first = client.get("/parts/flows")
    index = _find_index(client.app)
    reads = index.reads
    index.checked = 0.0  # the next request revalidates at once
    again = client.get("/parts/flows", headers={"If-None-Match": first.headers["etag"]})
    assert (200, 304, b"", reads) == (first.status_code, again.status_code, again.content,
                                      index.reads)


def test_another_host_name_is_refused(notes: Path) -> None:
    """A DNS-rebinding page reaches the server under its own name: 421, no flow shown."""
    evil = _client(notes, host="rebind.example")
    answers = [evil.get(p) for p in ("/", "/parts/flows", "/static/app.js")]
    local = [_client(notes, host=h).get("/").status_code for h in ("127.0.0.1:8000",
                                                                  "localhost", "[::1]:80")]
    named = _client(notes, host="box.lan", hosts=("box.lan",)).get("/").status_code
    assert ([421] * 3, [200] * 3, 200) == ([a.status_code for a in answers], local, named)
    assert all(b"need_agent" not in a.content and b"notes" not in a.content for a in answers)


def test_serve_on_every_address_warns_on_stderr(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "--workspace", str(tmp_path), "serve",
                             "--host", "0.0.0.0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env(), cwd=ROOT, text=True)
    line = ""
    try:
        assert proc.stdout is not None and proc.stderr is not None
        printed = proc.stdout.readline()  # serving: anything it warns of is written by now
        ready, _, _ = select.select([proc.stderr], [], [], 5)
        line = proc.stderr.readline() if ready else ""
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert ("{", True) == (printed[:1],
                           "--host 0.0.0.0 opens this read-only page to the network" in line)


def test_a_state_naming_a_file_outside_the_workspace_is_never_shown(tmp_path: Path) -> None:
    """A refactor flow's ``data.file`` (and a job's log) pointed at a file outside the
    workspace: the page shows neither, though ``original/`` holds a copy to diff against."""
    root = tmp_path / "agent_space"
    secret = tmp_path / "shadow"
    secret.write_text("root:SECRET-HASH-LINE:19000:0:99999:7:::\n")
    flow_id = call(root, "start", "notes", "victim")["flow_id"]
    state_file = root / flow_id / "flow_state.json"
    raw = json.loads(state_file.read_text())
    raw["workflow"] = "refactor"
    raw["data"] = {"file": str(secret), "rel": "shadow"}
    raw["jobs"] = {"j-v1-x": {"job_id": "j-v1-x", "key": "x", "phase": "p", "visit": 1,
                              "argv": ["true"], "log_file": str(secret), "timeout_s": 60.0,
                              "started_at": 1.0, "deadline_at": 61.0, "result": None}}
    state_file.write_text(json.dumps(raw))
    (root / flow_id / "original").mkdir()
    (root / flow_id / "original" / "shadow").write_text("root:old:::\n")
    client = _client(root)
    pages = [client.get(f"/flow/{flow_id}"), client.get(f"/parts/flow/{flow_id}"),
             client.get("/parts/flows"), client.get(f"/log/j-v1-x/{flow_id}")]
    assert [200, 200, 200, 404] == [p.status_code for p in pages]
    assert [False] * 4 == ["SECRET-HASH" in p.text for p in pages]
