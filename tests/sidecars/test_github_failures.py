"""The sidecars when GitHub says no (through the CLI, against the fake GitHub): the review queue
keeps its queue and says how to mend a refused token; ingest reads through the one wrapper
(no lazy completion), skips a PR that answers 404, sleeps on limits and asks on refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import Driver, InProcess
from tests.fakegithub import FakeGitHub
from tests.sidecars.test_ingest import AUTHOR, REPO, convo, inline, pull as ingest_pull
from tests.sidecars.test_review_queue import DAY, TRACK, _driver, pull

QUEUE = ["pytorch/pytorch#1", "pytorch/pytorch#2"]


@pytest.fixture
def queue(fake_github: FakeGitHub, tmp_path: Path) -> Driver:
    fake_github.repo(TRACK).add_pull(1, "tracking", "e" * 40)  # the tracking issue #1 exists
    for n in (1, 2):
        pull(fake_github, n, [f"test/test_{n}.py"])
    return _driver(tmp_path / "ws", QUEUE)


def _queue_text(drv: Driver) -> str:
    return (drv.workspace / "pr_needs_review.txt").read_text()


def _answer(drv: Driver, spec: dict[str, Any], value: str) -> dict[str, Any]:
    call = drv.shell(next(o["command"] for o in spec["options"] if o["value"] == value))
    assert call.spec is not None, call.stderr
    return call.spec


@pytest.mark.parametrize(("status", "message"), [(401, "Bad credentials"),
                                                 (403, "Resource not accessible by personal access token")])
def test_refused_token_at_selection_keeps_the_queue_and_says_how_to_mend(
        fake_github: FakeGitHub, queue: Driver, status: int, message: str) -> None:
    """401/403 reading PRs: need_human naming the fix, the queue untouched; after 'retry' the batch goes on."""
    before = _queue_text(queue)
    fault = fake_github.fault(r"/pulls/\d+$", status, times=None, message=message)
    spec = queue.call(["--review-queue"]).spec
    assert ("need_human", True, before) == (spec["status"], "token" in spec["question"], _queue_text(queue))
    fault.times = 0
    spec = _answer(queue, spec, "retry")
    assert ("need_agent", 2) == (spec["status"], len(spec["tasks"]))


@pytest.mark.parametrize("how", ["outage", "primary", "secondary"])
def test_limits_and_outages_at_selection_sleep(fake_github: FakeGitHub, queue: Driver, how: str) -> None:
    """A 5xx run, a spent budget or a secondary limit: schedule_cron, nothing skipped, no error."""
    if how == "outage":
        fake_github.fault(r"/pulls/\d+$", 502, times=None)
    elif how == "primary":
        fake_github.rate_remaining = 0
    else:
        fake_github.secondary_limit(r"/pulls/\d+$")
    call = queue.call(["--review-queue"], {"ORCHESTRATOR_GITHUB_BACKOFF": "0"})
    assert (0, "schedule_cron", "review-queue/" + DAY) == (call.code, call.spec["status"], call.spec["flow_id"])


def test_refused_comment_post_can_be_stopped_without_losing_the_queue(fake_github: FakeGitHub,
                                                                      queue: Driver) -> None:
    """403 posting the batch comment: need_human; 'stop' ends not_published, the queue file as it was."""
    before = _queue_text(queue)
    fake_github.refuse(rf"/repos/{TRACK}/issues/1/comments$")
    spec = queue.call(["--review-queue"]).spec
    for task in spec["tasks"]:
        number = int(task["pr_key"].rsplit("#", 1)[1])
        Path(task["feed_file"]).write_text(json.dumps(
            {"agent_name": "reviewer", "pr": number, "verdict": "approve", "summary": "ok"}))
        spec = queue.shell(task["feed_command"]).spec
    assert ("need_human", "post") == (spec["status"], spec["question_key"].split(":")[1])
    done = _answer(queue, spec, "stop")
    assert ("done", "not_published", before) == (done["status"], done["outcome"], _queue_text(queue))


@pytest.mark.parametrize("wording", ["abuse", "content"])
def test_a_secondary_limit_on_the_comment_post_waits(fake_github: FakeGitHub, queue: Driver,
                                                     wording: str) -> None:
    """An older secondary-limit wording (no "rate limit" in it) on the batch comment's POST: the
    batch sleeps and then posts once; no question about the token's permission."""
    fake_github.secondary_limit(rf"/repos/{TRACK}/issues/1/comments$", wording=wording, method="POST")
    spec = queue.call(["--review-queue"]).spec
    for task in spec["tasks"]:
        number = int(task["pr_key"].rsplit("#", 1)[1])
        Path(task["feed_file"]).write_text(json.dumps(
            {"agent_name": "reviewer", "pr": number, "verdict": "approve", "summary": "ok"}))
        spec = queue.shell(task["feed_command"]).spec
    assert ("schedule_cron", "github_rate_limited") == (spec["status"], spec["github_wait"]["code"])
    state = Path(spec["workspace"]) / "flow_state.json"
    raw = json.loads(state.read_text())
    raw["data"]["github"]["until"] = "2000-01-01T00:00:00+00:00"
    state.write_text(json.dumps(raw))
    done = queue.shell(spec["resume_command"]).spec
    assert ("done", 1) == (done["status"], fake_github.count(rf"/repos/{TRACK}/issues/1/comments$", "POST") - 1)


