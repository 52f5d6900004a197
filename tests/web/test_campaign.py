"""``serve --store URL`` shows each campaign of the PostgreSQL store: items by state, the
holder of each lease (an expired one marked), each item's outcome, throughput, what is left
and the report, in headless Chromium over a real database and real campaign commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.web.workspace import ROOT, SCRIPT, serving


def test_a_campaign_page_shows_items_leases_outcomes_and_the_report(
        tmp_path: Path, pg_url: str, page: Any) -> None:
    from workspace import campaign
    from workspace.pgconn import connect

    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": f"i{n}", "argv": ["start", "toy", f"i{n}"]}
                                 for n in range(4)]))
    env = {**os.environ, "ORCHESTRATOR_PLUGINS": "tests.contract.toyflow",
           "ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_WORKER": "alice", "PYTHONPATH": str(ROOT)}
    base = [sys.executable, str(SCRIPT), "--workspace", str(tmp_path / "ws")]
    first = json.loads(subprocess.run([*base, "campaign", "sweep", "--items", str(items)],
                                      capture_output=True, text=True, env=env,
                                      timeout=120).stdout)
    assert "toy/i0" == first["flow_id"], first
    conn = connect(pg_url, fresh=True)
    for worker, outcome in (("bob", "REPRODUCED"), ("carol", "NOT_REPRODUCED")):
        lease = campaign.claim(conn, "sweep", worker, "box", 7)
        assert lease is not None
        assert campaign.complete(conn, "sweep", lease.item_id, lease.token,
                                 {"outcome": outcome})
    late = campaign.claim(conn, "sweep", "dave", "old-box", 9)
    assert late is not None and "i3" == late.item_id
    conn.execute("UPDATE campaign_items SET lease_until = now() - interval '1 minute' "
                 "WHERE campaign = 'sweep' AND item_id = 'i3'")  # dave's machine went away
    with serving(tmp_path / "viewer", ORCHESTRATOR_STORE=pg_url,
                 ORCHESTRATOR_PLUGINS="tests.contract.toyflow") as (url, _):
        page.goto(url)
        page.click("p.campaigns a[href='/campaign/sweep']")
        facts = page.inner_text("#campaign-facts")
        leases = {r.get_attribute("data-item"): r.inner_text()
                  for r in page.locator("tr.lease").all()}
        outcomes = {r.get_attribute("data-item"): r.locator("td").nth(2).inner_text()
                    for r in page.locator("tr.item").all()}
        report = page.inner_text("#report")
        expired = page.locator("tr.lease.expired").count()
    # both items were done within a second: no rate is made up from that
    wanted = ("4 items", "2 done", "2 leased", "0 free", "1 lease expired", "2 left",
              "too soon for a rate")
    assert list(wanted) == [part for part in wanted if part in facts]
    assert ({"i0", "i3"}, True, True, 1) == (set(leases), "alice" in leases["i0"],
                                             "toy/i0" in leases["i0"], expired)
    assert ({"i1": "REPRODUCED", "i2": "NOT_REPRODUCED"}, ["1 NOT_REPRODUCED", "1 REPRODUCED"]
            ) == ({k: v for k, v in outcomes.items() if v}, report.splitlines())


def test_a_rate_is_given_only_once_the_done_items_span_a_minute(tmp_path: Path,
                                                                 pg_url: str) -> None:
    """Two items done at once give no items/hour; the same two done two hours apart give 1."""
    from workspace import campaign
    from workspace.campaignstatus import summary
    from workspace.pgconn import connect

    conn = connect(pg_url, fresh=True)
    campaign.define(conn, "pace", "items", [(f"i{n}", {"argv": ["start", "toy", f"i{n}"]})
                                            for n in range(2)])
    for worker in ("bob", "carol"):
        lease = campaign.claim(conn, "pace", worker, "box", 7)
        assert lease is not None and campaign.complete(conn, "pace", lease.item_id,
                                                       lease.token, {"outcome": "done"})
    soon = summary(conn, "pace")
    conn.execute("UPDATE campaign_items SET leased_at = done_at - interval '2 hours' "
                 "WHERE campaign = 'pace' AND item_id = 'i0'")
    later = summary(conn, "pace")
    assert (None, 1.0) == (soon["throughput_per_hour"], later["throughput_per_hour"])
