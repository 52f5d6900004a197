"""A ``ci`` flow's page: the pull request's link, its head commit and its check list (name,
status, conclusion, verdict, required or optional, link), from a flow made by really running
``--ci-check`` against the fake GitHub over HTTP, and following the flow as its CI moves on."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

from tests.fakegithub import FakeGitHub
from tests.web.test_dashboard import _until
from tests.web.workspace import call, env, serving

HEAD, BASE = "e" * 40, "f" * 40
CODECOV = "https://codecov.example/o/r/pull/1"
HOSTILE = "javascript:window.pwned = 4"


def _ci(root: Path, fake: FakeGitHub, *argv: str) -> dict[str, Any]:
    return call(root, *argv, ORCHESTRATOR_GITHUB_API=fake.base_url)


def _resume(spec: dict[str, Any], fake: FakeGitHub) -> dict[str, Any]:
    """Run the flow's printed resume command, as a cron firing does."""
    proc = subprocess.run(shlex.split(spec["resume_command"]), capture_output=True, text=True,
                          env=env(ORCHESTRATOR_GITHUB_API=fake.base_url), timeout=300)
    out: dict[str, Any] = json.loads(proc.stdout)
    return out


def test_a_ci_flows_page_lists_the_prs_checks_with_links_and_follows_them(
        fake_github: FakeGitHub, tmp_path: Path, page: Any) -> None:
    """A PR whose test job still runs: the page names the PR (a link to it), its head and
    every check with its state, red and pending first, the required ones marked, the
    codecov status linked and a status whose address is ``javascript:`` shown as text. When
    the job passes and the flow's next tick sees it, the open page shows the check green and
    the flow done, without a reload."""
    repo = fake_github.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    repo.protect("main", ["test", "codecov/patch"])
    wf = repo.add_workflow("pull", ".github/workflows/pull.yml")
    repo.add_run(wf, BASE, jobs=[("test", "success"), ("lint", "success")])
    run = repo.add_run(wf, HEAD, jobs=[("lint", "success"), ("test", None)])
    repo.add_status(HEAD, "codecov/patch", "success", "90% of the diff").target_url = CODECOV
    repo.add_status(HEAD, "sneaky", "success").target_url = HOSTILE
    root = tmp_path / "ws"
    spec = _ci(root, fake_github, "--ci-check", "--repo", "o/r", "--pr-number", "1")
    assert ("schedule_cron", "ci_monitor") == (spec["status"], spec["phase"]), spec
    flow_id = spec["flow_id"]
    with serving(root) as (url, _):
        page.goto(f"{url}flow/{flow_id}")
        pr = page.locator("#pr-link")
        rows = [[cell.inner_text().strip() for cell in row.locator("td").all()]
                for row in page.locator("#checks tr.check").all()]
        links = {a.inner_text(): a.get_attribute("href")
                 for a in page.locator("#checks tr.check a").all()}
        assert ("o/r#1", "https://github.example/o/r/pull/1", HEAD) == (
            pr.inner_text(), pr.get_attribute("href"), page.inner_text("#head-sha"))
        assert [["test pull", "queued", "-", "pending", "required"],
                ["codecov/patch", "completed", "success", "green", "required"],
                ["lint pull", "completed", "success", "green", "optional"],
                [f"sneaky ({HOSTILE})", "completed", "success", "green", "optional"]] == rows
        job = repo.jobs_of(run)[1]
        assert {"test": f"https://github.example/o/r/actions/runs/{run.id}/job/{job.id}",
                "lint": f"https://github.example/o/r/actions/runs/{run.id}/job/"
                        f"{repo.jobs_of(run)[0].id}",
                "codecov/patch": CODECOV} == links
        assert [] == page.dialogs and page.evaluate("window.pwned === undefined")
        job.complete("success")
        done = _resume(spec, fake_github)
        assert ("done", "all_green") == (done.get("status"), done.get("outcome")), done
        _until(page, lambda: page.inner_text("#phase") == "ci_done")
        test_row = page.locator("#checks tr.check").filter(has_text="test").first
        assert ["test pull", "completed", "success", "green", "required"] == [
            c.inner_text().strip() for c in test_row.locator("td").all()]
