"""A big campaign's page is usable: its header counts the parked items beside the others, its
item table is cut into pages of 100 and filtered by state and by a search, live (no reload,
the address follows), like the list of flows. A real PostgreSQL store; the items are taken,
finished, run out and parked by the campaign's own functions (``workspace.campaign``), as
workers do."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from tests.web.test_dashboard import _until
from tests.web.workspace import serving

ITEMS = 150


def _expired(conn: Any, count: int) -> None:
    deadline = time.monotonic() + 30
    while conn.execute("SELECT count(*) FROM campaign_items WHERE campaign = 'big' AND "
                       "state = 'leased' AND lease_until <= now()").fetchone()[0] < count:
        assert time.monotonic() < deadline, "the short leases never ran out"
        time.sleep(0.05)


def _campaign(url: str) -> None:
    """Campaign ``big``: 150 items; i0000-i0002 done by bob, i0003 and i0004 parked (each
    worker that took one on a short lease went away, and erin's claim, one claim being the
    most here, parked them), i0005 leased by erin, alive, i0006 leased by frank, whose lease
    ran out."""
    from workspace import campaign
    from workspace.pgconn import connect

    conn = connect(url, fresh=True)
    campaign.define(conn, "big", "items", [(f"i{n:04d}", {"argv": ["start", "toy", f"i{n}"]})
                                           for n in range(ITEMS)])
    for n in range(3):
        lease = campaign.claim(conn, "big", "bob", "box", 7)
        assert lease is not None and f"i{n:04d}" == lease.item_id
        assert campaign.complete(conn, "big", lease.item_id, lease.token,
                                 {"outcome": "REPRODUCED" if n else "NOT_REPRODUCED"})
    for worker in ("carol", "dave"):  # each takes the next item on a 0.2 s lease and dies
        assert campaign.claim(conn, "big", worker, "gone", 9, lease_s=0.2) is not None
    _expired(conn, 2)
    taken = campaign.claim(conn, "big", "erin", "box", 11, lease_s=600, max_claims=1)
    assert taken is not None and "i0005" == taken.item_id
    taken = campaign.claim(conn, "big", "frank", "gone", 13, lease_s=0.2)
    assert taken is not None and "i0006" == taken.item_id
    _expired(conn, 1)


def test_a_big_campaigns_items_are_paged_and_filtered_live(
        tmp_path: Path, pg_url: str, page: Any) -> None:
    _campaign(pg_url)
    with serving(tmp_path / "viewer", ORCHESTRATOR_STORE=pg_url) as (url, _):
        page.goto(f"{url}campaign/big")
        page.evaluate("window.sameDocument = true")
        facts = page.inner_text("#campaign-facts")
        first = page.locator("#items tr.item").count()
        pager = page.inner_text("nav.pager")
        page.click("nav.pager a[rel=next]")
        _until(page, lambda: page.locator("#items tr.item").count() == ITEMS - 100)
        second = (page.locator("#items tr.item").first.get_attribute("data-item"), page.url)
        page.select_option("#state", "parked")
        _until(page, lambda: page.locator("#items tr.item").count() == 2)
        parked = [r.get_attribute("data-item") for r in page.locator("#items tr.item").all()]
        page.select_option("#state", "done")
        page.fill("#q", "not_reproduced")
        _until(page, lambda: page.locator("#items tr.item").count() == 1)
        found = (page.locator("#items tr.item").get_attribute("data-item"), page.url)
        page.fill("#q", "no such item anywhere")
        _until(page, lambda: page.locator("#items tr.empty").count() == 1)
        same = page.evaluate("window.sameDocument === true")
    assert (True, True, True, True) == ("150 items" in facts, "2 parked" in facts,
                                        "2 leased" in facts, "1 lease expired" in facts), facts
    assert (100, True) == (first, "page 1 of 2 · 150 of 150 items" in pager)
    assert ("i0100", True) == (second[0], second[1].endswith("page=2"))
    assert ["i0003", "i0004"] == parked
    assert ("i0000", True, True) == (found[0], "state=done" in found[1],
                                     "q=not_reproduced" in found[1])
    assert same is True


def test_the_filter_works_without_a_script(tmp_path: Path, pg_url: str) -> None:
    """The address alone filters (a link, a reload, a browser without scripts)."""
    from starlette.testclient import TestClient

    from flow.web.app import create_app

    _campaign(pg_url)
    client = TestClient(create_app(tmp_path / "viewer", pg_url), base_url="http://127.0.0.1")
    leased = client.get("/campaign/big?state=leased")
    expired = client.get("/parts/campaign/big?state=expired")
    erin = client.get("/campaign/big?q=erin")
    bad = client.get("/campaign/big?page=x&state=nonsense")
    rows = [r.text.count('class="item ') for r in (leased, expired, erin, bad)]
    assert ([200] * 4, [2, 1, 1, 0]) == ([r.status_code for r in (leased, expired, erin, bad)],
                                         rows)
    assert ("<html" not in expired.text, "no item matches" in bad.text) == (True, True)
