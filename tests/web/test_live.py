"""The flow page is live as a whole and its refreshes keep what a person holds: a focused
copy button keeps the focus and selected text stays selected across refreshes that changed
the page; the phase, the badge and the tasks follow the flow when it moves on; a job that
ended is shown finished, its log still reachable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.web.test_dashboard import _until
from tests.web.workspace import POLL_PERIOD_S, call, feed, serving, start_slow_job, stop_jobs


def _polled(page: Any) -> str:
    return str(page.get_attribute("#flowbody", "data-polled") or "")


def test_focus_and_selection_survive_refreshes(tmp_path: Path, page: Any) -> None:
    """While a job's log moves on (so each refresh changes the page), a focused copy button
    stays focused and a selected command stays selected through two refreshes."""
    root = tmp_path / "agent_space"
    source = tmp_path / "slow"
    source.mkdir()
    flow_id = start_slow_job(root, source)
    try:
        with serving(root) as (url, _):
            page.goto(f"{url}flow/{flow_id}")
            page.wait_for_selector("#jobs pre.tail")
            command = page.inner_text("#resume_command")
            page.focus("button.copy[data-copy='resume_command']")
            page.evaluate("""() => { const r = document.createRange();
                r.selectNodeContents(document.getElementById('resume_command'));
                const s = window.getSelection(); s.removeAllRanges(); s.addRange(r); }""")
            tails = [page.inner_text("#jobs pre.tail")]
            for _ in range(2):  # two refresh cycles, each bringing a changed log tail
                before = _polled(page)
                _until(page, lambda b=before: _polled(page) not in ("", b)
                       and page.inner_text("#jobs pre.tail") != tails[-1], 20)
                tails.append(page.inner_text("#jobs pre.tail"))
            focused = page.evaluate("document.activeElement.getAttribute('data-copy')")
            selected = page.evaluate("window.getSelection().toString()")
            assert (3, "resume_command", command) == (len(set(tails)), focused, selected)
    finally:
        stop_jobs(root, flow_id)


def test_the_page_follows_its_flow(tmp_path: Path, page: Any) -> None:
    """A flow fed while its page is open: phase, badge and tasks change without a reload."""
    root = tmp_path / "agent_space"
    spec = call(root, "start", "notes", "moving")
    with serving(root) as (url, _):
        page.goto(f"{url}flow/{spec['flow_id']}")
        page.evaluate("window.sameDocument = true")
        before = (page.inner_text("#phase"), page.inner_text("#badge"),
                  page.locator(".task").count())
        feed(spec["tasks"][0], {"note": "written", "link": "https://example.org/n"})
        _until(page, lambda: page.inner_text("#badge") == "done", 20)
        after = (page.inner_text("#phase"), page.inner_text("#badge"),
                 page.locator(".task").count())
        raw = json.loads((root / spec["flow_id"] / "flow_state.json").read_text())
        assert ((before[0], "agent", 1), (raw["phase"], "done", 0), True) == (
            before, after, page.evaluate("window.sameDocument === true"))


def test_a_finished_job_is_shown_finished_with_its_log(tmp_path: Path, page: Any) -> None:
    """The job's supervisor wrote its result; no call took it yet: the list and the page say
    finished with the exit code, not running, and the job's log is a link that answers."""
    root = tmp_path / "agent_space"
    source = tmp_path / "slow"
    source.mkdir()
    flow_id = start_slow_job(root, source, ticks=8)
    jobs = json.loads((root / flow_id / "flow_state.json").read_text())["jobs"]
    job_id = next(j for j in jobs if j.startswith("stage1"))
    result = root / flow_id / "jobs" / f"{job_id}.result.json"
    with serving(root) as (url, _):
        page.goto(f"{url}flow/{flow_id}")
        _until(page, result.exists, 30)
        _until(page, lambda: page.locator(f"tr.job.finished[data-job='{job_id}']").count()
               == 1, 20)
        row = page.inner_text(f"tr.job.finished[data-job='{job_id}']")
        href = page.get_attribute(f"tr.job[data-job='{job_id}'] a", "href")
        log = page.request.get(url.rstrip("/") + str(href))
        page.goto(url)
        note = page.inner_text(f"tr.flow[data-flow='{flow_id}'] td.note")
        assert (0, True, "tick 7" in log.text()) == (
            page.locator(f"tr.flow[data-flow='{flow_id}'] .elapsed").count(),
            "finished (exit 1)" in note, True)
        assert "1" in row and "a --resume takes its result" in row


def test_one_refresh_in_flight_per_part(tmp_path: Path, page: Any) -> None:
    """While the server has not answered a poll, the page sends no other for that part: the
    list's polls held unanswered for three poll periods are still one request; answered, the
    next poll follows."""
    root = tmp_path / "agent_space"
    call(root, "start", "notes", "held")
    held: list[Any] = []
    with serving(root) as (url, _):
        page.route("**/parts/flows*", lambda route: held.append(route))
        page.goto(url)
        _until(page, lambda: len(held) >= 1, 20)
        page.wait_for_timeout(int(3.5 * POLL_PERIOD_S * 1000))  # the property is about time passing
        asked = len(held)
        for route in held:
            route.continue_()
        _until(page, lambda: len(held) >= 2, 20)
        period = page.get_attribute("html", "data-poll-period")
    assert (1, True, str(int(POLL_PERIOD_S * 1000))) == (asked, len(held) >= 2, period)
