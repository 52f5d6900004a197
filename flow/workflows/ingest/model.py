"""Typed data of the feedback-ingest sidecar: harvested comments, feeds, flow data, cursor.

Everything harvested from GitHub is kept as plain text in these models and reaches an agent
only through ``agents.prompts.Untrusted``; nothing here is ever run or interpolated into a
shell command.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.core.feeds import Feed
from flow.github.access import Access
from flow.github.trouble import Trouble

RULE_ID = r"^(TR\d{3}|new)$"


class Comment(BaseModel):
    """One GitHub comment (an inline review comment or a PR conversation comment)."""

    model_config = ConfigDict(extra="forbid")

    id: int
    author: str
    body: str
    updated_at: str  # ISO 8601 as GitHub sends it
    path: str | None = None  # inline comments only
    line: int | None = None


class Thread(BaseModel):
    """An inline review thread: the root comment and its replies (at least one).

    `root` is None when the thread's first comment was deleted: GitHub keeps the replies, each
    still pointing at the gone root by `in_reply_to_id` (kept here as `root_id`)."""

    model_config = ConfigDict(extra="forbid")

    root: Comment | None
    replies: list[Comment]
    root_id: int | None = None  # the deleted root's id, when `root` is None

    def comments(self) -> list[Comment]:
        return [*([self.root] if self.root is not None else []), *self.replies]

    @property
    def where(self) -> str:
        """path:line of the thread (a reply carries its thread's, as on GitHub)."""
        first = self.root or self.replies[0]
        return f"{first.path}:{first.line}"


class PrFeedback(BaseModel):
    """The unprocessed feedback of one merged PR."""

    model_config = ConfigDict(extra="forbid")

    number: int
    title: str
    url: str
    threads: list[Thread] = []
    summaries: list[Comment] = []  # claude[bot] conversation comments

    def comment_ids(self) -> list[int]:
        ids = [c.id for t in self.threads for c in t.comments()]
        return sorted({*ids, *(c.id for c in self.summaries)})

    def newest(self) -> str | None:
        stamps = [c.updated_at for t in self.threads for c in t.comments()]
        stamps += [c.updated_at for c in self.summaries]
        return max(stamps, default=None)


# -- feeds ------------------------------------------------------------------------------------

class TriageResult(Feed):
    """The triage verdict for one PR: does its feedback teach the ruleset something?"""

    lesson: bool
    reason: str = Field(min_length=1)
    comment_ids: list[int] = Field(default_factory=list)  # the comments with the lesson


class Proposal(BaseModel):
    """One proposed ruleset edit. ``rule_id`` is a catalogue id, or ``new`` for a new rule."""

    model_config = ConfigDict(extra="forbid")

    rule_id: str = Field(pattern=RULE_ID)
    summary: str = Field(min_length=1, max_length=300)
    proposed_edit: str = Field(min_length=1)
    comment_ids: list[int] = []


class AnalysisResult(Feed):
    """The analyst's proposals for one PR (may be empty: no edit is worth making)."""

    findings: list[Proposal]


class EditorResult(Feed):
    """What the ruleset editor says it did."""

    summary: str = Field(min_length=1)
    changed_rules: list[str] = Field(default_factory=list)


# -- flow data -----------------------------------------------------------------------------------

class ApprovedFinding(BaseModel):
    """A finding ticked ``- [x]`` in a findings file, as read at the start of an apply."""

    model_config = ConfigDict(extra="forbid")

    key: str  # F1, F2 ...
    rule_id: str
    summary: str
    details: str


class IngestData(BaseModel):
    """``ctx.data`` of both ingest flows (harvest and apply)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["harvest", "apply"]
    repo: str
    author: str = "KarhouTam"
    ruleset: str  # absolute path of the catalogue the apply edits and validates
    # harvest
    prs: list[PrFeedback] = []
    lessons: list[int] = []  # PR numbers triage called a ruleset lesson
    reasons: dict[str, str] = {}  # PR number -> triage reason (for the analyst prompt)
    proposals: dict[str, list[Proposal]] = {}  # PR number -> the analyst's checked proposals
    drafted: list[str] = []  # findings files written (absolute paths)
    # apply
    pr: int | None = None
    findings_file: str | None = None
    approved: list[ApprovedFinding] = []
    edit_round: int = 1
    max_edit_rounds: int = 3
    last_error: str = ""
    # GitHub: where (fixed at the start) and what went wrong (waits, questions)
    access: Access = Access()
    github: Trouble = Trouble()


# -- the sidecar's own cursor (<root>/ingest/state.json) ---------------------------------------

class PrCursor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    last_checked_at: str | None = None  # newest comment update seen, as GitHub reported it
    processed: list[int] = []  # comment ids already harvested into findings


class Cursor(BaseModel):
    """Per PR (key ``owner/name#N``): where the last harvest stopped."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    prs: dict[str, PrCursor] = {}

    def of(self, repo: str, number: int) -> PrCursor:
        return self.prs.get(f"{repo}#{number}", PrCursor())
