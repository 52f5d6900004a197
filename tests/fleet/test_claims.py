"""At-least-once made safe, on a real PostgreSQL server: an item whose holders keep dying is
parked for a person after ORCHESTRATOR_MAX_CLAIMS claims instead of looping through the
fleet, and a holder killed mid-run leaves no run of its own behind on its machine once
another worker took its item over."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.contract.driver import Driver
from tests.terminal import on_a_terminal

TICK = {"ORCHESTRATOR_PLUGINS": "tests.fleet.tickflow"}
SLEEPER = ("import os, pathlib, time\n"
           "pathlib.Path('job.pid').write_text(str(os.getpid()))\n"
           "time.sleep(300)\n")


def _items(tmp: Path, items: list[tuple[str, list[str]]]) -> Path:
    path = tmp / "items.json"
    path.write_text(json.dumps([{"id": i, "argv": argv} for i, argv in items]))
    return path


def _expired(url: str, item: str) -> bool:
    with psycopg.connect(url) as conn:
        return bool(conn.execute("SELECT state = 'leased' AND lease_until <= now() FROM "
                                 "campaign_items WHERE item_id = %s", (item,)).fetchone()[0])


def _wait(what: str, ok: Any, bound: float = 60.0) -> None:
    deadline = time.monotonic() + bound
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def test_an_item_whose_holders_keep_dying_is_parked_after_max_claims_and_shown(
        tmp_path: Path, pg_url: str) -> None:
    """Three workers in turn claim the poison item and die (their lease runs out); the
    fourth call parks it (ORCHESTRATOR_MAX_CLAIMS, default 3) and takes the good item
    instead; status --campaign shows it parked for a person with its claims and last
    holder; nothing_free then says so, with poll_after_s."""
    items = _items(tmp_path, [("poison", ["start", "tick", "poison"]),
                              ("good", ["start", "tick", "good"])])
    for n in range(3):
        drv = Driver(tmp_path / f"W{n}", {**TICK, "ORCHESTRATOR_STORE": pg_url,
                                          "ORCHESTRATOR_WORKER": f"w{n}",
                                          "ORCHESTRATOR_LEASE_S": "1",
                                          "ORCHESTRATOR_FOREGROUND_S": "1"})
        call = drv.call(["campaign", "c", "--items", str(items)])
        assert (0, "poison") == (call.code, call.spec["campaign"]["item"]), call.stderr
        _wait("the lease ran out", lambda: _expired(pg_url, "poison"))
    fourth = Driver(tmp_path / "W3", {**TICK, "ORCHESTRATOR_STORE": pg_url,
                                      "ORCHESTRATOR_WORKER": "w3",
                                      "ORCHESTRATOR_LEASE_S": "600"})
    took = fourth.call(["campaign", "c"])
    assert (0, "good") == (took.code, took.spec["campaign"]["item"]), took.stderr
    shown = fourth.call(["status", "--campaign", "c", "--json"]).spec["campaigns"][0]
    assert {"free": 0, "leased": 1, "done": 0, "parked": 1, "dropped": 0} == shown["by_state"]
    [parked] = shown["parked"]
    assert ("poison", 3, "w2", "tick/poison") == (parked["item"], parked["claims"],
                                                  parked["last_holder"], parked["flow_id"])
    other = Driver(tmp_path / "W4", {**TICK, "ORCHESTRATOR_STORE": pg_url,
                                     "ORCHESTRATOR_WORKER": "w4"})
    nothing = other.call(["campaign", "c"])
    assert ("nothing_free", True) == (nothing.spec["outcome"],
                                      nothing.spec["poll_after_s"] > 0), nothing.spec
    assert any("parked for a person" in s for s in nothing.spec["next_steps"])


def test_the_status_table_names_a_parked_item_for_a_person(tmp_path: Path,
                                                           pg_url: str) -> None:
    """With ORCHESTRATOR_MAX_CLAIMS=1 an item whose only holder died is parked at the next
    claim, and the campaign, nothing else left, ends naming it; the status table says
    PARKED with its claims and last holder."""
    items = _items(tmp_path, [("p", ["start", "tick", "p"])])
    env = {**TICK, "ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_MAX_CLAIMS": "1"}
    first = Driver(tmp_path / "A", {**env, "ORCHESTRATOR_WORKER": "a",
                                    "ORCHESTRATOR_LEASE_S": "1", "ORCHESTRATOR_FOREGROUND_S": "1"})
    assert 0 == first.call(["campaign", "c", "--items", str(items)]).code
    _wait("the lease ran out", lambda: _expired(pg_url, "p"))
    second = Driver(tmp_path / "B", {**env, "ORCHESTRATOR_WORKER": "b"})
    ended = second.call(["campaign", "c"]).spec  # only a parked item left: the campaign ends
    assert ("campaign_finished", ["p"]) == (ended["outcome"], ended["parked"])
    _, table = on_a_terminal(tmp_path / "B", "status", "--campaign", "c", env=second.env,
                             stderr=False)
    assert "0 done, 0 leased (0 expired), 0 free, 1 parked" in table
    assert "PARKED p: claimed 1 time without finishing (last holder a" in table


def _pid(path: Path) -> int:
    _wait(f"{path} written", lambda: path.is_file() and path.read_text().strip() != "")
    return int(path.read_text())


def _running(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def _supervisor(flow_dir: Path) -> int:
    """The pid of the supervisor running the flow's job from ``flow_dir`` (found in /proc)."""
    spec = str(flow_dir / "jobs" / "work-v1-main.json").encode()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and spec in (entry / "cmdline").read_bytes():
                return int(entry.name)
        except OSError:
            continue
    raise AssertionError(f"no supervisor of {spec!r}")


