"""The review-queue workflow through the CLI, against the fake GitHub on 127.0.0.1."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.review_queue import queue as core
from tests.contract.driver import CRASH_HOOK, Driver
from tests.fakegithub import FakeGitHub

DAY = "2026-03-02"
TRACK = "cosdt/pytorch-initial-pr-reviews"
UPSTREAM = "pytorch/pytorch"


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.repo(TRACK)
    return fake_github


def pull(fake: FakeGitHub, number: int, files: list[str], *, author: str = "alice",
         state: str = "open", merged: bool = False) -> None:
    """A non-draft PR on UPSTREAM from `author`'s fork, changing `files`."""
    p = fake.repo(UPSTREAM).add_pull(
        number, f"b{number}", f"{number:040d}", head_repo=f"{author}/pytorch", draft=False,
        title=f"[Test] decouple test_{number}", body=f"Body of {number}", files=files)
    if merged:
        p.merge()
    elif state == "closed":
        p.close()


def pull_reads(fake: FakeGitHub) -> int:
    """GETs of a single PR so far."""
    return fake.count(r"^/repos/[^/]+/[^/]+/pulls/\d+$", "GET")


def _driver(ws: Path, lines: list[str], day: str = DAY) -> Driver:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "pr_needs_review.txt").write_text("".join(f"{x}\n" for x in lines))
    return Driver(ws, {"REVIEW_QUEUE_DATE": day})


