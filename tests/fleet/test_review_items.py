"""Review-queue PRs as campaign items: each PR of the queue file a one-PR batch, split among
two harnesses in two workspaces on one PostgreSQL store, against the fake GitHub."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub
from tests.sidecars.test_review_queue import TRACK, UPSTREAM, _comments, _review, pull


def _worker(ws: Path, url: str, name: str) -> Driver:
    ws.mkdir(parents=True, exist_ok=True)
    return Driver(ws, {"ORCHESTRATOR_STORE": url, "ORCHESTRATOR_WORKER": name,
                       "REVIEW_QUEUE_DATE": "2026-03-02"})


def _feed_all(drv: Driver, spec: dict[str, Any]) -> dict[str, Any]:
    for task in spec["tasks"]:
        Path(task["feed_file"]).write_text(json.dumps(_review(task)))
        spec = drv.shell(task["feed_command"]).spec or {}
    return spec


def test_two_harnesses_split_the_review_queue_one_pr_each_time(
        fake_github: FakeGitHub, tmp_path: Path, pg_url: str) -> None:
    """The queue's three PRs (one repeated, one line no PR) are three items; harness a takes
    PR 1, harness b takes PR 2 (docs only: posted as not applicable at once) and then PR 3;
    each reviewed once, one comment per PR with its own marker, every item done once."""
    fake_github.repo(TRACK)
    pull(fake_github, 1, ["test/test_ops.py"])
    pull(fake_github, 2, ["docs/index.md"])
    pull(fake_github, 3, ["test/test_nn.py"], author="carol")
    a = _worker(tmp_path / "A", pg_url, "a")
    (tmp_path / "A" / "pr_needs_review.txt").write_text(
        "https://github.com/pytorch/pytorch/pull/1\nnot a pr\n#2\npytorch/pytorch#1\n3\n")
    b = _worker(tmp_path / "B", pg_url, "b")

    first = a.call(["review-queue", "--campaign", "rq"])
    assert (0, "need_agent") == (first.code, first.spec["status"]), first.stderr
    assert "review-queue/pr-pytorch_pytorch-1" == first.spec["flow_id"]
    assert [f"{UPSTREAM}#1"] == [t["pr_key"] for t in first.spec["tasks"]]
    second = b.call(["campaign", "rq"])  # PR 2 ends within the call; b goes on to PR 3
    assert (0, "review-queue/pr-pytorch_pytorch-3") == (second.code, second.spec["flow_id"])
    assert [f"{UPSTREAM}#3"] == [t["pr_key"] for t in second.spec["tasks"]]

    for drv, spec in ((a, first.spec), (b, second.spec)):
        done = _feed_all(drv, spec)
        assert ("done", "published", True) == (done["status"], done["outcome"],
                                               done["campaign"]["item_done"]), done
    assert "campaign_finished" == a.call(["campaign", "rq"]).spec["outcome"]

    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT item_id, state, done_count, holder FROM campaign_items "
                            "ORDER BY position").fetchall()
    assert [(f"{UPSTREAM}#{n}", "done", 1, w) for n, w in ((1, "a"), (2, "b"), (3, "b"))] \
        == rows  # a done item names the worker that finished it
    bodies = _comments(fake_github)
    assert 3 == len(bodies)
    for n in (1, 2, 3):
        marker = f"<!-- review-queue:review-queue/pr-pytorch_pytorch-{n} -->"
        assert 1 == sum(marker in body for body in bodies)
    assert 2 == sum(body.count("<details>") for body in bodies)
    assert 1 == sum(body.count("不适用,") for body in bodies)
    assert 1 == fake_github.count(r"^/repos/pytorch/pytorch/pulls/3$", "GET")


def test_a_review_campaign_without_a_queue_file_is_refused(
        fake_github: FakeGitHub, tmp_path: Path, pg_url: str) -> None:
    """No pr_needs_review.txt in the workspace: a clear refusal naming it, no campaign."""
    got = _worker(tmp_path / "A", pg_url, "a").call(["review-queue", "--campaign", "rq"])
    assert 2 == got.code and "pr_needs_review.txt" in got.spec["error"]["message"]
    with psycopg.connect(pg_url) as conn:
        assert [] == conn.execute("SELECT name FROM campaigns").fetchall()
