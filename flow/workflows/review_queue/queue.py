"""The review queue's pure core: queue lines, selection, feed models, the comment, the files.

No network and no disk here: ``select`` takes a ``fetch`` callable; the renderers return text.
The workflow (``flow.workflows.review_queue.declaration``) wires these to GitHub and the workspace.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

import tomllib
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from flow.core.errors import WorkflowInputError
from flow.core.feeds import Feed
from reference import DIR as REFERENCE

PROFILE_DIR = REFERENCE / "review_queue"
DEFAULT_PROFILE = "pytorch"
_REPO = r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+"
_URL = re.compile(rf"^https?://[^/\s]+/(?P<repo>{_REPO})/pull/(?P<n>\d+)(?:[/?#]\S*)?$")
_SHORT = re.compile(rf"^(?P<repo>{_REPO})?#(?P<n>\d+)$")
_BARE = re.compile(r"^(?P<n>\d+)$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Profile(_Strict):
    """``reference/review_queue/<name>.toml``: where PRs live and where results go."""

    default_repo: str = Field(pattern=rf"^{_REPO}$")
    tracking_issue: str = Field(pattern=rf"^{_REPO}#\d+$")
    test_prefixes: list[str] = Field(min_length=1)
    limit: int = Field(ge=1)
    wave_size: int = Field(ge=1)
    body_chars: int = Field(ge=0)

    def tracking(self) -> tuple[str, int]:
        repo, _, number = self.tracking_issue.partition("#")
        return repo, int(number)


def load_profile(name_or_path: str | None = None, profile_dir: Path = PROFILE_DIR) -> Profile:
    """The profile by name or ``.toml`` path; ``WorkflowInputError`` naming the bad keys."""
    name = name_or_path or DEFAULT_PROFILE
    path = Path(name) if name.endswith(".toml") else profile_dir / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in profile_dir.glob("*.toml"))
        raise WorkflowInputError(f"no review-queue profile {name!r}",
                                 f"pass --profile with one of {known} or a .toml path")
    try:
        return Profile.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (tomllib.TOMLDecodeError, ValidationError) as exc:
        raise WorkflowInputError(f"review-queue profile {str(path)!r} is invalid: {exc}",
                                 "fix the named keys in the profile file") from None


class PRRef(_Strict):
    repo: str
    number: int

    @property
    def key(self) -> str:
        """The identity used everywhere (state, archive, in-flight claims): ``owner/repo#N``."""
        return f"{self.repo}#{self.number}"


def parse_line(line: str, default_repo: str) -> PRRef | None:
    """A queue line as a PR: a PR URL, ``owner/repo#N``, ``#N`` or ``N``; None if it is not one.

    Blank lines and ``#``-comments (``# note``) are not PRs either; callers keep them as they are.
    """
    text = line.strip()
    for rx in (_URL, _SHORT, _BARE):
        m = rx.match(text)
        if m:
            repo = m.groupdict().get("repo") or default_repo
            return PRRef(repo=repo, number=int(m["n"]))
    return None


def is_note(line: str) -> bool:
    """Blank lines and comments: kept in the file, never reported as unparseable."""
    text = line.strip()
    return not text or (text.startswith("#") and not _SHORT.match(text))


class PRMeta(_Strict):
    """What selection needs to know about a PR (from GitHub)."""

    repo: str
    number: int
    url: str
    title: str
    body: str
    author: str
    state: Literal["open", "closed"]
    merged: bool
    files: list[str]


class FetchFailed(Exception):
    """``fetch`` could not read a PR (not found, server error): the PR stays pending."""


class StopFetching(FetchFailed):
    """``fetch`` must not be called again in this selection (rate limit): the rest stay pending."""


class QueuedPR(_Strict):
    key: str
    repo: str
    number: int
    url: str
    title: str
    body: str
    author: str
    test_files: list[str]


class NotApplicable(_Strict):
    key: str
    repo: str
    number: int
    url: str
    title: str
    author: str
    reason: Literal["merged", "closed", "no_test_changes"]


class Skipped(_Strict):
    key: str
    reason: str


class Selection(_Strict):
    queue: list[QueuedPR] = []
    not_applicable: list[NotApplicable] = []
    skipped: list[Skipped] = []
    unparseable: list[str] = []


def changes_tests(files: Iterable[str], prefixes: Iterable[str]) -> list[str]:
    """The changed files under a test prefix (``test/``, ``torch/testing/``), in order."""
    pre = tuple(prefixes)
    return [f for f in files if f.startswith(pre)]