def _review(task: dict[str, Any], findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    number = int(task["pr_key"].rsplit("#", 1)[1])
    return {"agent_name": "reviewer", "pr": number, "verdict": "request_changes",
            "findings": findings if findings is not None else
            [{"severity": "major", "description": f"@onlyCUDA left in PR {number}",
              "file": "test/test_x.py", "line": 7}],
            "summary": f"Review of {number}."}


def _feed(drv: Driver, task: dict[str, Any], result: dict[str, Any],
          env: dict[str, str] | None = None) -> dict[str, Any]:
    Path(task["feed_file"]).write_text(json.dumps(result))
    call = drv.shell(task["feed_command"], env)
    return call.spec or {}


def _comments(fake: FakeGitHub) -> list[str]:
    return [c["body"] for c in fake.repo(TRACK).comments.get(1, [])]


def _meta(n: int, files: list[str], state: str = "open", merged: bool = False) -> core.PRMeta:
    return core.PRMeta(repo=UPSTREAM, number=n, url=f"https://x/{n}", title=f"t{n}", body="",
                       author="a", state=state, merged=merged, files=files)


PROFILE = core.load_profile()
SELECT_CASES = [
    # (lines, limit, busy, metas (None: fetch fails, "stop": rate limited), queue, n/a, skipped)
    (["1", "2", "3"], 10, set(), {1: _meta(1, ["test/test_a.py"]), 2: _meta(2, ["docs/x.md"]),
                                  3: _meta(3, ["test/a.py"], "closed", True)},
     ["1"], [("2", "no_test_changes"), ("3", "merged")], []),
    (["1", "2", "3"], 1, set(), {1: _meta(1, ["torch/testing/_x.py"]), 2: _meta(2, ["test/b"]),
                                 3: _meta(3, ["test/c"])}, ["1"], [], []),
    (["9", "1", "https://github.com/pytorch/pytorch/pull/1", "pytorch/pytorch#4"], 10, {"4"},
     {9: None, 1: _meta(1, ["test/a.py"])}, ["1"], [], ["9", "4"]),
    (["1", "2"], 10, set(), {1: _meta(1, ["test/a.py"], "closed"), 2: _meta(2, ["tools/test/a"])},
     [], [("1", "closed"), ("2", "no_test_changes")], []),
    (["1", "2", "3"], 10, set(), {1: _meta(1, ["test/a.py"]), 2: "stop", 3: _meta(3, ["test/c"])},
     ["1"], [], ["2", "3"]),
]


@pytest.mark.parametrize("lines,limit,busy,metas,queue,na,skipped", SELECT_CASES)
def test_select_rules(lines: list[str], limit: int, busy: set[str], metas: dict[int, Any],
                      queue: list[str], na: list[tuple[str, str]], skipped: list[str]) -> None:
    """FIFO: open PRs with test/ or torch/testing/ changes queue up to the limit; closed, merged
    and test-free PRs are not applicable; unreadable and busy PRs are skipped, and after a rate
    limit every later PR too."""
    def fetch(ref: core.PRRef) -> core.PRMeta:
        meta = metas.get(ref.number)
        if meta is None:
            raise core.FetchFailed("404")
        if meta == "stop":
            raise core.StopFetching("rate limited")
        return meta

    key = {str(n): f"{UPSTREAM}#{n}" for n in range(20)}
    sel = core.select(lines, PROFILE, limit, {key[b] for b in busy}, fetch)
    assert [key[q] for q in queue] == [q.key for q in sel.queue]
    assert [(key[k], r) for k, r in na] == [(n.key, n.reason) for n in sel.not_applicable]
    assert [key[s] for s in skipped] == [s.key for s in sel.skipped]


def test_batch_selects_reviews_and_publishes(gh: FakeGitHub, tmp_path: Path) -> None:
    """One run: selection rules applied, one comment with a details block per reviewed PR and
    the not-applicable PRs listed as 不适用, archive written, processed lines removed."""
    pull(gh, 1, ["test/test_ops.py"], author="alice")
    pull(gh, 2, ["docs/index.md"], author="bob")
    pull(gh, 3, ["test/test_nn.py"], merged=True)
    pull(gh, 4, ["test/x.py"], state="closed")
    pull(gh, 5, ["torch/testing/_internal/common.py"], author="carol")
    pull(gh, 6, ["test/test_later.py"])
    lines = ["https://github.com/pytorch/pytorch/pull/1", "pytorch/pytorch#2", "#3", "4",
             "not a pr", "pytorch/pytorch#99", "5", "6"]
    drv = _driver(tmp_path / "ws", lines)
    spec = drv.call(["--review-queue", "--limit", "2", "--harness", "claude"]).spec
    assert spec is not None and "need_agent" == spec["status"], spec
    assert ["pytorch/pytorch#1", "pytorch/pytorch#5"] == [t["pr_key"] for t in spec["tasks"]]
    assert "spawn" == spec["tasks"][0]["method"]
    assert "<untrusted PR title" in spec["tasks"][0]["prompt"]
    for task in spec["tasks"]:
        spec = _feed(drv, task, _review(task))
    assert "done" == spec["status"], spec
    assert ["pytorch/pytorch#1", "pytorch/pytorch#5"] == spec["reviewed"]
    assert [f"{UPSTREAM}#{n}" for n in (2, 3, 4)] == spec["not_applicable"]
    assert ["not a pr"] == spec["unparseable"]
    (body,) = _comments(gh)
    assert spec["comment_url"].endswith(f"#c{gh.repo(TRACK).comments[1][0]['id']}")
    assert 2 == body.count("<details>")
    assert "@alice" in body and "@carol" in body
    assert "**Major** (1)" in body and "@\u200bonlyCUDA" in body
    assert 3 == body.count("不适用,")
    assert f"<!-- review-queue:review-queue/{DAY} -->" in body
    ws = tmp_path / "ws"
    pending = (ws / "pr_needs_review.txt").read_text().splitlines()
    assert ["not a pr", "pytorch/pytorch#99", "6"] == pending
    archive = json.loads((ws / "pr_reviews" / "pr_reviewed.json").read_text())
    assert {"pytorch/pytorch#1": "reviewed", "pytorch/pytorch#2": "not_applicable",
            "pytorch/pytorch#3": "not_applicable", "pytorch/pytorch#4": "not_applicable",
            "pytorch/pytorch#5": "reviewed"} == {r["key"]: r["status"]
                                                 for r in archive["processed"]}
    saved = json.loads((ws / "pr_reviews" / "pr_5_result.json").read_text())
    assert (5, "Review of 5.") == (saved["pr"], saved["summary"])


def test_claude_reviews_run_in_waves_of_four(gh: FakeGitHub, tmp_path: Path) -> None:
    """Six PRs: a wave of four, then (after all four are fed) a wave of two."""
    for n in range(1, 7):
        pull(gh, n, [f"test/test_{n}.py"])
    drv = _driver(tmp_path / "ws", [str(n) for n in range(1, 7)])
    spec = drv.call(["--review-queue", "--harness", "claude"]).spec or {}
    first = spec["tasks"]
    assert 4 == len(first)
    statuses = [_feed(drv, t, _review(t))["status"] for t in first]
    assert ["waiting", "waiting", "waiting", "need_agent"] == statuses
    spec = drv.call(["--review-queue"]).spec or {}
    assert ["pytorch/pytorch#5", "pytorch/pytorch#6"] == [t["pr_key"] for t in spec["tasks"]]
    for t in spec["tasks"]:
        spec = _feed(drv, t, _review(t))
    assert ("done", 6) == (spec["status"], len(spec["reviewed"]))


def test_codex_gets_one_inline_task_for_the_batch(gh: FakeGitHub, tmp_path: Path) -> None:
    """Codex: one inline instruction naming every PR; a PR left out of results stays pending."""
    for n in (1, 2, 3):
        pull(gh, n, [f"test/test_{n}.py"])
    drv = _driver(tmp_path / "ws", ["1", "2", "3"])
    spec = drv.call(["--review-queue", "--harness", "codex"]).spec or {}
    assert ("need_agent", "inline", 1) == (spec["status"], spec["method"], len(spec["tasks"]))
    assert all(f"pytorch/pytorch#{n}" in spec["instruction"] for n in (1, 2, 3))
    results = [{"pr": n, "verdict": "approve", "findings": [], "summary": f"ok {n}"}
               for n in (1, 3)]
    spec = _feed(drv, spec["tasks"][0], {"results": results})
    assert ("done", [f"{UPSTREAM}#1", f"{UPSTREAM}#3"]) == (spec["status"], spec["reviewed"])
    assert ["2"] == (tmp_path / "ws" / "pr_needs_review.txt").read_text().splitlines()
    assert "pytorch/pytorch#2" not in _comments(gh)[0]


def test_failed_reviewer_is_not_mentioned_and_stays_pending(gh: FakeGitHub, tmp_path: Path) -> None:
    """A reviewer feeding {failed: true} leaves its PR out of the comment and in the queue."""
    pull(gh, 1, ["test/test_1.py"])
    pull(gh, 2, ["test/test_2.py"])
    drv = _driver(tmp_path / "ws", ["1", "2"])
    spec = drv.call(["--review-queue"]).spec or {}
    one, two = spec["tasks"]
    _feed(drv, one, _review(one))
    spec = _feed(drv, two, {"failed": True, "reason": "gh pr diff timed out"})
    assert {"pytorch/pytorch#2": "gh pr diff timed out"} == spec["failed"]
    assert ["2"] == (tmp_path / "ws" / "pr_needs_review.txt").read_text().splitlines()
    (body,) = _comments(gh)
    assert "pytorch/pytorch#2" not in body
    archive = json.loads((tmp_path / "ws" / "pr_reviews" / "pr_reviewed.json").read_text())
    assert ["pytorch/pytorch#1"] == [r["key"] for r in archive["processed"]]


def test_rerun_does_not_reselect_prs_in_flight(gh: FakeGitHub, tmp_path: Path) -> None:
    """A plain re-run the same day re-prints the same wave without reading GitHub again; the next
    day's batch skips the PRs the unfinished batch still holds."""
    pull(gh, 1, ["test/test_1.py"])
    pull(gh, 2, ["test/test_2.py"])
    drv = _driver(tmp_path / "ws", ["1"])
    spec = drv.call(["--review-queue"]).spec or {}
    reads = pull_reads(gh)
    again = drv.call(["--review-queue"]).spec or {}
    assert ("waiting", [t["task_id"] for t in spec["tasks"]]) == \
        (again["status"], [t["task_id"] for t in again["tasks"]])
    assert reads == pull_reads(gh)
    (tmp_path / "ws" / "pr_needs_review.txt").write_text("1\n2\n")
    nxt = drv.call(["--review-queue"], {"REVIEW_QUEUE_DATE": "2026-03-03"}).spec or {}
    assert ["pytorch/pytorch#2"] == [t["pr_key"] for t in nxt["tasks"]]


def _prepare_last_feed(gh: FakeGitHub, ws: Path) -> tuple[Driver, dict[str, Any]]:
    pull(gh, 1, ["test/test_1.py"])
    drv = _driver(ws, ["1"])
    spec = drv.call(["--review-queue"]).spec or {}
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(_review(task)))
    return drv, task


