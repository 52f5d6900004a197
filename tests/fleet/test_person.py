"""What a person does to a campaign, on a real PostgreSQL server: requeue or drop an item
(``campaign NAME --requeue|--drop ID --lease TOKEN``, fenced by the token ``status
--campaign`` shows: a stale one is refused and nothing changes), a campaign whose only items
left are parked ends naming them, and a later definition says how many items it added."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.contract.driver import Driver
from tests.contract.toyflow import answer as toy_answer

TICK = {"ORCHESTRATOR_PLUGINS": "tests.fleet.tickflow"}


def _items(tmp: Path, ids: list[str], name: str = "items.json") -> Path:
    path = tmp / name
    path.write_text(json.dumps([{"id": i, "argv": ["start", "tick", i]} for i in ids]))
    return path


def _worker(tmp: Path, url: str, name: str, lease_s: str = "1") -> Driver:
    return Driver(tmp / name, {**TICK, "ORCHESTRATOR_STORE": url, "ORCHESTRATOR_WORKER": name,
                               "ORCHESTRATOR_LEASE_S": lease_s,
                               "ORCHESTRATOR_FOREGROUND_S": lease_s,
                               "ORCHESTRATOR_MAX_CLAIMS": "1"})


def _row(url: str, item: str) -> dict[str, Any]:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT state, token, claims, holder, flow_id, done_count, "
                           "state = 'leased' AND lease_until <= now() FROM campaign_items "
                           "WHERE item_id = %s", (item,)).fetchone()
    return dict(zip(("state", "token", "claims", "holder", "flow_id", "done_count", "expired"),
                    row))


def _wait(what: str, ok: Any, bound: float = 60.0) -> None:
    deadline = time.monotonic() + bound
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def _park(tmp: Path, url: str, ids: list[str]) -> None:
    """Each item of ``ids`` taken by a worker that goes away (a 1 s lease, one claim the
    most): parked at the next claim."""
    items = _items(tmp, ids)
    for n, item in enumerate(ids):
        took = _worker(tmp, url, f"gone{n}").call(["campaign", "c", "--items", str(items)])
        assert (0, item) == (took.code, took.spec["campaign"]["item"]), took.stderr
        _wait("the lease ran out", lambda item=item: _row(url, item)["expired"])


def test_a_parked_item_is_requeued_by_its_token_and_then_finished(tmp_path: Path,
                                                                  pg_url: str) -> None:
    """A parked item: the campaign ends naming it (campaign_finished, parked, the commands
    that requeue or drop it with its token); status shows its flow and token. A requeue with
    a stale token is refused (exit 2, stale_token) and changes nothing; with the item's token
    it goes back to the pool (claims from 0, token bumped), the next worker resumes its flow
    and finishes it, and the campaign ends with nothing parked."""
    _park(tmp_path, pg_url, ["p"])
    b = _worker(tmp_path, pg_url, "b", "600")
    ended = b.call(["campaign", "c"])
    assert (0, "campaign_finished", ["p"]) == (ended.code, ended.spec["outcome"],
                                              ended.spec["parked"]), ended.spec
    token = _row(pg_url, "p")["token"]
    assert f"--requeue p --lease {token}" in ended.spec["next_steps"][0]
    [parked] = b.call(["status", "--campaign", "c", "--json"]).spec["campaigns"][0]["parked"]
    assert ("tick/p", token) == (parked["flow_id"], parked["token"])
    assert parked["last_error"].startswith("parked: claimed once without being finished")
    before = _row(pg_url, "p")
    stale = b.call(["campaign", "c", "--requeue", "p", "--lease", str(token + 1)])
    assert (2, "stale_token", token) == (stale.code, stale.spec["error"]["code"],
                                         stale.spec["error"]["campaign"]["current_token"])
    assert before == _row(pg_url, "p")
    back = b.call(["campaign", "c", "--requeue", "p", "--lease", str(token)])
    assert (0, "item_requeued", "free") == (back.code, back.spec["outcome"],
                                            back.spec["campaign"]["state"]), back.spec
    assert ("free", token + 1, 0) == tuple(_row(pg_url, "p")[k] for k in ("state", "token",
                                                                           "claims"))
    took = b.call(["campaign", "c"])  # the flow resumed: its task, handed out before
    assert (0, "tick/p") == (took.code, took.spec["flow_id"]), took.spec
    assert took.spec["status"] in {"need_agent", "waiting"}
    task = took.spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    done = b.shell(task["feed_command"])
    assert (0, True) == (done.code, done.spec["campaign"]["item_done"]), done.spec
    ended = b.call(["campaign", "c"])
    assert (0, "campaign_finished") == (ended.code, ended.spec["outcome"]), ended.spec
    assert "parked" not in ended.spec
    assert ("done", 1, "b") == tuple(_row(pg_url, "p")[k] for k in ("state", "done_count",
                                                                      "holder"))
    again = b.call(["campaign", "c", "--requeue", "p", "--lease", str(token + 2)])
    assert (2, "item_done") == (again.code, again.spec["error"]["code"])


def test_a_dropped_item_ends_the_campaign_and_its_old_holder_is_refused(
        tmp_path: Path, pg_url: str) -> None:
    """Worker a holds item d (its lease current); a person drops d with a stale token:
    refused, a keeps it; with the current token: dropped, and a's feed afterwards is refused
    (lease_lost, the item dropped); the campaign then ends (nothing left, d dropped)."""
    items = _items(tmp_path, ["d"])
    a = _worker(tmp_path, pg_url, "a", "600")
    took = a.call(["campaign", "c", "--items", str(items)])
    assert (0, "need_agent") == (took.code, took.spec["status"]), took.stderr
    token = _row(pg_url, "d")["token"]
    person = _worker(tmp_path, pg_url, "person", "600")
    stale = person.call(["campaign", "c", "--drop", "d", "--lease", str(token + 1)])
    assert (2, "stale_token") == (stale.code, stale.spec["error"]["code"])
    assert ("leased", "a", token) == tuple(_row(pg_url, "d")[k] for k in ("state", "holder",
                                                                          "token"))
    dropped = person.call(["campaign", "c", "--drop", "d", "--lease", str(token)])
    assert (0, "item_dropped", "dropped") == (dropped.code, dropped.spec["outcome"],
                                              dropped.spec["campaign"]["state"])
    task = took.spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    late = a.shell(task["feed_command"])
    assert (3, "lease_lost") == (late.code, late.spec["error"]["code"])
    assert "dropped" in late.spec["error"]["message"]
    ended = person.call(["campaign", "c"])
    assert (0, "campaign_finished") == (ended.code, ended.spec["outcome"]), ended.spec
    assert 1 == ended.spec["campaign"]["by_state"]["dropped"]
    assert 0 == ended.spec["campaign"]["left"]


def test_requeue_and_drop_need_a_token_and_a_known_item(tmp_path: Path, pg_url: str) -> None:
    """--requeue without --lease, --lease alone, both actions at once, an unknown item: each
    a usage error (exit 2) naming what to do, nothing changed."""
    items = _items(tmp_path, ["x"])
    drv = _worker(tmp_path, pg_url, "a", "600")
    assert 0 == drv.call(["campaign", "c", "--items", str(items)]).code
    before = _row(pg_url, "x")
    for argv, words in ((["--requeue", "x"], "needs --lease TOKEN"),
                        (["--lease", "1"], "only with --requeue or --drop"),
                        (["--requeue", "x", "--drop", "x", "--lease", "1"], "not both"),
                        (["--drop", "nope", "--lease", "1"], "has no item 'nope'")):
        call = drv.call(["campaign", "c", *argv])
        assert 2 == call.code and words in call.spec["error"]["message"], call.spec
    assert before == _row(pg_url, "x")


def test_a_later_definition_says_how_many_items_it_added(tmp_path: Path, pg_url: str) -> None:
    """A finished campaign defined again with one new id: the answer says 1 added (and that
    the campaign had finished) and the call takes the new item; the same definition again
    adds 0 and says nothing of it."""
    a = _worker(tmp_path, pg_url, "a", "600")
    first = a.call(["campaign", "c", "--items", str(_items(tmp_path, ["i0"], "one.json"))])
    assert (1, 1) == (first.spec["defined"]["items"], first.spec["defined"]["added"])
    task = first.spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(toy_answer(task)))
    assert a.shell(task["feed_command"]).spec["campaign"]["item_done"]
    assert "campaign_finished" == a.call(["campaign", "c"]).spec["outcome"]
    more = _items(tmp_path, ["i0", "i1"], "two.json")
    grown = a.call(["campaign", "c", "--items", str(more)])
    assert (0, "tick/i1") == (grown.code, grown.spec["flow_id"]), grown.spec
    assert {"campaign": "c", "items": 2, "added": 1, "was_finished": True} == \
        grown.spec["defined"]
    assert grown.spec["next_steps"][0].startswith("campaign 'c': 1 new item(s) added (2 in all)")
    same = a.call(["campaign", "c", "--items", str(more)])
    assert 0 == same.spec["defined"]["added"]
    assert not any("added" in s for s in same.spec.get("next_steps", []))
