"""Take the README's dashboard screenshots from a workspace of real flows.

    python -m tests.web.screenshots [OUT_DIR]     (default: docs/)

Runs the README's main job, the refactor demo, a toy flow that asks a person, a flow waiting
on an agent and a reproduce flow whose job is still running, serves that workspace with
``orchestrator.py serve`` and photographs, in Debian's headless Chromium, the list of flows
with what needs a person on top (``dashboard-list.png``) and the main job's page
(``dashboard-flow.png``); then, on a throw-away PostgreSQL cluster, a campaign of four toy
items (two done, one leased, one whose lease expired) served with ``--store``
(``dashboard-campaign.png``).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.web.conftest import chromium_path
from tests.web.workspace import ROOT, call, build, serving, start_slow_job, stop_jobs


def main(out: Path) -> int:
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "agent_space"
        flows = build(root, hostile=False)
        call(root, "demo", "refactor")
        source = Path(tmp) / "slow"
        source.mkdir()
        slow = start_slow_job(root, source, ticks=400)
        try:
            with serving(root) as (url, _), sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium_path(), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 560})
                page.goto(url)
                page.wait_for_timeout(2500)
                page.screenshot(path=str(out / "dashboard-list.png"), full_page=True)
                page.set_viewport_size({"width": 1400, "height": 1100})
                page.goto(f"{url}flow/{flows['main']}")
                page.wait_for_timeout(1500)
                page.screenshot(path=str(out / "dashboard-flow.png"))
                browser.close()
        finally:
            stop_jobs(root, slow)
    campaign(out)
    print(f"wrote {out / 'dashboard-list.png'}, {out / 'dashboard-flow.png'} and "
          f"{out / 'dashboard-campaign.png'}")
    return 0


def campaign(out: Path) -> None:
    import json
    import os
    import subprocess

    from playwright.sync_api import sync_playwright

    from tests.store.pgserver import Cluster
    from tests.web.workspace import SCRIPT, env
    from workspace import campaign as camp
    from workspace.pgconn import connect

    cluster = Cluster().start()
    try:
        url = cluster.create_db("shots")
        with tempfile.TemporaryDirectory() as tmp:
            items = Path(tmp) / "items.json"
            items.write_text(json.dumps([{"id": f"test_ops_{n}", "argv": ["start", "toy",
                                                                          f"ops{n}"]}
                                         for n in range(4)]))
            subprocess.run([sys.executable, str(SCRIPT), "--workspace", f"{tmp}/a", "campaign",
                            "nightly-sweep", "--items", str(items)], capture_output=True,
                           env={**env(ORCHESTRATOR_STORE=url, ORCHESTRATOR_WORKER="alice"),
                                "PATH": os.environ.get("PATH", "")}, check=True, timeout=120)
            conn = connect(url, fresh=True)
            for worker, outcome in (("bob", "REPRODUCED"), ("carol", "NOT_REPRODUCED")):
                lease = camp.claim(conn, "nightly-sweep", worker, "box-2", 4242)
                assert lease is not None
                camp.complete(conn, "nightly-sweep", lease.item_id, lease.token,
                              {"outcome": outcome})
            camp.claim(conn, "nightly-sweep", "dave", "box-3", 777)
            conn.execute("UPDATE campaign_items SET lease_until = now() - interval '5 minutes' "
                         "WHERE holder = 'dave'")
            with serving(Path(tmp) / "viewer", ORCHESTRATOR_STORE=url) as (web, _), \
                    sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=chromium_path(), headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1200, "height": 720})
                page.goto(f"{web}campaign/nightly-sweep")
                page.screenshot(path=str(out / "dashboard-campaign.png"), full_page=True)
                browser.close()
    finally:
        cluster.destroy()


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs"))
