"""``orchestrator.py serve`` seen in a real headless Chromium: the list of every flow, one
flow's page (diagram, verdict, tasks, live job log), the 404 page, hostile text, read-only."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.web.workspace import (
    FAKE_TOKEN, HOSTILE_LINK, HOSTILE_NOTE, call, serving, start_slow_job, stop_jobs,
)


def _until(page: Any, check: Callable[[], bool], seconds: float = 15) -> None:
    """Wait until ``check()`` holds, polling from the test: the page's CSP forbids the eval
    that Playwright's own wait_for_function uses."""
    for _ in range(int(seconds / 0.2)):
        if check():
            return
        page.wait_for_timeout(200)
    assert check() is True


def _files(root: Path) -> dict[str, str]:
    """Digest of every file of the workspace but the logs and job files a job still writes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()
            and not {"logs", "jobs", "scratch"} & set(p.relative_to(root).parts)}


def test_serve_prints_one_json_object_with_a_local_url(served: tuple[str, dict[str, Any]]
                                                       ) -> None:
    """serve binds 127.0.0.1 on a port the system picks and prints the URL before serving."""
    url, printed = served
    assert (True, "done", True) == (bool(re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)),
                                    printed["status"], printed["read_only"])


def test_the_list_shows_every_flow_with_its_state(served: tuple[str, dict[str, Any]],
                                                  real_flows: tuple[Path, dict[str, str]],
                                                  page: Any) -> None:
    """Every flow of the workspace is a row, with what it waits on as its state."""
    url, _ = served
    root, flows = real_flows
    page.goto(url)
    shown = {r.get_attribute("data-flow"): r.locator(".badge").inner_text()
             for r in page.locator("tr.flow").all()}
    expected = {flows["main"]: "done", flows["hostile_command"]: "done",
                flows["person"]: "person", flows["agent"]: "agent", flows["hostile"]: "done"}
    assert expected == {k: v for k, v in shown.items() if k in expected}
    listed = {r["flow_id"] for r in call(root, "status", "--json")["flows"]}
    assert listed == set(shown)


def test_filters_narrow_the_list_without_a_reload(served: tuple[str, dict[str, Any]],
                                                  real_flows: tuple[Path, dict[str, str]],
                                                  page: Any) -> None:
    """Choosing a workflow and a state re-polls the rows in place (the page is not reloaded)."""
    url, _ = served
    _, flows = real_flows
    page.goto(url)
    page.evaluate("window.sameDocument = true")
    page.select_option("#workflow", "notes")
    _until(page, lambda: page.locator("tr.flow").count() == 2)
    page.select_option("#state", "agent")
    _until(page, lambda: page.locator("tr.flow").count() == 1)
    rows = [r.get_attribute("data-flow") for r in page.locator("tr.flow").all()]
    assert ([flows["agent"]], True) == (rows, page.evaluate("window.sameDocument === true"))


def test_a_flow_started_after_the_page_opened_appears_live(
        served: tuple[str, dict[str, Any]], real_flows: tuple[Path, dict[str, str]],
        page: Any) -> None:
    """The list polls: a new flow shows up without a reload."""
    url, _ = served
    root, _ = real_flows
    page.goto(url)
    page.evaluate("window.sameDocument = true")
    flow_id = call(root, "start", "notes", "latecomer")["flow_id"]
    page.wait_for_selector(f"tr.flow[data-flow='{flow_id}']", timeout=15000)
    assert True is page.evaluate("window.sameDocument === true")


def test_the_main_jobs_page_shows_its_verdict_and_diagram(
        served: tuple[str, dict[str, Any]], real_flows: tuple[Path, dict[str, str]],
        page: Any) -> None:
    """The README's main job: REPRODUCED, the refined_command of verdict.json with a copy
    button, and a Graphviz picture whose active (red) state is the flow's phase."""
    url, _ = served
    root, flows = real_flows
    verdict = json.loads((root / flows["main"] / "verdict.json").read_text())
    page.goto(url)
    page.click(f"a[href='/flow/{flows['main']}']")
    page.wait_for_selector("#diagram")
    _until(page, lambda: page.evaluate("document.getElementById('diagram').naturalWidth") > 0)
    svg = page.request.get(page.evaluate("document.getElementById('diagram').src"))
    active = [t for t in re.findall(r"<title>(\w+)</title>\s*<(?:path|polygon) fill=\"darksalmon\"",
                                    svg.text()) if not t.startswith("legend_")]
    assert (("REPRODUCED", verdict["refined_command"], 1), ["verdict"], "image/svg+xml") == (
        (page.inner_text("#verdict"), page.inner_text("#refined_command"),
         page.locator("button.copy[data-copy='refined_command']").count()),
        active, svg.headers["content-type"])
    assert "assert 1 == 1.5 (AssertionError at tests/test_calc.py:9)" == page.inner_text(
        "#failure")


def test_a_waiting_flows_page_shows_its_task_prompt_and_feed_command(
        served: tuple[str, dict[str, Any]], real_flows: tuple[Path, dict[str, str]],
        page: Any) -> None:
    """A pending task is shown with its prompt and the feed command the harness was given."""
    url, _ = served
    root, flows = real_flows
    printed = json.loads((root / flows["agent"] / ".last_spec.json").read_text())["spec"]
    page.goto(f"{url}flow/{flows['agent']}")
    assert (printed["tasks"][0]["feed_command"], "Write a note about pending and a link to it."
            ) == (page.inner_text("#feed-1"), page.locator("pre.prompt").text_content())


