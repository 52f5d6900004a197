"""Statements on the PostgreSQL store run under a statement_timeout bounded by the call's
foreground budget: a save stuck behind another session's row lock ends with a clear JSON
error within the budget, nothing written, and goes through once the other session ends."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psycopg

from tests.contract.driver import Driver
from tests.contract.scenarios import TOY


def _pending(drv: Driver) -> dict:
    spec = drv.call(TOY.start).spec
    while spec["status"] not in {"need_agent", "waiting"}:
        spec = drv.step(spec, TOY).spec
    return spec


def test_a_save_behind_another_sessions_row_lock_ends_within_the_budget(
        tmp_path: Path, pg_url: str) -> None:
    """Another session holds the flow's row (SELECT ... FOR UPDATE, a long transaction): a
    feed with a 3 s budget answers store_timeout (exit 3) in about that time, not a
    traceback and not a wait without end; the row is byte-identical; after the other
    session ends, the same feed is applied."""
    drv = Driver(tmp_path / "ws", {**TOY.env, "ORCHESTRATOR_STORE": pg_url,
                                   "ORCHESTRATOR_FOREGROUND_S": "3"})
    spec = _pending(drv)
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(TOY.answer(task)))
    with psycopg.connect(pg_url) as other:
        before = bytes(other.execute("SELECT state FROM flows WHERE flow_id = %s FOR UPDATE",
                                     (spec["flow_id"],)).fetchone()[0])
        began = time.monotonic()
        stuck = drv.shell(task["feed_command"])
        took = time.monotonic() - began
        assert (3, "store_timeout") == (stuck.code, stuck.spec["error"]["code"]), stuck.stderr
        assert "foreground budget" in stuck.spec["error"]["message"]
        assert "ORCHESTRATOR_FOREGROUND_S" in stuck.spec["error"]["hint"]
        assert "Traceback" not in stuck.stderr
        other.rollback()
    with psycopg.connect(pg_url) as conn:
        after = bytes(conn.execute("SELECT state FROM flows WHERE flow_id = %s",
                                   (spec["flow_id"],)).fetchone()[0])
    assert before == after
    began = time.monotonic()
    again = drv.shell(task["feed_command"])
    baseline = time.monotonic() - began  # a whole call here: start-up, load, save, step
    assert 0 == again.code, again.stderr
    # The stuck call took the budget, the floor left for recording the error, and a call's
    # own cost (measured on this machine now: the test machines are shared).
    assert took < 3 + 1 + 2 * baseline + 3, (took, baseline)
    assert task["task_id"] not in [t["task_id"] for t in again.spec.get("tasks", [])]


def test_the_statement_timeout_follows_what_is_left_of_the_budget(pg_url: str) -> None:
    """In a call 2 s into a 5 s budget the session's statement_timeout is about 3 s; once
    the budget is spent it is the floor (a save after a long step still commits)."""
    from flow.core import proc
    from workspace import pgconn

    import os
    os.environ["ORCHESTRATOR_FOREGROUND_S"] = "5"
    try:
        proc.begin_call()
        proc._call_started = time.monotonic() - 2.0
        conn = pgconn.connect(pg_url, fresh=True)
        shown = conn.execute("SHOW statement_timeout").fetchone()[0]
        assert shown.endswith("ms") and 2500 <= int(shown[:-2]) <= 3000, shown
        proc._call_started = time.monotonic() - 60.0
        conn = pgconn.connect(pg_url)
        assert "1s" == conn.execute("SHOW statement_timeout").fetchone()[0]
    finally:
        proc.end_call()
        os.environ.pop("ORCHESTRATOR_FOREGROUND_S", None)
        pgconn.drop(pg_url)
