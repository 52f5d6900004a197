"""An outage of the PostgreSQL server is retryable: every call answers exit 3 with
``poll_after_s`` while the server is down (saying "nothing was written" only when that is
true), and the same commands carry on by themselves once it is back."""

from __future__ import annotations

import json
from pathlib import Path

from tests.contract.driver import Driver
from tests.contract.toyflow import answer as toy_answer
from tests.store.pgserver import Cluster

TICK = {"ORCHESTRATOR_PLUGINS": "tests.fleet.tickflow"}


def test_a_stopped_server_is_retryable_and_every_worker_resumes_when_it_is_back(
        tmp_path: Path, pg_cluster: Cluster) -> None:
    """Worker a holds item i0 and b holds i1; the server stops: a's feed and b's campaign
    call answer exit 3 store_unavailable with poll_after_s; the server starts again: the
    very same commands succeed (a's feed finishes its item, b carries on with its own)."""
    url = pg_cluster.create_db("outage")
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": f"i{n}", "argv": ["start", "tick", f"i{n}"]}
                                 for n in range(3)]))
    env = {**TICK, "ORCHESTRATOR_STORE": url, "ORCHESTRATOR_STORE_CONNECT_TIMEOUT": "3"}
    a = Driver(tmp_path / "A", {**env, "ORCHESTRATOR_WORKER": "a"})
    b = Driver(tmp_path / "B", {**env, "ORCHESTRATOR_WORKER": "b"})
    first = a.call(["campaign", "c", "--items", str(items)])
    assert (0, "i0") == (first.code, first.spec["campaign"]["item"]), first.stderr
    assert (0, "i1") == (lambda c: (c.code, c.spec["campaign"]["item"]))(b.call(["campaign", "c"]))
    task = first.spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    pg_cluster.stop()
    try:
        fed = a.shell(task["feed_command"])
        polled = b.call(["campaign", "c"])
        for call in (fed, polled):
            assert 3 == call.code, call.stderr
            assert "store_unavailable" == call.spec["error"]["code"]
            assert call.spec["poll_after_s"] == call.spec["error"]["poll_after_s"] > 0
            assert "nothing was written" in call.spec["error"]["hint"]
            assert "Traceback" not in call.stderr
    finally:
        pg_cluster.start_again()
    fed = a.shell(task["feed_command"])
    assert (0, "done", True) == (fed.code, fed.spec["status"], fed.spec["campaign"]["item_done"])
    polled = b.call(["campaign", "c"])
    assert (0, "i1") == (polled.code, polled.spec["campaign"]["item"]), polled.stderr