@pytest.mark.parametrize("bad", [{}, {"results": []}, {"failed": True}])
def test_codex_batch_result_must_match_its_schema(fake_github: FakeGitHub, queue: Driver,
                                                  bad: dict[str, Any]) -> None:
    """{} (or empty results, or failed without a reason) is refused at the feed; the task stays open."""
    spec = queue.call(["--review-queue", "--harness", "codex"]).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(bad))
    call = queue.shell(task["feed_command"])
    again = queue.call(["--review-queue", "--harness", "codex"]).spec
    assert (2, "invalid_feed", "waiting") == (call.code, call.spec["error"]["code"], again["status"])


# -- ingest ----------------------------------------------------------------------------------

@pytest.fixture
def ingest(fake_github: FakeGitHub, tmp_path: Path) -> Driver:
    import shutil

    from flow.workflows.refactor.rules import DEFAULT_PATH

    rules = tmp_path / "rules.json"
    shutil.copy(DEFAULT_PATH, rules)
    ingest_pull(fake_github, 1, "[Test] decouple test_ops")
    ingest_pull(fake_github, 2, "[Test] decouple test_nn")
    for n in (1, 2):
        root = inline(fake_github, n, f"ROOT{n}: why?", "reviewer")
        inline(fake_github, n, f"REPLY{n}: because", AUTHOR, reply_to=root)
        convo(fake_github, n, f"SUMMARY{n}", "claude[bot]")
    return InProcess(tmp_path / "ws", {"ORCHESTRATOR_INGEST_RULESET": str(rules),
                                    "ORCHESTRATOR_GITHUB_BACKOFF": "0"})


def test_harvest_completes_nothing_lazily(fake_github: FakeGitHub, ingest: Driver) -> None:
    """Root comments without in_reply_to_id cost no extra GET; labels come with the listing."""
    spec = ingest.call(["--ingest-feedback"]).spec
    per_comment = fake_github.count(r"/pulls/comments/\d+$")
    labels = fake_github.count(r"/labels$")
    assert ("need_agent", 0, 0) == (spec["status"], per_comment, labels)


def test_a_pr_whose_comments_answer_404_is_skipped(fake_github: FakeGitHub, ingest: Driver) -> None:
    """PR 1's review comments answer 404: PR 2 is still harvested; no bug."""
    fake_github.fault(rf"/repos/{REPO}/pulls/1/comments$", 404, times=None, message="Not Found")
    spec = ingest.call(["--ingest-feedback"]).spec
    assert ("need_agent", ["triage-PR-2"]) == (
        spec["status"], [t["task_id"].split("-v1-")[1].rsplit("-a", 1)[0] for t in spec["tasks"]])


@pytest.mark.parametrize(("fault", "status"), [
    ({"status": 502}, "schedule_cron"), ({"status": 401, "message": "Bad credentials"}, "need_human"),
    ({"status": 403, "message": "Resource not accessible by personal access token"}, "need_human")])
def test_harvest_failures_have_outcomes(fake_github: FakeGitHub, ingest: Driver, fault: dict[str, Any],
                                        status: str) -> None:
    """An outage sleeps; a refused token asks a person; 'stop' ends honestly, the cursor untouched."""
    fake_github.fault(rf"/repos/{REPO}/pulls$", times=None, **fault)
    call = ingest.call(["--ingest-feedback"])
    assert (0, status) == (call.code, call.spec["status"])
    if status == "need_human":
        done = _answer(ingest, call.spec, "stop")
        assert ("done", "stopped", False) == (done["status"], done["outcome"],
                                              (ingest.workspace / "ingest" / "state.json").exists())


def test_harvest_secondary_limit_waits_a_minute(fake_github: FakeGitHub, ingest: Driver) -> None:
    """A secondary limit without retry-after: the next tick in a minute, not at the hourly reset."""
    fake_github.secondary_limit(rf"/repos/{REPO}/pulls$")
    spec = ingest.call(["--ingest-feedback"]).spec
    assert ("schedule_cron", "*/1 * * * *") == (spec["status"], spec["on_complete"]["cron_interval"])

