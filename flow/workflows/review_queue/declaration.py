"""The ``review-queue`` workflow: one daily batch of PR reviews posted as one issue comment.

select (deterministic: FIFO over ``<root>/pr_needs_review.txt``) -> review (Claude: one
``reviewer`` task per PR in waves of ``wave_size``; Codex: one inline task for the batch) ->
compose (the comment text, frozen in the state) -> post (find the batch's marker comment or
post it; the id is saved) -> archive (``pr_reviews/pr_reviewed.json``, the queue file
rewritten) -> done.

The flow id is ``review-queue/<UTC date>`` (``REVIEW_QUEUE_DATE=YYYY-MM-DD`` overrides the
date), so a plain re-run the same day resumes the same batch. With ``--pr-number N`` (and
``--repo``) the batch is that one PR, ``review-queue/pr-<owner>_<name>-<N>``, its own comment
and no queue file needed: the flow of one campaign item (``review-queue --campaign NAME``
makes an item of each PR in the queue file, so a fleet of harnesses splits the queue). PRs queued by another batch that
has not finished are never selected again (they are "in flight"); a failed review or an
unreadable PR stays in the queue file for the next batch.

GitHub failures (flow.github.trouble): in ``select`` and ``post`` a rate limit or an outage
sleeps (``schedule_cron``) and the same batch carries on later; a refused token or permission
(401/403) or a missing tracking issue asks a person (``need_human``: mend it and ``retry``,
or ``stop``). Nothing is archived and the queue file is untouched until the comment is
posted, so a stopped or failing batch loses no PR; a PR that alone answers 404 is skipped
and stays pending.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from flow.core.errors import WorkflowBug, WorkflowInputError
from flow.core.outcome import Ask, Done, Go, Task
from flow.core.workflow import Workflow
from flow.github.access import Access
from flow.github.trouble import Trouble, guarded
from flow.workflows.review_queue import queue as core
from flow.workflows.review_queue import publish as pub
from workspace.jsonio import digest, dumps, loads

QUEUE_FILE = "pr_needs_review.txt"
REVIEWS_DIR = "pr_reviews"
ARCHIVE_FILE = "pr_reviewed.json"
DATE_ENV = "REVIEW_QUEUE_DATE"
FLOW_PREFIX = "review-queue"
_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ReviewQueueData(BaseModel):
    """``ctx.data``: the batch's inputs, its selection, the reviews and the comment's ids."""

    model_config = ConfigDict(extra="forbid")
    day: str
    profile: core.Profile
    limit: int
    selection: core.Selection | None = None
    busy_elsewhere: dict[str, str] = {}  # PR key -> the unfinished batch that holds it
    mode: Literal["", "spawn", "inline"] = ""
    reviews: dict[str, core.PRReview] = {}
    failed: dict[str, str] = {}  # PR key -> why its review failed (it stays pending)
    comment_digest: str | None = None
    comment_id: int | None = None
    comment_url: str | None = None
    archived: bool = False
    access: Access = Access()  # API URL and token file, fixed at the start
    github: Trouble = Trouble()  # waits and questions after GitHub said no
    stopped: str | None = None  # a person stopped the batch after GitHub refused: why
    only: str | None = None  # the one PR (owner/name#N) of a campaign item's batch


def _day() -> str:
    day = os.environ.get(DATE_ENV) or time.strftime("%Y-%m-%d", time.gmtime())
    if not _DAY.fullmatch(day):
        raise WorkflowInputError(f"{DATE_ENV}={day!r} is not a date",
                                 f"set {DATE_ENV} to YYYY-MM-DD or unset it (today, UTC)")
    return day


def _only(opts: dict[str, Any], profile: core.Profile | None = None) -> core.PRRef | None:
    """The one PR of ``--pr-number N`` (in ``--repo``, else the profile's repository)."""
    number = opts.get("pr_number")
    if number is None:
        return None
    if number < 1:
        raise WorkflowInputError(f"--pr-number {number} names no PR", "pass --pr-number 1 or more")
    repo = opts.get("repo") or (profile or core.load_profile(opts.get("profile"))).default_repo
    return core.PRRef(repo=repo, number=number)


def locate(opts: dict[str, Any], root: Path) -> str:
    """``review-queue/<UTC date>``: one batch a day; ``review-queue/pr-<owner>_<name>-<N>``:
    the batch of one PR (a campaign item)."""
    only = _only(opts)
    if only is not None:
        return f"{FLOW_PREFIX}/pr-{only.repo.replace('/', '_')}-{only.number}"
    return f"{FLOW_PREFIX}/{_day()}"


def start(opts: dict[str, Any], root: Path, settings: Any) -> ReviewQueueData:
    """The batch's inputs; refuses a missing queue file, a bad --limit/--repo or no token."""
    from flow.github.access import access_from
    from flow.workflows.review_queue.github import connect

    profile = core.load_profile(opts.get("profile"))
    if opts.get("repo"):
        try:
            profile = core.Profile.model_validate(
                {**profile.model_dump(), "default_repo": opts["repo"]})
        except ValueError:
            raise WorkflowInputError(f"--repo {opts['repo']!r} is not owner/name",
                                     "pass --repo like pytorch/pytorch") from None
    limit = opts.get("limit") or profile.limit
    if limit < 1:
        raise WorkflowInputError(f"--limit {limit} selects nothing", "pass --limit 1 or more")
    only = _only(opts, profile)
    if only is None and not (root / QUEUE_FILE).is_file():
        raise WorkflowInputError(f"no review queue at {str(root / QUEUE_FILE)!r}",
                                 "create it with one PR per line (a PR URL or owner/repo#N)")
    access = access_from(settings)
    connect(settings, access)  # MissingToken now, before a flow exists
    return ReviewQueueData(day=_day(), profile=profile, limit=1 if only else limit,
                           access=access, only=only.key if only else None)


def claims_elsewhere(root: Path, flow_id: str) -> dict[str, str]:
    """PR keys queued by other review-queue batches that have not finished (key -> flow id).

    Batches moved aside by ``--restart`` (``<day>.old-<stamp>``) hold nothing.
    """
    held: dict[str, str] = {}
    for state_file in sorted((root / FLOW_PREFIX).glob("*/flow_state.json")):
        other = f"{FLOW_PREFIX}/{state_file.parent.name}"
        if other == flow_id or ".old-" in state_file.parent.name:
            continue
        try:
            raw = loads(state_file.read_bytes())
        except (OSError, ValueError):
            continue  # an unreadable batch is reported by its own resume, not here
        if raw.get("result") is not None or raw.get("aborted"):
            continue
        for pr in ((raw.get("data") or {}).get("selection") or {}).get("queue", []):
            held.setdefault(pr["key"], other)
    return held


def _stop(d: ReviewQueueData) -> Any:
    def stop(reason: str) -> Go:
        d.stopped = reason
        return Go("abandon")
    return stop


def _select(ctx: Any) -> Any:
    d: ReviewQueueData = ctx.data
    return guarded(ctx, d.github, "select", lambda: _select_now(ctx, d), _stop(d))


def _select_now(ctx: Any, d: ReviewQueueData) -> Go:
    from flow.workflows.review_queue.github import connect, fetcher

    if d.only is not None:
        lines = [d.only]
    else:
        lines = (ctx.root / QUEUE_FILE).read_text(encoding="utf-8").splitlines() \
            if (ctx.root / QUEUE_FILE).is_file() else []
    d.busy_elsewhere = claims_elsewhere(ctx.root, ctx.flow_id)
    d.selection = core.select(lines, d.profile, d.limit, set(d.busy_elsewhere),
                              fetcher(connect(ctx.settings, d.access)))
    ctx.log(f"selected {len(d.selection.queue)}, not applicable "
            f"{len(d.selection.not_applicable)}, skipped {len(d.selection.skipped)}")
    return Go("selected")


def task_key(pr: core.QueuedPR) -> str:
    return f"pr:{pr.key}"


def reviewer_prompt(pr: core.QueuedPR) -> str:
    from agents.prompts import Untrusted, fence, render

    return render("review_queue_reviewer", repo=pr.repo, number=pr.number,
                  url=fence(pr.url, inline=True), author=fence(pr.author, inline=True), title=Untrusted(pr.title, "PR title"),
                  body=Untrusted(pr.body or "(no description)", "PR description"),
                  test_files=Untrusted("\n".join(pr.test_files), "changed test files"))


def batch_prompt(queue: list[core.QueuedPR]) -> str:
    from agents.prompts import Untrusted, fence, render

    blocks = []
    for i, pr in enumerate(queue, 1):
        blocks.append(f"{i}. {pr.key} ({fence(pr.url, inline=True)}), by "
                      f"{fence(pr.author, inline=True)}; pr={pr.number}, "
                      f"repo={pr.repo}\n"
                      + fence(Untrusted(f"{pr.title}\n\n{pr.body or '(no description)'}\n\n"
                                        + "\n".join(pr.test_files),
                                        f"title description and test files of {pr.key}")))
    return render("review_queue_batch", count=len(queue), prs="\n\n".join(blocks))


def _record(d: ReviewQueueData, pr: core.QueuedPR, review: core.PRReview | None,
            failure: str | None) -> None:
    if review is not None and review.pr != pr.number:
        failure = f"the result names PR {review.pr}, not {pr.number}"
        review = None
    if review is None:
        d.failed[pr.key] = failure or "no result for this PR"
        d.reviews.pop(pr.key, None)
    else:
        d.reviews[pr.key] = review.model_copy(update={"repo": pr.repo})
        d.failed.pop(pr.key, None)


def _review(ctx: Any) -> Ask | Go:
    d: ReviewQueueData = ctx.data
    queue = d.selection.queue if d.selection else []
    if not queue:
        return Go("reviewed")
    if not d.mode:
        d.mode = "inline" if ctx.harness == "codex" else "spawn"
    if d.mode == "inline":
        batch = ctx.result("batch")
        if batch is None:
            return Ask([Task(key="batch", role="reviewer", feed="review_batch",
                             prompt=batch_prompt(queue), inline_for_codex=True,
                             max_attempts=1)], extra={"review_prs": [p.key for p in queue]})
        for pr in queue:
            found = None if batch.failed else core.match_review(pr, batch.results)
            _record(d, pr, found, batch.reason if batch.failed else None)
    else:
        unasked = [pr for pr in queue if ctx.attempt(task_key(pr)) == 0]
        if unasked:
            wave = unasked[:d.profile.wave_size]
            return Ask([Task(key=task_key(pr), role="reviewer", feed="review",
                             prompt=reviewer_prompt(pr), max_attempts=1,
                             extra={"pr_key": pr.key}) for pr in wave],
                       extra={"review_prs": [p.key for p in wave]})
        for pr in queue:
            fed = ctx.result(task_key(pr))
            if fed is None:
                raise WorkflowBug(f"review of {pr.key} has no result after its wave",
                                  "report it with the audit log")
            _record(d, pr, fed.review(), fed.reason)
    from workspace.atomic import write_atomic

    for pr in queue:
        if pr.key in d.reviews:
            write_atomic(result_path(ctx.root, pr, d.profile.default_repo),
                         dumps(d.reviews[pr.key].model_dump(mode="json")))
    return Go("reviewed")


def result_path(root: Path, pr: core.QueuedPR, default_repo: str) -> Path:
    """``<root>/pr_reviews/pr_<N>_result.json`` (other repos: ``pr_<owner>_<name>_<N>_...``)."""
    stem = f"pr_{pr.number}" if pr.repo == default_repo else \
        f"pr_{re.sub(r'[^A-Za-z0-9]+', '_', pr.repo)}_{pr.number}"
    return root / REVIEWS_DIR / f"{stem}_result.json"


def _reviewed(d: ReviewQueueData) -> list[tuple[core.QueuedPR, core.PRReview]]:
    queue = d.selection.queue if d.selection else []
    return [(pr, d.reviews[pr.key]) for pr in queue if pr.key in d.reviews]


def _comment(ctx: Any) -> str:
    d: ReviewQueueData = ctx.data
    na = d.selection.not_applicable if d.selection else []
    return pub.render_comment(ctx.flow_id, d.day, _reviewed(d), na)


def _compose(ctx: Any) -> Go:
    d: ReviewQueueData = ctx.data
    if not _reviewed(d) and not (d.selection and d.selection.not_applicable):
        return Go("nothing")
    body = _comment(ctx)
    ctx.write_text("comment.md", body)
    d.comment_digest = digest(body)
    return Go("composed")


def _post(ctx: Any) -> Any:
    d: ReviewQueueData = ctx.data
    body = _comment(ctx)
    if digest(body) != d.comment_digest:
        raise WorkflowBug("the batch comment changed after it was composed",
                          "report it with the audit log; nothing was posted")
    return guarded(ctx, d.github, "post", lambda: _post_now(ctx, d, body), _stop(d))


def _post_now(ctx: Any, d: ReviewQueueData, body: str) -> Go:
    from flow.workflows.review_queue.github import connect, find_comment, post_comment

    if d.comment_id is None:
        client = connect(ctx.settings, d.access)
        repo, number = d.profile.tracking()
        # A crash after the post but before this state was saved: the comment exists.
        posted = find_comment(client, repo, number, pub.marker(ctx.flow_id))
        if posted is None:
            posted = post_comment(client, repo, number, body)
            ctx.log(f"posted comment {posted.id}")
        else:
            ctx.log(f"found the batch comment {posted.id} already posted")
        d.comment_id, d.comment_url = posted.id, posted.url
    return Go("posted")


def _archive(ctx: Any) -> Go:
    from workspace.atomic import write_atomic

    d: ReviewQueueData = ctx.data
    na = d.selection.not_applicable if d.selection else []
    reviewed = _reviewed(d)
    archive = ctx.root / REVIEWS_DIR / ARCHIVE_FILE
    existing = loads(archive.read_bytes()) if archive.is_file() else {}
    rows = pub.archive_entries(ctx.flow_id, d.comment_url, reviewed, na)
    write_atomic(archive, dumps(pub.merge_archive(existing, rows)))
    queue_file = ctx.root / QUEUE_FILE
    text = queue_file.read_text(encoding="utf-8") if queue_file.is_file() else ""
    done = [pr.key for pr, _ in reviewed] + [n.key for n in na]
    new = pub.rewrite_pending(text, done, d.profile.default_repo)
    if new != text:
        write_atomic(queue_file, new.encode("utf-8"))
    d.archived = True
    return Go("archived")


def _finish(ctx: Any) -> Done:
    d: ReviewQueueData = ctx.data
    sel = d.selection or core.Selection()
    if d.stopped is not None:
        return Done({"outcome": "not_published", "reason": d.stopped, "comment_url": None,
                     "reviewed": [pr.key for pr, _ in _reviewed(d)], "failed": d.failed,
                     "github_problems": d.github.history},
                    [f"Nothing was posted and nothing left {QUEUE_FILE}: GitHub refused "
                     f"({d.stopped}). Mend the token or permission, then run --review-queue "
                     f"with --restart; the reviews written under {REVIEWS_DIR}/ stay."])
    stays = sorted(set(d.failed) | {s.key for s in sel.skipped})
    result = {
        "outcome": "published" if d.comment_url else "nothing_to_publish",
        "comment_url": d.comment_url,
        "reviewed": [pr.key for pr, _ in _reviewed(d)],
        "not_applicable": [n.key for n in sel.not_applicable],
        "failed": d.failed,
        "skipped": [s.model_dump() for s in sel.skipped],
        "unparseable": sel.unparseable,
        "still_pending": stays,
    }
    steps = [f"The batch comment is at {d.comment_url}." if d.comment_url else
             "Nothing was posted: no PR was reviewed and none was not-applicable. This is "
             "today's batch; to run another one today, add --restart."]
    if stays:
        steps.append(f"{len(stays)} PR(s) stay in {QUEUE_FILE}; the next --review-queue "
                     f"run (tomorrow's batch) picks them up.")
    held = sorted(set(d.busy_elsewhere.values()))
    if held:
        steps.append("Unfinished earlier batch(es) still hold PRs: resume them with "
                     + "; ".join(ctx.cmds.cli("--flow", f, "--resume") for f in held))
    return Done(result, steps)


WORKFLOW = Workflow(
    name="review-queue",
    states=("select", "review", "compose", "post", "archive", "done"),
    transitions=(("selected", "select", "review"), ("reviewed", "review", "compose"),
                 ("composed", "compose", "post"), ("nothing", "compose", "done"),
                 ("posted", "post", "archive"), ("archived", "archive", "done"),
                 ("abandon", "select", "done"), ("abandon", "post", "done")),
    initial="select",
    terminal=frozenset({"done"}),
    steps={"select": _select, "review": _review, "compose": _compose, "post": _post,
           "archive": _archive, "done": _finish},
    feeds={"review": core.ReviewFeed, "review_batch": core.BatchFeed},
    data_model=ReviewQueueData,
    asks_person=frozenset({"select", "post"}),
    sleeps=frozenset({"select", "post"}),
    skill="pytorch-test-refactoring",
    description="Daily batch: review queued PRs with changed tests, post one comment.",
)
