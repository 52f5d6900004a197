"""Harvest: which PRs and comments count, read from GitHub, and the sidecar's cursor file.

Pure selection (``is_candidate``, ``replied_threads``, ``bot_summaries``) is separate from the
PyGithub adapter (``harvest``) so it can be tested on plain data. The cursor lives in
``<root>/ingest/state.json``, apart from any flow's ``flow_state.json``: it outlives the daily
harvest flows and records, per PR, the comment ids already turned into findings.

Merged means what ``flow.github.merged.is_merged`` says, the rule the review queue uses too:
``merged_at`` set (GitHub's merge button), or closed with the ``Merged`` label (PyTorch merges
through its bot, which closes the PR and labels it; GitHub's own ``merged_at`` stays null).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flow.core.errors import OrchestratorError
from flow.github.merged import is_merged
from flow.workflows.ingest.model import Comment, Cursor, PrFeedback, Thread

TITLE_PREFIX = "[Test]"
SUMMARY_BOT = "claude[bot]"
MAX_PULLS = 300  # closed PRs scanned per harvest, newest update first


class CursorError(OrchestratorError):
    code = "ingest_cursor"
    exit_code = 4


def is_candidate(author: str, login: str, title: str, labels: Iterable[str],
                 merged_at: str | None = None, state: str = "closed") -> bool:
    """A merged PR (``is_merged``) by ``author`` whose title starts with ``[Test]``."""
    return login == author and title.startswith(TITLE_PREFIX) and is_merged(state, merged_at, labels)


def replied_threads(comments: list[Comment], parents: dict[int, int | None],
                    processed: set[int]) -> list[Thread]:
    """Inline threads that got at least one reply and hold a comment not yet processed.

    ``parents`` maps a comment id to its ``in_reply_to_id`` (GitHub points every reply at
    the thread's root). A thread whose every comment was processed is skipped; otherwise the
    whole thread is returned, so the agent sees the new reply with its context. Replies whose
    root was deleted (their ``in_reply_to_id`` names no listed comment) are kept as a thread
    with ``root=None`` and ``root_id`` set: the reply is often where the lesson is.
    """
    by_id = {c.id: c for c in comments}
    threads: list[Thread] = []
    for c in sorted(comments, key=lambda c: c.id):
        if parents.get(c.id) is not None:
            continue
        replies = sorted((r for r in comments if parents.get(r.id) == c.id), key=lambda r: r.id)
        if not replies:
            continue
        ids = {c.id, *(r.id for r in replies)}
        if ids <= processed:
            continue
        threads.append(Thread(root=by_id[c.id], replies=replies))
    orphans: dict[int, list[Comment]] = {}
    for c in comments:
        parent = parents.get(c.id)
        if parent is not None and parent not in by_id:
            orphans.setdefault(parent, []).append(c)
    for root_id, replies in sorted(orphans.items()):
        replies.sort(key=lambda r: r.id)
        if not {r.id for r in replies} <= processed:
            threads.append(Thread(root=None, root_id=root_id, replies=replies))
    return threads


def bot_summaries(comments: list[Comment], processed: set[int]) -> list[Comment]:
    """``claude[bot]`` conversation comments not yet processed, oldest first."""
    return sorted((c for c in comments if c.author == SUMMARY_BOT and c.id not in processed),
                  key=lambda c: c.id)


# -- the GitHub adapter ------------------------------------------------------------------------

def _comment(raw: dict[str, Any], inline: bool) -> Comment:
    """A comment from GitHub's JSON. Keys GitHub may omit (a root review comment has no
    `in_reply_to_id`) are read with .get: nothing is ever completed by a second request."""
    user = raw.get("user") or {}
    return Comment(id=raw["id"], author=user.get("login") or "ghost", body=raw.get("body") or "",
                   updated_at=raw.get("updated_at") or raw.get("created_at") or "",
                   path=raw.get("path") if inline else None,
                   line=(raw.get("line") or raw.get("original_line")) if inline else None)


def harvest(client: Any, repo: str, author: str, cursor: Cursor,
            max_pulls: int = MAX_PULLS, log: Any = None) -> list[PrFeedback]:
    """Unprocessed feedback of ``author``'s merged ``[Test]`` PRs in ``repo``, by PR number.

    ``client`` is a ``flow.github.client.GitHubClient``; every request goes through its
    wrapper (raw JSON, no PyGithub objects that could complete themselves lazily). Labels come
    with the PR listing (no request per PR). A PR whose comments answer 404 (deleted or moved
    since it was listed) is skipped and logged; it is looked at again next harvest. PRs with
    nothing new are left out. Raises the ``flow.github.errors`` types (``RateLimited``,
    ``UnknownRepo`` ...).
    """
    from flow.github.errors import GitHubRequestFailed
    from flow.github.reads import list_all

    client.repo(repo)  # UnknownRepo names the repository before anything else
    pulls = list_all(client, f"/repos/{repo}/pulls",
                     {"state": "closed", "sort": "updated", "direction": "desc"}, limit=max_pulls)
    found: list[PrFeedback] = []
    for pull in pulls:
        login = (pull.get("user") or {}).get("login") or ""
        title = pull.get("title") or ""
        labels = [lb.get("name", "") for lb in pull.get("labels") or []]
        if not is_candidate(author, login, title, labels, pull.get("merged_at"),
                            pull.get("state") or "closed"):
            continue
        number = pull["number"]
        done = set(cursor.of(repo, number).processed)
        try:
            inline = list_all(client, f"/repos/{repo}/pulls/{number}/comments")
            convo = list_all(client, f"/repos/{repo}/issues/{number}/comments")
        except GitHubRequestFailed as exc:
            if exc.status != 404:
                raise
            if log is not None:
                log(f"PR #{number}: its comments answered 404; skipped this harvest")
            continue
        parents = {c["id"]: c.get("in_reply_to_id") for c in inline}
        threads = replied_threads([_comment(c, True) for c in inline], parents, done)
        summaries = bot_summaries([_comment(c, False) for c in convo], done)
        if threads or summaries:
            found.append(PrFeedback(number=number, title=title, url=pull.get("html_url") or "",
                                    threads=threads, summaries=summaries))
    return sorted(found, key=lambda p: p.number)


# -- the cursor file -----------------------------------------------------------------------------

def cursor_path(root: Path) -> Path:
    return root / "ingest" / "state.json"


def load_cursor(root: Path) -> Cursor:
    """The cursor, or an empty one if none was written yet; ``CursorError`` if unreadable.

    A damaged cursor is never silently reset (that would re-harvest every comment).
    """
    from pydantic import ValidationError

    path = cursor_path(root)
    if not path.exists():
        return Cursor()
    try:
        return Cursor.model_validate_json(path.read_bytes())
    except (OSError, ValidationError) as exc:
        raise CursorError(f"cannot load the ingest cursor {str(path)!r}: {exc}",
                          "repair or move the file aside (the next harvest then starts over); "
                          "it is kept as it is") from None


def record(root: Path, pr: PrFeedback, repo: str) -> None:
    """Mark ``pr``'s harvested comments processed and move its ``last_checked_at`` forward.

    Idempotent (a set union and a max), so a step re-run after a crash changes nothing more.
    """
    from workspace.atomic import write_atomic

    cursor = load_cursor(root)
    key = f"{repo}#{pr.number}"
    cur = cursor.prs.get(key) or cursor.of(repo, pr.number)
    cur.processed = sorted({*cur.processed, *pr.comment_ids()})
    newest = pr.newest()
    if newest is not None and (cur.last_checked_at is None or newest > cur.last_checked_at):
        cur.last_checked_at = newest
    cursor.prs[key] = cur
    write_atomic(cursor_path(root), cursor.model_dump_json(indent=2).encode("utf-8") + b"\n")
