"""Take the README's dashboard screenshots from a workspace of real flows.

    python -m tests.web.screenshots [OUT_DIR]     (default: docs/)

Runs the README's main job, the refactor demo, a toy flow that asks a person, a flow waiting
on an agent and a reproduce flow whose job is still running, serves that workspace with
``orchestrator.py serve`` and photographs, in Debian's headless Chromium, the list of flows
(``dashboard-list.png``) and the main job's page (``dashboard-flow.png``).
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
    print(f"wrote {out / 'dashboard-list.png'} and {out / 'dashboard-flow.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs"))