def select(lines: list[str], profile: Profile, limit: int, busy: set[str],
           fetch: Callable[[PRRef], PRMeta]) -> Selection:
    """Classify pending PRs first-in first-out until ``limit`` open PRs with test changes queue.

    ``busy`` holds keys another unfinished batch is reviewing: they are skipped (never
    selected twice). Duplicate lines count once. ``fetch`` raising ``FetchFailed`` skips that
    PR; ``StopFetching`` skips it and every later one. Any other exception of ``fetch`` (GitHub
    refusing every request: limits, outages, a bad token) propagates: the caller decides.
    """
    out = Selection()
    seen: set[str] = set()
    stopped: str | None = None
    for line in lines:
        if len(out.queue) >= limit:
            break
        ref = parse_line(line, profile.default_repo)
        if ref is None:
            if not is_note(line):
                out.unparseable.append(line.strip())
            continue
        if ref.key in seen:
            continue
        seen.add(ref.key)
        if ref.key in busy:
            out.skipped.append(Skipped(key=ref.key, reason="in flight in another batch"))
            continue
        if stopped is not None:
            out.skipped.append(Skipped(key=ref.key, reason=stopped))
            continue
        try:
            meta = fetch(ref)
        except StopFetching as exc:
            stopped = str(exc)
            out.skipped.append(Skipped(key=ref.key, reason=stopped))
            continue
        except FetchFailed as exc:
            out.skipped.append(Skipped(key=ref.key, reason=str(exc)))
            continue
        common: dict[str, Any] = {"key": ref.key, "repo": ref.repo, "number": ref.number,
                                  "url": meta.url, "title": meta.title, "author": meta.author}
        tests = changes_tests(meta.files, profile.test_prefixes)
        if meta.merged or meta.state == "closed":
            out.not_applicable.append(NotApplicable(
                **common, reason="merged" if meta.merged else "closed"))
        elif not tests:
            out.not_applicable.append(NotApplicable(**common, reason="no_test_changes"))
        else:
            out.queue.append(QueuedPR(**common, body=meta.body[:profile.body_chars],
                                      test_files=tests))
    return out


# ---- feeds -----------------------------------------------------------------------------

Severity = Literal["blocker", "major", "minor"]
Verdict = Literal["approve", "comment", "request_changes"]


class Finding(_Strict):
    severity: Severity
    description: str = Field(min_length=1)
    file: str | None = None
    line: int | None = None


class PRReview(_Strict):
    """One PR's review: ``{pr, verdict, findings, summary}`` (``repo`` only to disambiguate)."""

    pr: int
    repo: str | None = None
    verdict: Verdict
    findings: list[Finding] = []
    summary: str = Field(min_length=1)


class ReviewFeed(Feed):
    """A reviewer sub-agent's result: a review, or ``{failed: true, reason}``."""

    # The published schema states the two shapes _complete enforces.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"anyOf": [
        {"properties": {"failed": {"const": True},
                        "reason": {"type": "string", "minLength": 1}},
         "required": ["failed", "reason"]},
        {"properties": {"failed": {"const": False}, "pr": {"type": "integer"},
                        "verdict": {"not": {"type": "null"}},
                        "summary": {"type": "string", "minLength": 1}},
         "required": ["pr", "verdict", "summary"]}]})

    failed: bool = False
    reason: str | None = None
    pr: int | None = None
    repo: str | None = None
    verdict: Verdict | None = None
    findings: list[Finding] = []
    summary: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> ReviewFeed:
        if self.failed:
            if not self.reason:
                raise ValueError("a failed review needs a reason; add \"reason\": \"...\"")
        elif self.pr is None or self.verdict is None or not self.summary:
            raise ValueError("a review needs pr, verdict and summary (or failed: true and reason)")
        return self

    def review(self) -> PRReview | None:
        if self.failed:
            return None
        return PRReview(pr=self.pr or 0, repo=self.repo, verdict=self.verdict or "comment",
                        findings=self.findings, summary=self.summary or "")


class BatchFeed(Feed):
    """The Codex executor's result for the whole batch: ``{results: [...]}`` with at least one
    review, or ``{failed: true, reason}``. Anything else (``{}``, empty results without
    ``failed``) is refused at the feed, so the harness can write it again; it never fails
    every PR of the batch.

    A PR missing from ``results`` counts as failed (it stays pending); so does the whole
    batch when ``failed`` is true.
    """

    # The published schema states the two shapes _complete enforces.
    model_config = ConfigDict(extra="forbid", json_schema_extra={"anyOf": [
        {"properties": {"failed": {"const": True},
                        "reason": {"type": "string", "minLength": 1}},
         "required": ["failed", "reason"]},
        {"properties": {"failed": {"const": False}, "results": {"minItems": 1}},
         "required": ["results"]}]})

    results: list[PRReview] = []
    failed: bool = False
    reason: str | None = None

    @model_validator(mode="after")
    def _complete(self) -> BatchFeed:
        if self.failed:
            if not self.reason:
                raise ValueError("a failed batch needs a reason; add \"reason\": \"...\"")
        elif not self.results:
            raise ValueError("a batch result needs \"results\": one review per PR "
                             "({pr, verdict, summary, findings}), or \"failed\": true with a reason")
        return self


def match_review(pr: QueuedPR, reviews: Iterable[PRReview]) -> PRReview | None:
    """The review meant for ``pr``: same number, and same repo when the review names one."""
    found = [r for r in reviews if r.pr == pr.number and r.repo in (None, pr.repo)]
    return found[0] if len(found) == 1 else None
