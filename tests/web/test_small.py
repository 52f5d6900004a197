"""Smaller things a person meets: the list on a 390-pixel phone keeps each flow's state in
view, and a server without Graphviz says how to get pictures instead of a broken image."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.web.workspace import call, serving


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
