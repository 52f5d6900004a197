"""The review queue's publish texts: the issue comment, the archive, the rewritten queue file.

Pure functions of the batch; the workflow writes what they return. Text from GitHub or agents
is escaped before it reaches Markdown: ``<``/``>`` cannot close the ``<details>`` block and an
``@`` in agent text cannot ping anyone (only the PR author is mentioned, on purpose).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from flow.workflows.review_queue.queue import NotApplicable, PRRef, PRReview, QueuedPR, parse_line

SEVERITIES = (("blocker", "Blocker"), ("major", "Major"), ("minor", "Minor"))
NA_REASON = {"merged": "已合并 (merged)", "closed": "已关闭 (closed)",
             "no_test_changes": "无测试文件改动 (no test changes)"}


def marker(flow_id: str) -> str:
    """The hidden line that identifies this batch's comment (found again after a crash)."""
    return f"<!-- review-queue:{flow_id} -->"


def _safe(text: str) -> str:
    # Untrusted text: no HTML (cannot close <details>), no mentions, one paragraph per line.
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("@", "@\u200b").strip())


def _finding_lines(review: PRReview) -> list[str]:
    lines: list[str] = []
    for sev, title in SEVERITIES:
        items = [f for f in review.findings if f.severity == sev]
        if not items:
            continue
        lines.append(f"**{title}** ({len(items)})")
        lines.append("")
        for f in items:
            where = f.file or ""
            if where and f.line is not None:
                where = f"{where}:{f.line}"
            loc = f"`{_safe(where).replace('`', '')}` " if where else ""
            lines.append(f"- {loc}{_safe(f.description)}")
        lines.append("")
    return lines or ["No findings.", ""]


def _counts(review: PRReview) -> str:
    return ", ".join(f"{sum(f.severity == s for f in review.findings)} {t}"
                     for s, t in SEVERITIES)


def render_comment(flow_id: str, day: str, reviewed: list[tuple[QueuedPR, PRReview]],
                   not_applicable: list[NotApplicable]) -> str:
    """The one comment of a batch: a collapsed block per reviewed PR, then the 不适用 list.

    PRs whose review failed are not passed in and so never mentioned.
    """
    out = [marker(flow_id), f"## PR review batch {day}", "",
           f"{len(reviewed)} reviewed, {len(not_applicable)} not applicable.", ""]
    for pr, review in reviewed:
        out += ["<details>",
                f"<summary>{pr.key}: {_safe(pr.title)} ({review.verdict}; {_counts(review)})"
                f"</summary>", "",
                f"@{pr.author} {pr.url}", "",
                f"**Summary:** {_safe(review.summary)}", "",
                *_finding_lines(review),
                "</details>", ""]
    if not_applicable:
        out += ["### 不适用", ""]
        out += [f"- {na.key} {_safe(na.title)}: 不适用, {NA_REASON[na.reason]}"
                for na in not_applicable]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def archive_entries(flow_id: str, comment_url: str | None,
                    reviewed: list[tuple[QueuedPR, PRReview]],
                    not_applicable: list[NotApplicable]) -> list[dict[str, Any]]:
    """The records this batch adds to ``pr_reviewed.json``."""
    rows: list[dict[str, Any]] = []
    for pr, review in reviewed:
        rows.append({"key": pr.key, "url": pr.url, "title": pr.title, "author": pr.author,
                     "status": "reviewed", "verdict": review.verdict,
                     "findings": len(review.findings), "flow_id": flow_id,
                     "comment_url": comment_url})
    for na in not_applicable:
        rows.append({"key": na.key, "url": na.url, "title": na.title, "author": na.author,
                     "status": "not_applicable", "reason": na.reason, "flow_id": flow_id,
                     "comment_url": comment_url})
    return rows


def merge_archive(existing: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``existing`` archive plus ``rows``; a row of the same (key, flow_id) is replaced, so
    archiving the same batch twice (after a crash) leaves one record per PR."""
    old = list(existing.get("processed", [])) if isinstance(existing, Mapping) else []
    fresh = {(r["key"], r["flow_id"]) for r in rows}
    kept = [r for r in old if (r.get("key"), r.get("flow_id")) not in fresh]
    return {"processed": kept + rows}


def rewrite_pending(text: str, processed: Iterable[str], default_repo: str) -> str:
    """The queue file without the processed PRs; every other line (failures, PRs added since
    the batch started, notes) stays, in order. Idempotent."""
    done = set(processed)
    kept = []
    for line in text.splitlines():
        ref: PRRef | None = parse_line(line, default_repo)
        if ref is not None and ref.key in done:
            continue
        kept.append(line)
    return "\n".join(kept) + ("\n" if kept else "")
