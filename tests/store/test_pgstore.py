"""The PostgreSQL store keeps the file store's guarantees, against a real server: one
transaction per save, refused feeds change nothing, a lock that names its holder and dies
with it, a fencing counter, a versioned schema that fails closed, clear JSON errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.contract.driver import ROOT, SCRIPT, Driver, modules_after
from tests.contract.scenarios import TOY

TOY_ENV = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}


def _driver(ws: Path, url: str, **env: str) -> Driver:
    return Driver(ws, {**TOY_ENV, "ORCHESTRATOR_STORE": url, **env})


def _row(url: str, flow_id: str) -> bytes:
    with psycopg.connect(url) as conn:
        return bytes(conn.execute("SELECT state FROM flows WHERE flow_id = %s",
                                  (flow_id,)).fetchone()[0])


def _audit(url: str, flow_id: str) -> list[dict[str, Any]]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT record FROM audit WHERE flow_id = %s ORDER BY id",
                            (flow_id,)).fetchall()
    return [json.loads(bytes(r[0])) for r in rows]


def _pending(drv: Driver) -> dict[str, Any]:
    spec = drv.call(TOY.start).spec
    assert spec is not None
    while spec["status"] not in {"need_agent", "waiting"}:
        spec = drv.step(spec, TOY).spec
    return spec


def test_a_flow_runs_to_done_with_its_state_and_audit_only_in_the_database(
        tmp_path: Path, pg_url: str) -> None:
    """The toy flow ends on the PostgreSQL store; no state file, every revision audited once."""
    specs = _driver(tmp_path / "ws", pg_url).run(TOY)
    assert "done" == specs[-1]["status"]
    assert [] == list((tmp_path / "ws").rglob("flow_state.json"))
    state = json.loads(_row(pg_url, "toy/alpha"))
    revisions = [r["revision"] for r in _audit(pg_url, "toy/alpha") if "revision" in r]
    assert list(range(1, state["revision"] + 1)) == revisions


def test_printed_commands_carry_the_store_and_run_from_a_fresh_shell(
        tmp_path: Path, pg_url: str) -> None:
    """resume_command names --store (no password) and works under env -i."""
    spec = _driver(tmp_path / "ws", pg_url).call(TOY.start).spec
    assert f"--store {pg_url}" in spec["resume_command"]
    proc = subprocess.run(["env", "-i", "PATH=/usr/bin:/bin", *[f"{k}={v}" for k, v in
                           TOY_ENV.items()], "bash", "-c", spec["resume_command"]],
                          capture_output=True, text=True, cwd="/", timeout=60)
    assert (0, "waiting") == (proc.returncode, json.loads(proc.stdout)["status"])


def test_refused_feeds_leave_the_row_byte_identical(tmp_path: Path, pg_url: str) -> None:
    """Missing, malformed, foreign and changed feeds are refused; the state row is unchanged
    byte for byte and each refusal is in the audit trail."""
    drv = _driver(tmp_path / "ws", pg_url)
    spec = _pending(drv)
    task = spec["tasks"][0]
    before = _row(pg_url, spec["flow_id"])
    codes = []
    for content in (None, "", "{nope", "[]", '{"ok": 1, "value": 2}'):
        feed = Path(task["feed_file"])
        if content is None:
            feed.unlink(missing_ok=True)
        else:
            feed.write_text(content)
        call = drv.shell(task["feed_command"])
        codes.append((call.code, call.spec["error"]["code"]))
    assert [(2, "feed_missing"), (2, "feed_empty"), (2, "feed_malformed"),
            (2, "feed_malformed"), (2, "invalid_feed")] == codes
    assert before == _row(pg_url, spec["flow_id"])
    refused = [r["code"] for r in _audit(pg_url, spec["flow_id"]) if r["event"] == "feed_refused"]
    assert ["feed_missing", "feed_empty", "feed_malformed", "feed_malformed",
            "invalid_feed"] == refused


HOLD = """
import sys, time
from pathlib import Path
from workspace.pgstore import PgFlowStore
store = PgFlowStore(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
with store.lock():
    print("held", flush=True)
    time.sleep(600)
"""


def _holder(ws: Path, flow_id: str, url: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(ws), flow_id, url],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None and "held" == proc.stdout.readline().strip()
    return proc


def test_busy_names_the_holder_and_a_killed_holders_lock_goes_with_its_session(
        tmp_path: Path, pg_url: str) -> None:
    """A held lock gives busy (exit 3) with host, pid and since; kill -9 of the holder frees
    it at once (its session ends), with no timestamp guess."""
    drv = _driver(tmp_path / "ws", pg_url, ORCHESTRATOR_LOCK_TIMEOUT="0.3")
    spec = drv.call(TOY.start).spec
    before = _row(pg_url, spec["flow_id"])
    holder = _holder(tmp_path / "ws", spec["flow_id"], pg_url)
    try:
        call = drv.call(["--flow", spec["flow_id"], "--resume", "--harness", "codex"])
        assert (3, "busy") == (call.code, call.spec["error"]["code"])
        held = call.spec["error"]["holder"]
        assert (holder.pid, os.uname().nodename) == (held["pid"], held["host"])
        assert held["since"].endswith("Z")
        assert before == _row(pg_url, spec["flow_id"])
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    while True:  # the server notices the dead session within moments
        call = drv.call(["--flow", spec["flow_id"], "--resume"])
        if call.code == 0 or time.monotonic() > deadline:
            break
    assert 0 == call.code


def _terminate_others(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                     "application_name = 'skill-orchestrator' AND pid <> pg_backend_pid()")


def test_a_writer_that_lost_its_lock_to_another_caller_is_fenced(
        tmp_path: Path, pg_url: str) -> None:
    """A caller whose session dropped while another caller took and used the lock is refused
    at its next save (fence), and the other caller's state stands."""
    from flow.core.state import FlowState
    from workspace.pgconn import drop
    from workspace.pgstore import Fenced, PgFlowStore

    drv = _driver(tmp_path / "ws", pg_url)
    spec = drv.call(TOY.start).spec
    store = PgFlowStore(tmp_path / "ws", spec["flow_id"], pg_url)
    try:
        with store.lock():
            state: FlowState = store.load()
            _terminate_others(pg_url)  # this caller's session (and advisory lock) is gone
            other = drv.call(["--flow", spec["flow_id"], "--resume", "--harness", "codex"])
            assert 0 == other.code
            after_other = _row(pg_url, spec["flow_id"])
            state.data["total"] = 99
            with pytest.raises(Fenced):
                store.save(state, "late")
        assert after_other == _row(pg_url, spec["flow_id"])
    finally:
        drop(pg_url)


def test_a_dropped_session_with_nobody_in_between_saves_after_reconnecting(
        tmp_path: Path, pg_url: str) -> None:
    """A connection drop between lock and save loses nothing when no one took the lock: the
    save takes it again (same fence) and commits."""
    from workspace.pgconn import drop
    from workspace.pgstore import PgFlowStore

    drv = _driver(tmp_path / "ws", pg_url)
    spec = drv.call(TOY.start).spec
    store = PgFlowStore(tmp_path / "ws", spec["flow_id"], pg_url)
    try:
        with store.lock():
            state = store.load()
            _terminate_others(pg_url)
            store.save(state, "after_drop")
        assert state.revision == json.loads(_row(pg_url, spec["flow_id"]))["revision"]
    finally:
        drop(pg_url)


def test_a_database_newer_than_the_code_fails_closed(tmp_path: Path, pg_url: str) -> None:
    """schema_version above the code's: exit 4 store_newer with a hint, nothing written."""
    drv = _driver(tmp_path / "ws", pg_url)
    spec = drv.call(TOY.start).spec
    before = _row(pg_url, spec["flow_id"])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE orchestrator_meta SET value = '99' WHERE key = 'schema_version'")
    call = drv.call(["--flow", spec["flow_id"], "--resume", "--harness", "codex"])
    assert (4, "store_newer") == (call.code, call.spec["error"]["code"])
    assert "upgrade" in call.spec["error"]["hint"]
    assert before == _row(pg_url, spec["flow_id"])
    assert "Traceback" not in call.stderr


def test_first_calls_racing_on_an_empty_database_migrate_it_once(
        tmp_path: Path, pg_url: str) -> None:
    """Four first calls at once on an empty database: each succeeds, the schema is current."""
    from workspace.pgschema import SCHEMA_VERSION

    env = {**os.environ, **TOY_ENV, "ORCHESTRATOR_STORE": pg_url,
           "PYTHONPATH": str(ROOT)}
    procs = [subprocess.Popen([sys.executable, str(SCRIPT), "--workspace",
                               str(tmp_path / f"ws{i}"), "start", "toy", f"n{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for i in range(4)]
    codes = [p.wait(timeout=60) for p in procs]
    assert [0, 0, 0, 0] == codes
    with psycopg.connect(pg_url) as conn:
        version = conn.execute("SELECT value FROM orchestrator_meta").fetchone()[0]
    assert str(SCHEMA_VERSION) == version


def test_an_unreachable_store_is_a_json_error_with_a_hint(tmp_path: Path) -> None:
    """A store nobody listens on: exit 3 store_unavailable (retryable, with poll_after_s),
    a hint that says nothing was written, no traceback."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    drv = _driver(tmp_path / "ws", f"postgresql://nobody@127.0.0.1:{port}/none")
    call = drv.call(TOY.start, {"PGPASSWORD": "s3cret-pw"})
    assert (3, "store_unavailable") == (call.code, call.spec["error"]["code"])
    assert call.spec["poll_after_s"] > 0
    assert "pg_isready" in call.spec["error"]["hint"]
    assert "nothing was written" in call.spec["error"]["hint"]
    assert "Traceback" not in call.stderr
    assert "s3cret-pw" not in json.dumps(call.spec) + call.stderr
    assert [] == list((tmp_path / "ws").rglob("*"))


def test_a_password_in_the_url_is_refused_and_never_shown(tmp_path: Path) -> None:
    """A URL with a password: exit 2 bad_store, the password masked, the hint names PGPASSWORD
    and .pgpass."""
    drv = _driver(tmp_path / "ws", "postgresql://u:hunter2pw@127.0.0.1:5/db")
    call = drv.call(TOY.start)
    assert (2, "bad_store") == (call.code, call.spec["error"]["code"])
    assert "hunter2pw" not in json.dumps(call.spec) + call.stderr
    assert "PGPASSWORD" in call.spec["error"]["hint"] and ".pgpass" in call.spec["error"]["hint"]


def test_the_file_store_never_imports_psycopg(tmp_path: Path) -> None:
    """Start, resume and feed on the file store load no psycopg (the fast path stays fast)."""
    env = {**os.environ, **TOY_ENV, "PYTHONPATH": str(ROOT)}
    env.pop("ORCHESTRATOR_STORE", None)
    ws = str(tmp_path / "ws")
    assert not any(m.startswith("psycopg") for m in
                   modules_after(["--workspace", ws, "start", "toy", "alpha"], env))
    assert not any(m.startswith("psycopg") for m in
                   modules_after(["--workspace", ws, "--flow", "toy/alpha", "--resume"], env))


def test_restart_moves_the_rows_aside_and_status_lists_the_store(
        tmp_path: Path, pg_url: str) -> None:
    """--restart keeps the old flow as <id>.old-<stamp> in the database; status lists the
    live flow from the store."""
    drv = _driver(tmp_path / "ws", pg_url)
    drv.call(TOY.start)
    again = drv.call([*TOY.start, "--restart"])
    assert 0 == again.code
    with psycopg.connect(pg_url) as conn:
        ids = [r[0] for r in conn.execute("SELECT flow_id FROM flows ORDER BY flow_id")]
    assert "toy/alpha" == ids[0] and ids[1].startswith("toy/alpha.old-") and 2 == len(ids)
    listed = drv.call(["status", "--json"]).spec["flows"]
    assert ["toy/alpha"] == [r["flow_id"] for r in listed]


def test_a_session_is_named_for_its_part_after_the_urls_own_name(pg_url: str) -> None:
    """What pg_stat_activity shows: ``skill-orchestrator`` and the part (``beat``), or the
    store URL's own ``application_name`` (a fleet naming its machines) and the part."""
    from workspace.pgconn import session

    named = []
    for url, part in ((pg_url, ""), (pg_url, "beat"), (f"{pg_url}?application_name=worker-7", "beat")):
        conn = session(url, part=part)
        try:
            named.append(conn.execute("SHOW application_name").fetchone()[0])
        finally:
            conn.close()
    assert ["skill-orchestrator", "skill-orchestrator beat", "worker-7 beat"] == named
