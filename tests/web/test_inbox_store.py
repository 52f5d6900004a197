"""The inbox on the PostgreSQL store: ``status --needs-me`` and the dashboard's list count and
list the campaign items that need a person (a lease that expired, an item parked after too
many claims) beside the flows, over a real database and real campaign commands whose 1 s
leases really run out."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import psycopg

from tests.contract.driver import Driver
from tests.web.test_dashboard import _until
from tests.web.workspace import serving

TICK = "tests.fleet.tickflow"


def _expired(url: str, item: str) -> bool:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT state = 'leased' AND lease_until <= now() FROM "
                           "campaign_items WHERE item_id = %s", (item,)).fetchone()
    return bool(row and row[0])


def _wait(what: str, ok: Any, bound: float = 60.0) -> None:
    deadline = time.monotonic() + bound
    while not ok():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.1)


def _worker(tmp: Path, url: str, name: str, lease_s: str, max_claims: str = "1") -> Driver:
    return Driver(tmp / name, {"ORCHESTRATOR_PLUGINS": TICK, "ORCHESTRATOR_STORE": url,
                               "ORCHESTRATOR_WORKER": name, "ORCHESTRATOR_LEASE_S": lease_s,
                               "ORCHESTRATOR_FOREGROUND_S": lease_s,
                               "ORCHESTRATOR_MAX_CLAIMS": max_claims})


def _fleet(tmp: Path, url: str) -> None:
    """Worker a takes item ``poison`` on a 1 s lease and goes away; worker b's claim parks
    it (one claim is the most, ORCHESTRATOR_MAX_CLAIMS=1), takes ``good`` on a 1 s lease and
    goes away too: one parked item, one expired lease, two flows waiting on their agent."""
    items = tmp / "items.json"
    items.write_text(json.dumps([{"id": i, "argv": ["start", "tick", i]}
                                 for i in ("poison", "good")]))
    first = _worker(tmp, url, "a", "1").call(["campaign", "c", "--items", str(items)])
    assert (0, "poison") == (first.code, first.spec["campaign"]["item"]), first.stderr
    _wait("a's lease ran out", lambda: _expired(url, "poison"))
    second = _worker(tmp, url, "b", "1").call(["campaign", "c"])
    assert (0, "good") == (second.code, second.spec["campaign"]["item"]), second.stderr
    _wait("b's lease ran out", lambda: _expired(url, "good"))


def test_status_needs_me_counts_and_lists_expired_leases_and_parked_items(
        tmp_path: Path, pg_url: str) -> None:
    """JSON: ``campaign_items`` names the expired lease (holder, flow) and the parked item,
    ``needs_me`` counts them; the table's first line counts them and a line each follows.
    The flows themselves wait on their agent, healthy, and are not in the inbox."""
    _fleet(tmp_path, pg_url)
    viewer = Driver(tmp_path / "viewer", {"ORCHESTRATOR_PLUGINS": TICK,
                                          "ORCHESTRATOR_STORE": pg_url})
    out = viewer.call(["status", "--needs-me", "--json"])
    assert 0 == out.code, out.stderr
    items = out.spec["campaign_items"]
    assert ([("c", "good", "lease expired", "b", "tick/good", 1),
             ("c", "poison", "parked", "a", "tick/poison", 1)],
            {"person": 0, "error": 0, "unreadable": 0, "stuck": 0, "expired_lease": 1,
             "parked": 1}, []) == (
        [(i["campaign"], i["item"], i["why"], i["holder"], i["flow_id"], i["claims"])
         for i in items], out.spec["needs_me"], out.spec["flows"])
    assert items[0]["expired_s_ago"] >= 0 and items[0]["lease_until"].endswith("Z")
    from tests.terminal import on_a_terminal

    code, text = on_a_terminal(tmp_path / "v2", "status", "--needs-me", env=viewer.env,
                               stderr=False)
    assert code == 0, text
    lines = text.splitlines()
    assert "2 need a person: 0 asking, 0 failed, 0 stuck, 1 expired lease, 1 parked item" \
        == lines[0]
    assert (True, True) == (any("item good: LEASE EXPIRED" in ln for ln in lines),
                            any("item poison: PARKED" in ln for ln in lines))


def test_the_list_puts_expired_leases_first_and_drops_one_taken_over(
        tmp_path: Path, pg_url: str, page: Any) -> None:
    """``serve --store``: the inbox counts the expired lease and the parked item, a table
    above the flows names each (campaign link, holder, flow link) under the list's filters
    (a search, a workflow; a state other than "needs me" leaves none); when worker c takes the
    expired item over (it allows three claims), the open page drops it and the count falls, without a reload."""
    _fleet(tmp_path, pg_url)
    with serving(tmp_path / "viewer", ORCHESTRATOR_STORE=pg_url,
                 ORCHESTRATOR_PLUGINS=TICK) as (url, _):
        page.goto(url)
        inbox = page.inner_text("#inbox")
        rows = {r.get_attribute("data-key"): r.inner_text()
                for r in page.locator("#items tr.item").all()}
        links = [a.get_attribute("href") for a in page.locator("#items tr.item a").all()]
        assert (True, True, True) == ("2 need a person" in inbox, "1 expired lease" in inbox,
                                      "1 parked item" in inbox)
        assert (["c/good", "c/poison"], True, True) == (
            list(rows), "lease expired" in rows["c/good"] and "\tb on " in rows["c/good"],
            "parked" in rows["c/poison"])
        assert ["/campaign/c", "/flow/tick/good", "/campaign/c", "/flow/tick/poison"] == links
        kept = {}
        for query in ("q=poison", "workflow=tick", "workflow=reproduce", "state=done",
                      "needs_me=1"):
            page.goto(f"{url}?{query}")
            kept[query] = ([r.get_attribute("data-key")
                            for r in page.locator("#items tr.item").all()],
                           page.locator("#items tr.more").all_inner_texts())
        assert {"q=poison": (["c/poison"], ["1 hidden by the filter"]),
                "workflow=tick": (["c/good", "c/poison"], []),
                "workflow=reproduce": ([], []), "state=done": ([], []),
                "needs_me=1": (["c/good", "c/poison"], [])} == kept
        page.goto(url)
        page.evaluate("window.sameDocument = true")
        took = _worker(tmp_path, pg_url, "c", "600", max_claims="3").call(["campaign", "c"])
        assert (0, "good") == (took.code, took.spec["campaign"]["item"]), took.stderr
        _until(page, lambda: page.locator("#items tr.item").count() == 1)
        assert (["c/poison"], True, True) == (
            [r.get_attribute("data-key") for r in page.locator("#items tr.item").all()],
            "1 needs a person" in page.inner_text("#inbox"),
            page.evaluate("window.sameDocument === true"))
