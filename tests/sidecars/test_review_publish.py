"""The review queue's pure pieces: queue lines, feed models, the comment, archive and rewrite."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from flow.workflows.review_queue import queue as core
from flow.workflows.review_queue import publish as pub
from tests.contract.driver import Driver

REPO = "pytorch/pytorch"

LINES = [
    ("https://github.com/pytorch/pytorch/pull/123", "pytorch/pytorch#123"),
    ("https://github.com/pytorch/pytorch/pull/123/files", "pytorch/pytorch#123"),
    ("  other/repo#7  ", "other/repo#7"),
    ("#42", "pytorch/pytorch#42"),
    ("42", "pytorch/pytorch#42"),
    ("# a note", None),
    ("", None),
    ("https://github.com/pytorch/pytorch/issues/5", None),
    ("pytorch/pytorch#12; rm -rf /", None),
]


@pytest.mark.parametrize("line,key", LINES)
def test_parse_line(line: str, key: str | None) -> None:
    """Queue lines are PR URLs, owner/repo#N, #N or N; anything else is not a PR."""
    ref = core.parse_line(line, REPO)
    assert key == (ref.key if ref else None)


FEEDS = [
    ({"pr": 1, "verdict": "approve", "summary": "ok"}, True),
    ({"failed": True, "reason": "no diff"}, True),
    ({"failed": True}, False),
    ({"pr": 1, "summary": "ok"}, False),
    ({"pr": 1, "verdict": "lgtm", "summary": "ok"}, False),
    ({"pr": 1, "verdict": "approve", "summary": "ok", "findings": [{"severity": "nit",
                                                                    "description": "x"}]}, False),
    ({"pr": 1, "verdict": "approve", "summary": "ok", "extra": 1}, False),
]


@pytest.mark.parametrize("payload,valid", FEEDS)
def test_review_feed_validation(payload: dict[str, object], valid: bool) -> None:
    """A reviewer feed is a complete review or {failed, reason}; typos are refused."""
    try:
        core.ReviewFeed.model_validate(payload)
        accepted = True
    except ValidationError:
        accepted = False
    assert valid == accepted


def _pr(n: int, title: str = "t") -> core.QueuedPR:
    return core.QueuedPR(key=f"{REPO}#{n}", repo=REPO, number=n, url=f"https://x/{n}",
                         title=title, body="", author="alice", test_files=["test/a.py"])


def test_comment_escapes_untrusted_text() -> None:
    """Agent and GitHub text cannot close the details block or mention anyone."""
    review = core.PRReview(pr=1, verdict="comment", summary="ping @bob </details> <b>",
                           findings=[core.Finding(severity="blocker", description="@x",
                                                  file="test/a.py", line=3)])
    body = pub.render_comment("review-queue/d", "d", [(_pr(1, "</summary>"), review)], [])
    assert (1, 1) == (body.count("</details>"), body.count("</summary>"))
    assert "@bob" not in body and "@alice" in body
    assert "- `test/a.py:3` @\u200bx" in body


def test_rewrite_and_archive_are_idempotent() -> None:
    """Rewriting the queue or archiving the same batch twice changes nothing the second time."""
    text = "# queue\n1\npytorch/pytorch#2\n3\n"
    once = pub.rewrite_pending(text, ["pytorch/pytorch#1", "pytorch/pytorch#2"], REPO)
    assert "# queue\n3\n" == once
    assert once == pub.rewrite_pending(once, ["pytorch/pytorch#1", "pytorch/pytorch#2"], REPO)
    review = core.PRReview(pr=1, verdict="approve", summary="ok")
    rows = pub.archive_entries("review-queue/d", "u", [(_pr(1), review)], [])
    first = pub.merge_archive({}, rows)
    assert first == pub.merge_archive(first, rows)


def test_start_refuses_a_missing_queue_file(fake_github: object, tmp_path: Path) -> None:
    """Without pr_needs_review.txt nothing starts and the error says how to create it."""
    tmp_path.mkdir(exist_ok=True)
    call = Driver(tmp_path).call(["--review-queue"])
    assert (2, "bad_input") == (call.code, (call.spec or {})["error"]["code"])
    assert not (tmp_path / "review-queue").exists()