@pytest.mark.slow
def test_comment_posted_once_after_a_kill_and_resume(gh: FakeGitHub, tmp_path: Path) -> None:
    """A SIGKILL at any write of the publishing call, then the call again, leaves one comment."""
    ws = tmp_path / "ws"
    drv, task = _prepare_last_feed(gh, ws)
    snapshot = tmp_path / "snap"
    shutil.copytree(ws, snapshot)
    counter = tmp_path / "count"
    crash = {"PYTHONPATH": f"{CRASH_HOOK}:{Path(__file__).resolve().parents[2]}",
             "ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter)}
    drv.shell(task["feed_command"], {**crash, "ORCHESTRATOR_TEST_CRASH_AT": "999999"})
    points = int(counter.read_text())
    assert points >= 4, points
    # "before" the n-th write differs from "after" the (n-1)-th only by what happened in
    # between (the POST of the comment), so every "before" plus the last "after" covers all.
    posted_before_kill = 0
    for n, when in [*((n, "before") for n in range(1, points + 1)), (points, "after")]:
        shutil.rmtree(ws)
        shutil.copytree(snapshot, ws)
        gh.repo(TRACK).comments.clear()
        counter.unlink()
        killed = drv.shell(task["feed_command"], {**crash, "ORCHESTRATOR_TEST_CRASH_AT": str(n),
                                                  "ORCHESTRATOR_TEST_CRASH_WHEN": when})
        assert killed.code in (-9, 137), (n, when, killed.stderr)
        posted_before_kill += len(_comments(gh))
        # The harness repeats the interrupted call: a feed already applied counts once.
        spec = drv.shell(task["feed_command"]).spec or {}
        assert ("done", 1) == (spec["status"], len(_comments(gh))), (n, when, spec)
        assert [] == (ws / "pr_needs_review.txt").read_text().splitlines()
    assert posted_before_kill >= 1, "no kill fell between the post and its save"


def test_a_pr_the_merge_bot_closed_with_the_merged_label_is_merged(gh: FakeGitHub, tmp_path: Path) -> None:
    """One rule for merged (shared with ingest): the bot's `Merged` label on a closed PR and
    GitHub's merged_at both read 已合并 (merged); a PR closed unmerged stays 已关闭 (closed)."""
    pull(gh, 1, ["test/test_ops.py"])
    pull(gh, 2, ["test/test_nn.py"])
    gh.repo(UPSTREAM).bot_merge(2)
    pull(gh, 3, ["test/test_a.py"], merged=True)
    pull(gh, 4, ["test/test_b.py"], state="closed")
    drv = _driver(tmp_path / "ws", ["1", "2", "3", "4"])
    spec = drv.call(["--review-queue", "--harness", "claude"]).spec
    for task in spec["tasks"]:
        spec = _feed(drv, task, _review(task))
    (body,) = _comments(gh)
    assert ("done", 2, 1) == (spec["status"], body.count("已合并 (merged)"), body.count("已关闭 (closed)"))
