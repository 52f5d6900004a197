"""Smaller things a person meets: the list on a 390-pixel phone keeps each flow's state in
view, and a server without Graphviz says how to get pictures instead of a broken image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.workspace import call, serving
from tests.terminal import on_a_terminal


def test_the_list_fits_a_phone_with_the_state_in_view(tmp_path: Path, browser: Any) -> None:
    root = tmp_path / "agent_space"
    flow_id = call(root, "start", "notes", "a-rather-long-name-for-a-small-screen")["flow_id"]
    context = browser.new_context(viewport={"width": 390, "height": 800})
    try:
        page = context.new_page()
        with serving(root) as (url, _):
            page.goto(url)
            badge = page.locator(f"tr.flow[data-flow='{flow_id}'] .badge").bounding_box()
            wide = page.evaluate("document.documentElement.scrollWidth")
        assert (True, True) == (badge is not None and badge["x"] + badge["width"] <= 390,
                                wide <= 390)
    finally:
        context.close()


def test_without_graphviz_the_page_says_how_to_get_pictures(tmp_path: Path, page: Any) -> None:
    root = tmp_path / "agent_space"
    flow_id = call(root, "start", "notes", "drawn")["flow_id"]
    bare = tmp_path / "bin"
    bare.mkdir()
    with serving(root, PATH=str(bare)) as (url, _):
        page.goto(f"{url}flow/{flow_id}")
        hint = page.inner_text("#no-pictures")
        images = page.locator("img#diagram").count()
    assert (0, True) == (images, "apt-get install graphviz" in hint)


def test_a_flow_asleep_on_cron_says_why(tmp_path: Path, page: Any) -> None:
    """A flow that answered schedule_cron is shown asleep on its cron job, not "ready", in
    the list, on its page and in status."""
    from tests.web.workspace import env

    root = tmp_path / "agent_space"
    spec = call(root, "start", "notes", "sleepy-wheel")
    assert "schedule_cron" == spec["status"], spec
    _, table = on_a_terminal(root, "status", env=env(), stderr=False)
    with serving(root) as (url, _):
        page.goto(url)
        row = page.locator(f"tr.flow[data-flow='{spec['flow_id']}']")
        listed = (row.locator(".badge").inner_text(), row.locator("td.note").inner_text())
        page.goto(f"{url}flow/{spec['flow_id']}")
        badge = page.inner_text("#badge")
    why = "asleep until the next cron firing (every */7 * * * *)"
    assert (("cron", why), "cron", True) == (listed, badge, why in table)