def test_a_person_is_shown_the_answer_command_the_flow_printed(
        served: tuple[str, dict[str, Any]], real_flows: tuple[Path, dict[str, str]],
        page: Any) -> None:
    """The page names the same absolute ``--answer`` command the need_human spec printed."""
    url, _ = served
    root, flows = real_flows
    printed = json.loads((root / flows["person"] / ".last_spec.json").read_text())["spec"]
    page.goto(f"{url}flow/{flows['person']}")
    option = printed["options"][0]
    words = shlex.split(option["command"])
    assert words[-1] == option["value"]
    shown = page.locator("section.question code").last.inner_text()
    assert shlex.join([*words[:-1], "VALUE"]) == shown


def test_a_running_jobs_log_tail_updates_while_it_runs(
        real_flows: tuple[Path, dict[str, str]], tmp_path: Path, page: Any) -> None:
    """A job's page shows its elapsed time and log tail, and both move on without a reload."""
    root = tmp_path / "agent_space"
    source = tmp_path / "slow"
    source.mkdir()
    flow_id = start_slow_job(root, source)
    try:
        with serving(root) as (url, _):
            page.goto(f"{url}flow/{flow_id}")
            page.evaluate("window.sameDocument = true")
            page.wait_for_selector("#jobs pre.tail")
            first = _last_tick(page.inner_text("#jobs pre.tail"))
            later = first
            for _ in range(60):  # the page's CSP forbids eval, so poll from here
                page.wait_for_timeout(300)
                later = _last_tick(page.inner_text("#jobs pre.tail"))
                if later >= first + 4:
                    break
            assert (True, True) == (later >= first + 4,
                                    page.evaluate("window.sameDocument === true"))
    finally:
        stop_jobs(root, flow_id)


def _last_tick(text: str) -> int:
    ticks = re.findall(r"tick (\d+)", text)
    return int(ticks[-1]) if ticks else -1


@pytest.mark.parametrize("path", ["flow/no/such/flow", "flow/..%2F..%2Fetc%2Fpasswd",
                                  "flow/%2Fetc", "static/..%2F..%2Fapp.py", "nowhere",
                                  "diagram.svg?flow=../../x"])
def test_a_missing_flow_or_path_is_the_404_page(served: tuple[str, dict[str, Any]], page: Any,
                                                path: str) -> None:
    """A flow that does not exist, or a path outside the workspace, is a 404 page."""
    url, _ = served
    response = page.goto(url + path)
    assert (404, "Not found") == (response.status, page.inner_text("h1"))


def test_hostile_text_from_a_feed_and_a_command_is_shown_as_text(
        served: tuple[str, dict[str, Any]], real_flows: tuple[Path, dict[str, str]],
        page: Any) -> None:
    """Script tags, event handlers and javascript: links from feeds and commands stay text:
    nothing runs, no link is made of them, and the words are on the page as written."""
    url, _ = served
    _, flows = real_flows
    page.goto(url)
    listed = page.inner_text(f"tr.flow[data-flow='{flows['hostile_command']}'] td.subject")
    page.goto(f"{url}flow/{flows['hostile']}")
    result = json.loads(page.locator("details:has(summary:text('the result object')) pre")
                        .text_content())
    page.goto(f"{url}flow/{flows['hostile_command']}")
    _until(page, lambda: page.get_attribute("#flowbody", "data-polled") is not None, 20)  # a poll answered
    assert ((None, 0, []), True, True) == (
        (page.evaluate("window.pwned"), page.locator("a[href^='javascript']").count(),
         page.dialogs),
        listed.startswith(f"test pytest tests/test_calc.py::test_add -k '{HOSTILE_NOTE[:40]}"),
        result["note"].startswith(HOSTILE_NOTE) and HOSTILE_LINK == result["link"])


def test_no_secret_is_rendered(served: tuple[str, dict[str, Any]],
                               real_flows: tuple[Path, dict[str, str]], page: Any) -> None:
    """A token fed into a flow is masked as the result is read (the state file holds ***)
    and shown as *** on every page."""
    url, _ = served
    root, flows = real_flows
    texts = []
    for path in ["", f"flow/{flows['hostile']}", "parts/flows"]:
        page.goto(url + path)
        texts.append(page.content())
    assert (False, [False, False, False], True) == (
        FAKE_TOKEN in (root / flows["hostile"] / "flow_state.json").read_text(),
        [FAKE_TOKEN in t for t in texts], "token ***" in texts[1])


def test_the_page_changes_nothing(served: tuple[str, dict[str, Any]],
                                  real_flows: tuple[Path, dict[str, str]], page: Any) -> None:
    """Browsing every page leaves the workspace byte-for-byte as it was; writes are refused."""
    url, _ = served
    root, flows = real_flows
    before = _files(root)
    page.goto(url)
    for flow_id in flows.values():
        page.goto(f"{url}flow/{flow_id}")
        page.wait_for_timeout(100)
    refused = []
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        req = urllib.request.Request(f"{url}flow/{flows['agent']}", method=method, data=b"x")
        try:
            urllib.request.urlopen(req, timeout=10)
            refused.append(200)
        except urllib.error.HTTPError as err:
            refused.append(err.code)
    assert ([405] * 4, before) == (refused, _files(root))
