"""Fencing on a real PostgreSQL server: every command printed for a campaign's flow carries
its lease token, and a stale holder (whose item another worker took) is refused on its feed,
its resume and its completion (``lease_lost``, exit 3, naming the current holder), leaving
the flow and the new holder's lease exactly as they were."""

from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.contract.driver import Driver, modules_after
from tests.contract.toyflow import answer as toy_answer

TICK = {"ORCHESTRATOR_PLUGINS": "tests.fleet.tickflow"}


def _items(tmp: Path, n: int = 1) -> Path:
    path = tmp / "items.json"
    path.write_text(json.dumps([{"id": f"i{k}", "argv": ["start", "tick", f"i{k}"]}
                                for k in range(n)]))
    return path


def _worker(ws: Path, url: str, name: str, lease_s: str) -> Driver:
    # a lease shorter than the foreground budget is raised to it: short leases, short calls
    return Driver(ws, {**TICK, "ORCHESTRATOR_STORE": url, "ORCHESTRATOR_WORKER": name,
                       "ORCHESTRATOR_LEASE_S": lease_s, "ORCHESTRATOR_FOREGROUND_S": lease_s})


def _item(url: str, item: str = "i0") -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT state, token, holder, lease_until, done_count, result, "
                           "lease_until <= now() FROM campaign_items WHERE item_id = %s",
                           (item,)).fetchone()
    keys = ("state", "token", "holder", "lease_until", "done_count", "result", "expired")
    return dict(zip(keys, row))


def _flow_row(url: str, flow_id: str) -> tuple[bytes, int]:
    with psycopg.connect(url) as conn:
        state, revision = conn.execute("SELECT state, revision FROM flows WHERE flow_id = %s",
                                       (flow_id,)).fetchone()
    return bytes(state), revision


def _wait_expired(url: str) -> None:
    deadline = time.monotonic() + 60
    while not _item(url)["expired"]:
        assert time.monotonic() < deadline, "the lease never expired"
        time.sleep(0.1)


def _taken_over(tmp_path: Path, url: str) -> tuple[Driver, dict[str, Any], Driver,
                                                   dict[str, Any]]:
    """Worker a claims i0 (a 1 s lease) and is handed its task; its lease runs out; worker
    b claims i0 and is handed the task again. Returns (a, a's spec, b, b's spec)."""
    a = _worker(tmp_path / "A", url, "a", "1")
    first = a.call(["campaign", "c", "--items", str(_items(tmp_path))])
    assert (0, "need_agent") == (first.code, first.spec["status"]), first.stderr
    _wait_expired(url)
    b = _worker(tmp_path / "B", url, "b", "600")
    second = b.call(["campaign", "c"])
    assert (0, "tick/i0") == (second.code, second.spec["flow_id"]), second.stderr
    assert ("leased", "b", 2) == (_item(url)["state"], _item(url)["holder"],
                                  _item(url)["token"])
    return a, first.spec, b, second.spec


def _lease_of(command: str) -> str:
    words = shlex.split(command)
    return words[words.index("--lease") + 1]


def _assert_lost(call: Any, holder: str) -> None:
    assert 3 == call.code, call.stderr
    err = call.spec["error"]
    assert "lease_lost" == err["code"]
    assert f"'{holder}'" in err["message"] and holder == err["holder"]["worker"]
    assert (1, 2) == (err["campaign"]["token"], err["campaign"]["current_token"])


def test_every_printed_command_of_a_leased_flow_carries_its_token(
        tmp_path: Path, pg_url: str) -> None:
    """The feed, resume and answer commands of a campaign's flow carry --lease TOKEN, the
    token of the claim that printed them."""
    a, spec, b, spec_b = _taken_over(tmp_path, pg_url)
    assert "1" == _lease_of(spec["resume_command"]) == _lease_of(spec["tasks"][0]["feed_command"])
    assert "2" == _lease_of(spec_b["resume_command"])
    assert "2" == _lease_of(spec_b["tasks"][0]["feed_command"])
    assert 2 == spec_b["campaign"]["lease"]


def test_a_stale_holders_feed_is_refused_and_the_new_lease_untouched(
        tmp_path: Path, pg_url: str) -> None:
    """Worker a feeds its result after b took the item: exit 3 lease_lost naming b; the
    flow's row is byte for byte as it was and b's lease (token, holder, until) unchanged;
    b's own feed then ends the flow and marks the item done once, as b's."""
    a, spec, b, spec_b = _taken_over(tmp_path, pg_url)
    before_flow, before_item = _flow_row(pg_url, "tick/i0"), _item(pg_url)
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    stale = a.shell(task["feed_command"])
    _assert_lost(stale, "b")
    assert before_flow == _flow_row(pg_url, "tick/i0")
    assert before_item == _item(pg_url)
    mine = spec_b["tasks"][0]
    Path(mine["feed_file"]).write_text(json.dumps(toy_answer(mine)))
    done = b.shell(mine["feed_command"])
    assert (0, "done", True) == (done.code, done.spec["status"], done.spec["campaign"]["item_done"])
    item = _item(pg_url)
    assert ("done", 1, "b") == (item["state"], item["done_count"], item["holder"])


