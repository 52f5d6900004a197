"""What needs a person, first: ``status --needs-me`` on a terminal and as JSON, and the
dashboard's list (asking, failed, stuck flows on top with counts; search; pages)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.web.test_dashboard import _until
from tests.web.workspace import ROOT, SCRIPT, call, env, feed, serving


@pytest.fixture(scope="module")
def inbox(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A flow asking a person, one whose state cannot be read any more, one whose last feed
    was refused (still healthy: it waits on its agent), one waiting on an agent, one done."""
    root = tmp_path_factory.mktemp("inbox") / "agent_space"
    flows: dict[str, str] = {}
    toy = call(root, "start", "toy", "asks")
    for task in toy["tasks"]:
        spec = feed(task, {"ok": True, "value": 2})
    flows["person"] = feed(spec["tasks"][0], {"approved": True})["flow_id"]
    failing = call(root, "start", "notes", "refused")
    task = failing["tasks"][0]
    Path(task["feed_file"]).write_text("{not json", encoding="utf-8")
    subprocess.run(shlex.split(task["feed_command"]), capture_output=True, env=env(), timeout=300)
    flows["refused"] = failing["flow_id"]
    broken = call(root, "start", "notes", "broken")["flow_id"]
    (root / broken / "flow_state.json").write_text("{torn", encoding="utf-8")
    flows["error"] = broken
    flows["agent"] = call(root, "start", "notes", "idle")["flow_id"]
    done = call(root, "start", "notes", "finished")
    flows["done"] = feed(done["tasks"][0], {"note": "n", "link": "l"})["flow_id"]
    assert (root / flows["refused"] / ".last_error.json").is_file()
    return root, flows


def _status(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(root), "status",
                           "--needs-me", *argv], capture_output=True, text=True, cwd=ROOT,
                          env=env(ORCHESTRATOR_STUCK_S="1"), timeout=120)


def test_status_needs_me_lists_what_needs_a_person_first(
        inbox: tuple[Path, dict[str, str]]) -> None:
    root, flows = inbox
    _until_old(root / flows["agent"] / "flow_state.json")
    out = json.loads(_status(root).stdout)  # piped: JSON
    from tests.terminal import on_a_terminal

    _, table = on_a_terminal(root, "status", "--needs-me", env=env(ORCHESTRATOR_STUCK_S="1"),
                             stderr=False)
    assert ([flows["person"], flows["error"], flows["agent"], flows["refused"]],
            ["asks a person", "state unreadable", "stuck", "stuck"],
            {"person": 1, "error": 0, "unreadable": 1, "stuck": 2}) == (
        [r["flow_id"] for r in out["flows"]], [r["why"] for r in out["flows"]],
        out["needs_me"])
    assert table.startswith("4 need a person: 1 asking, 1 failed, 2 stuck\n")
    assert flows["done"] not in table


def _clone(root: Path, flow_id: str, new_id: str) -> None:
    import shutil

    src, dest = root / flow_id, root / new_id
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".lock"))
    state = dest / "flow_state.json"
    state.write_text(state.read_text().replace(str(src), str(dest)))


def _until_old(path: Path) -> None:
    import calendar

    stamp = json.loads(path.read_text())["updated_at"]
    at = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ"))
    while time.time() - at < 2.5:
        time.sleep(0.2)


def test_the_list_puts_the_inbox_first_and_searches_and_pages(
        inbox: tuple[Path, dict[str, str]], page: Any) -> None:
    root, flows = inbox
    _until_old(root / flows["agent"] / "flow_state.json")
    for i in range(101):  # past one page of 100: copies of a real flow under new ids
        _clone(root, flows["done"], f"notes/bulk-{i:03d}")
    with serving(root, ORCHESTRATOR_STUCK_S="3600") as (url, _):
        page.goto(url)
        first = [r.get_attribute("data-flow") for r in page.locator("tr.flow").all()[:2]]
        refusal = page.inner_text(f"tr.flow[data-flow='{flows['refused']}']")
        counts = page.inner_text("#inbox")
        pager = page.inner_text("nav.pager")
        page.evaluate("window.sameDocument = true")
        page.click("nav.pager a[rel='next']")
        _until(page, lambda: "page 2 of 2" in page.inner_text("nav.pager"))
        second = page.locator("tr.flow").count()
        page.fill("#q", "bulk-042")
        _until(page, lambda: page.locator("tr.flow").count() == 1)
        found = page.get_attribute("tr.flow", "data-flow")
        assert ([flows["person"], flows["error"]], True, "page 1 of 2" in pager, 6,
                "notes/bulk-042", True) == (
            first, counts.startswith("2 need a person"), True, second, found,
            page.evaluate("window.sameDocument === true"))
        assert ("agent", True) == (refusal.split()[1], "last call refused: feed_malformed"
                                   in refusal)
