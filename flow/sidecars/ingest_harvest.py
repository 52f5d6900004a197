"""Harvest: which PRs and comments count, read from GitHub, and the sidecar's cursor file.

Pure selection (``is_candidate``, ``replied_threads``, ``bot_summaries``) is separate from the
PyGithub adapter (``harvest``) so it can be tested on plain data. The cursor lives in
``<root>/ingest/state.json``, apart from any flow's ``flow_state.json``: it outlives the daily
harvest flows and records, per PR, the comment ids already turned into findings.

Merged means: closed with the ``Merged`` label (PyTorch merges through its bot, which closes
the PR and labels it; GitHub's own ``merged`` flag stays false).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flow.errors import OrchestratorError
from flow.sidecars.ingest_model import Comment, Cursor, PrFeedback, Thread

TITLE_PREFIX = "[Test]"
MERGED_LABEL = "Merged"
SUMMARY_BOT = "claude[bot]"
MAX_PULLS = 300  # closed PRs scanned per harvest, newest update first


class CursorError(OrchestratorError):
    code = "ingest_cursor"
    exit_code = 4


def is_candidate(author: str, login: str, title: str, labels: Iterable[str]) -> bool:
    """A PR by ``author`` whose title starts with ``[Test]`` and that carries ``Merged``."""
    return login == author and title.startswith(TITLE_PREFIX) and MERGED_LABEL in set(labels)


def replied_threads(comments: list[Comment], parents: dict[int, int | None],
                    processed: set[int]) -> list[Thread]:
    """Inline threads that got at least one reply and hold a comment not yet processed.

    ``parents`` maps a comment id to its ``in_reply_to_id`` (GitHub points every reply at
    the thread's root). A thread whose every comment was processed is skipped; otherwise the
    whole thread is returned, so the agent sees the new reply with its context.
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
    return threads


def bot_summaries(comments: list[Comment], processed: set[int]) -> list[Comment]:
    """``claude[bot]`` conversation comments not yet processed, oldest first."""
    return sorted((c for c in comments if c.author == SUMMARY_BOT and c.id not in processed),
                  key=lambda c: c.id)


# -- the GitHub adapter ------------------------------------------------------------------------

def _stamp(value: Any) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ") if value is not None else ""


def _comment(raw: Any, inline: bool) -> Comment:
    return Comment(id=raw.id, author=raw.user.login if raw.user else "ghost", body=raw.body or "",
                   updated_at=_stamp(raw.updated_at or raw.created_at),
                   path=raw.path if inline else None,
                   line=(raw.line or raw.original_line) if inline else None)


def harvest(client: Any, repo: str, author: str, cursor: Cursor,
            max_pulls: int = MAX_PULLS) -> list[PrFeedback]:
    """Unprocessed feedback of ``author``'s merged ``[Test]`` PRs in ``repo``, by PR number.

    ``client`` is a ``flow.github.client.GitHubClient``. PRs with nothing new are left out.
    Raises the ``flow.github.errors`` types (``RateLimited``, ``UnknownRepo`` ...).
    """
    gh_repo = client.repo(repo)
    pulls = client.call(lambda: list(gh_repo.get_pulls(state="closed", sort="updated",
                                                       direction="desc")[:max_pulls]),
                        what=f"repos/{repo}/pulls")
    found: list[PrFeedback] = []
    for pull in pulls:
        login = pull.user.login if pull.user else ""
        if login != author or not (pull.title or "").startswith(TITLE_PREFIX):
            continue  # cheap filters first: labels cost a request per PR
        labels = client.call(lambda p=pull: [lb.name for lb in p.get_labels()],
                             what=f"repos/{repo}/issues/{pull.number}/labels")
        if not is_candidate(author, login, pull.title, labels):
            continue
        done = set(cursor.of(repo, pull.number).processed)
        inline = client.call(lambda p=pull: list(p.get_review_comments()),
                             what=f"repos/{repo}/pulls/{pull.number}/comments")
        parents = {c.id: c.in_reply_to_id for c in inline}
        threads = replied_threads([_comment(c, True) for c in inline], parents, done)
        convo = client.call(lambda p=pull: list(p.get_issue_comments()),
                            what=f"repos/{repo}/issues/{pull.number}/comments")
        summaries = bot_summaries([_comment(c, False) for c in convo], done)
        if threads or summaries:
            found.append(PrFeedback(number=pull.number, title=pull.title, url=pull.html_url,
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