def test_a_stale_holders_resume_is_refused_without_renewing(tmp_path: Path,
                                                           pg_url: str) -> None:
    """Worker a polls its resume command after b took the item: exit 3 lease_lost naming b
    (the cached spec is not handed out), and b's lease is not renewed in b's name."""
    a, spec, b, _ = _taken_over(tmp_path, pg_url)
    before = _item(pg_url)
    stale = a.shell(spec["resume_command"])
    _assert_lost(stale, "b")
    assert before == _item(pg_url)
    with psycopg.connect(pg_url) as conn:
        lock = conn.execute("SELECT host FROM locks WHERE flow_id = 'tick/i0'").fetchone()
    assert lock is None or lock[0] is None  # the refused call let go of the flow's lock


def test_a_stale_holder_cannot_complete_an_item_the_new_holder_finished(
        tmp_path: Path, pg_url: str) -> None:
    """b finishes the item; a's feed and resume afterwards are refused naming b as who did
    it, the item stays done once with b's result."""
    a, spec, b, spec_b = _taken_over(tmp_path, pg_url)
    mine = spec_b["tasks"][0]
    Path(mine["feed_file"]).write_text(json.dumps(toy_answer(mine)))
    assert 0 == b.shell(mine["feed_command"]).code
    done = _item(pg_url)
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    for command in (task["feed_command"], spec["resume_command"]):
        stale = a.shell(command)
        _assert_lost(stale, "b")
        assert "done by worker 'b'" in stale.spec["error"]["message"]
    assert done == _item(pg_url)
    assert (1, "ticked") == (done["done_count"], done["result"]["outcome"])


@pytest.mark.slow
def test_a_harness_polling_its_resume_command_keeps_its_item_past_three_lease_lengths(
        tmp_path: Path, pg_url: str) -> None:
    """Polls are heartbeats: worker a (a 4 s lease) polls the resume command of its flow
    (waiting on its agent, answered from the cached spec) about every second for more than
    three lease lengths; worker b's campaign calls meanwhile get nothing_free; a's item
    keeps its token and a's feed then finishes it."""
    a = _worker(tmp_path / "A", pg_url, "a", "4")
    first = a.call(["campaign", "c", "--items", str(_items(tmp_path))])
    assert (0, "need_agent") == (first.code, first.spec["status"]), first.stderr
    b = _worker(tmp_path / "B", pg_url, "b", "4")
    polls, refusals = 0, 0
    while True:
        with psycopg.connect(pg_url) as conn:
            held_s = conn.execute("SELECT extract(epoch FROM now() - leased_at) FROM "
                                  "campaign_items WHERE item_id = 'i0'").fetchone()[0]
        if held_s > 3 * 4 + 1:
            break
        poll = a.shell(first.spec["resume_command"])
        assert (0, "waiting") == (poll.code, poll.spec["status"]), poll.stderr
        polls += 1
        other = b.call(["campaign", "c"])
        assert (0, "nothing_free") == (other.code, other.spec.get("outcome")), other.spec
        refusals += 1
        time.sleep(0.5)
    assert polls >= 3 and refusals == polls
    assert poll.spec["campaign"]["lease_renewed"]
    # the poll was answered from the cached spec: the engine was never imported
    assert "flow.core.engine" not in modules_after(shlex.split(first.spec["resume_command"])[2:],
                                                   a.env)
    item = _item(pg_url)
    assert ("leased", "a", 1) == (item["state"], item["holder"], item["token"])
    task = first.spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    done = a.shell(task["feed_command"])
    assert (0, "done", True) == (done.code, done.spec["status"], done.spec["campaign"]["item_done"])


def test_mcp_tools_take_the_lease_and_refuse_a_stale_holder(tmp_path: Path, pg_url: str) -> None:
    """A harness on the MCP server passes its flow's lease token to resume and feed as the
    printed commands carry --lease: worker a's token, stale since b took the item, is refused
    on both (lease_lost naming b, the item untouched); b's token feeds the item to done."""
    from tests.mcp.client import Mcp, drive

    a, spec, b, spec_b = _taken_over(tmp_path, pg_url)
    before = _item(pg_url)
    task, mine = spec["tasks"][0], spec_b["tasks"][0]

    async def stale(mcp: Mcp) -> None:
        for tool, args in (("resume", {"flow_id": "tick/i0", "lease": 1}),
                           ("feed", {"flow_id": "tick/i0", "task_id": task["task_id"],
                                     "result": toy_answer(task), "lease": 1})):
            got, failed = await mcp.call(tool, args)
            assert failed and "lease_lost" == got["error"]["code"], (tool, json.dumps(got))
            assert "b" == got["error"]["holder"]["worker"]

    async def current(mcp: Mcp) -> None:
        got = await mcp.ok("feed", {"flow_id": "tick/i0", "task_id": mine["task_id"],
                                    "result": toy_answer(mine), "lease": 2})
        assert ("done", True) == (got["status"], got["campaign"]["item_done"])

    # the server's own budget per tool call: a's 1 s (its lease's) would answer a slow call
    # "still running" on a busy machine; the lease is a's stale token either way
    drive(a.workspace, stale, {**a.env, "ORCHESTRATOR_FOREGROUND_S": "60"}, "--store", pg_url)
    assert before == _item(pg_url)
    drive(b.workspace, current, b.env, "--store", pg_url)
    item = _item(pg_url)
    assert ("done", 1, "b") == (item["state"], item["done_count"], item["holder"])