@pytest.mark.parametrize("back", ["campaign", "stale resume"])
def test_a_killed_holders_run_is_ended_on_its_machine_once_its_item_is_taken_over(
        tmp_path: Path, pg_url: str, back: str) -> None:
    """Worker a's flow runs a background job, then a dies; its lease runs out and worker b
    (another workspace) takes the item over and runs the job anew; a's machine's next
    campaign call, or a's own stale resume (refused, lease_lost), ends a's run and leaves
    b's, the holder's, running."""
    items = _items(tmp_path, [("j", ["start", "jobs", "j0"])])
    env = {"ORCHESTRATOR_PLUGINS": "tests.proc.jobflow", "JOBFLOW_SCRIPT": SLEEPER,
           "JOBFLOW_TIMEOUT": "600", "ORCHESTRATOR_FOREGROUND_S": "2",
           "ORCHESTRATOR_STORE": pg_url}
    a = Driver(tmp_path / "A", {**env, "ORCHESTRATOR_WORKER": "a", "ORCHESTRATOR_LEASE_S": "1"})
    b = Driver(tmp_path / "B", {**env, "ORCHESTRATOR_WORKER": "b",
                                "ORCHESTRATOR_LEASE_S": "600"})
    pids: list[int] = []
    try:
        first = a.call(["campaign", "c", "--items", str(items)])
        assert (0, "waiting") == (first.code, first.spec["status"]), first.stderr
        pids.append(_pid(tmp_path / "A" / "jobs" / "j0" / "job.pid"))
        assert _running(pids[0])
        supervisor = _supervisor(tmp_path / "A" / "jobs" / "j0")
        _wait("a's lease ran out", lambda: _expired(pg_url, "j"))
        took = b.call(["campaign", "c"])
        assert (0, "waiting", "j") == (took.code, took.spec["status"],
                                       took.spec["campaign"]["item"]), took.stderr
        pids.append(_pid(tmp_path / "B" / "jobs" / "j0" / "job.pid"))
        # b signalled no process by the number a's state recorded (on a fleet that number is
        # another machine's): a's supervisor and run are a's machine's to end
        assert _running(supervisor) and _running(pids[0])
        if back == "campaign":  # a's harness, restarted on its machine
            again = a.call(["campaign", "c"])
            assert (0, "nothing_free") == (again.code, again.spec["outcome"]), again.stderr
        else:  # a's harness, paused past its lease, polls again
            again = a.shell(first.spec["resume_command"])
            assert (3, "lease_lost") == (again.code, again.spec["error"]["code"])
            assert ["work-v1-main"] == again.spec["error"]["jobs_ended"]
        _wait("a's run ended", lambda: not _running(pids[0]), bound=30)
        assert _running(pids[1])  # the holder's run goes on
    finally:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def test_a_campaign_redefined_with_other_start_words_for_an_id_is_refused(
        tmp_path: Path, pg_url: str) -> None:
    """A second definition giving item i0 other start words is refused (exit 2,
    campaign_conflict naming i0) and adds nothing, not even its new item; the same
    definition again is accepted."""
    env = {**TICK, "ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_WORKER": "a"}
    drv = Driver(tmp_path / "A", env)
    first = tmp_path / "one"
    first.mkdir()
    assert 0 == drv.call(["campaign", "c", "--items", str(_items(
        first, [("i0", ["start", "tick", "x"])]))]).code
    other = tmp_path / "two"
    other.mkdir()
    refused = drv.call(["campaign", "c", "--items", str(_items(
        other, [("i0", ["start", "tick", "y"]), ("i1", ["start", "tick", "z"])]))])
    assert (2, "campaign_conflict", ["i0"]) == (refused.code, refused.spec["error"]["code"],
                                                refused.spec["error"]["items"])
    assert "'i0'" in refused.spec["error"]["message"]
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT item_id, payload FROM campaign_items").fetchall()
    assert [("i0", {"argv": ["start", "tick", "x"]})] == rows
    again = drv.call(["campaign", "c", "--items", str(first / "items.json")])
    assert (0, "i0") == (again.code, again.spec["campaign"]["item"]), again.stderr


def test_a_later_workers_own_lease_length_is_taken_and_said(tmp_path: Path,
                                                           pg_url: str) -> None:
    """The campaign is defined with a 600 s lease; a worker with ORCHESTRATOR_LEASE_S=30
    holds its item for 30 s (not 600), and its campaign block says both lengths."""
    items = _items(tmp_path, [("i0", ["start", "tick", "x"]), ("i1", ["start", "tick", "y"])])
    env = {**TICK, "ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_FOREGROUND_S": "30"}
    a = Driver(tmp_path / "A", {**env, "ORCHESTRATOR_WORKER": "a",
                                "ORCHESTRATOR_LEASE_S": "600"})
    assert 0 == a.call(["campaign", "c", "--items", str(items)]).code
    b = Driver(tmp_path / "B", {**env, "ORCHESTRATOR_WORKER": "b", "ORCHESTRATOR_LEASE_S": "30"})
    took = b.call(["campaign", "c"])
    assert (0, "i1") == (took.code, took.spec["campaign"]["item"]), took.stderr
    with psycopg.connect(pg_url) as conn:
        left = conn.execute("SELECT extract(epoch FROM lease_until - now()) FROM "
                            "campaign_items WHERE item_id = 'i1'").fetchone()[0]
    assert 20 < float(left) <= 30
    block = took.spec["campaign"]
    assert 30 == block["lease_s"]
    assert "30 s" in block["lease_note"] and "600 s" in block["lease_note"]
