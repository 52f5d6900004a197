"""Findings files (``<root>/ingest/findings/PR-<N>.md``): deterministic rendering and parsing.

A person approves a finding by turning its ``- [ ] `` into ``- [x] ``. Only a line that starts
at column 0 with a checkbox and a bold finding key counts; every line of text that came from
GitHub or an agent is indented (or collapsed onto the checkbox line after the key), so no
comment or proposal can smuggle in a pre-ticked box.
"""

from __future__ import annotations

import re
from pathlib import Path

from flow.core.errors import WorkflowInputError
from flow.workflows.ingest.model import ApprovedFinding, PrFeedback, Proposal

_BOX = re.compile(r"^- \[(?P<mark>[ xX])\] \*\*(?P<key>F\d+)\*\* rule `(?P<rule>[A-Za-z0-9]+)`: "
                  r"(?P<summary>.*)$")
_KEY = re.compile(r"^- \[[ xX]\] \*\*F(\d+)\*\*", re.MULTILINE)
_FILE = re.compile(r"^PR-(\d+)\.md$")
INDENT = "    "


def findings_path(root: Path, number: int) -> Path:
    return root / "ingest" / "findings" / f"PR-{number}.md"


def pr_number(path: Path) -> int:
    """The PR number in a findings file name ``PR-<N>.md``; ``WorkflowInputError`` otherwise."""
    m = _FILE.match(path.name)
    if not m or int(m.group(1)) <= 0:
        raise WorkflowInputError(f"{str(path)!r} is not a findings file name (PR-<N>.md)",
                                 "pass a file from <workspace>/ingest/findings/, e.g. PR-123.md")
    return int(m.group(1))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _block(text: str) -> list[str]:
    return [f"{INDENT}{line}".rstrip() for line in text.strip().splitlines()] or [INDENT]


def render_section(pr: PrFeedback, proposals: list[Proposal], first_key: int, marker: str) -> str:
    """One harvest's findings for ``pr``, keys ``F<first_key>``..., ending with a newline."""
    lines = [f"## Harvest {marker}", "", f"<!-- ingest: {marker} -->", ""]
    for i, p in enumerate(proposals, start=first_key):
        lines.append(f"- [ ] **F{i}** rule `{p.rule_id}`: {_one_line(p.summary)}")
        lines.append(f"{INDENT}Proposed edit:")
        lines.extend(_block(p.proposed_edit))
        if p.comment_ids:
            lines.append(f"{INDENT}Evidence: comments {', '.join(str(c) for c in p.comment_ids)}")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def render_header(pr: PrFeedback, repo: str, apply_command: str) -> str:
    return "\n".join([
        f"# Ruleset findings from {repo}#{pr.number}",
        "",
        f"PR: {_one_line(pr.title)} <{pr.url}>",
        "",
        "Approve a finding by ticking its box (`- [x]`), then run:",
        "",
        f"{INDENT}{apply_command}",
        "",
        "A person is asked to confirm the ticked findings before the ruleset is edited.",
        "",
    ]) + "\n"


def add_section(existing: str | None, header: str, pr: PrFeedback, proposals: list[Proposal],
                marker: str) -> str | None:
    """The file text with this harvest's section appended; None if it is already there.

    Keys continue after the highest key in ``existing``, so ticks made earlier keep their
    meaning; a section carries ``marker`` (the harvest flow id), which makes a re-run after a
    crash a no-op instead of a duplicate.
    """
    if existing is not None and f"<!-- ingest: {marker} -->" in existing:
        return None
    text = existing if existing is not None else header
    keys = [int(k) for k in _KEY.findall(text)]
    return text.rstrip("\n") + "\n\n" + render_section(pr, proposals, max(keys, default=0) + 1,
                                                       marker)


def parse(text: str) -> list[tuple[bool, ApprovedFinding]]:
    """Every finding in a findings file as (ticked, finding), in file order.

    A finding's details are the indented lines under its checkbox, unindented.
    """
    out: list[tuple[bool, ApprovedFinding]] = []
    current: tuple[bool, str, str, str] | None = None
    details: list[str] = []

    def close() -> None:
        if current is not None:
            ticked, key, rule, summary = current
            out.append((ticked, ApprovedFinding(key=key, rule_id=rule, summary=summary,
                                                details="\n".join(details).strip())))

    for line in text.splitlines():
        m = _BOX.match(line)
        if m:
            close()
            current = (m["mark"] != " ", m["key"], m["rule"], m["summary"].strip())
            details = []
        elif current is not None and line.startswith(INDENT):
            details.append(line[len(INDENT):])
        elif current is not None and line.strip() == "":
            details.append("")
        elif current is not None:
            close()
            current = None
    close()
    keys = [f.key for _, f in out]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise WorkflowInputError(f"findings file names {dupes} more than once",
                                 "give every finding its own key (F1, F2 ...) and run again")
    return out


def ticked(path: Path) -> list[ApprovedFinding]:
    """The ticked findings of the file at ``path``; ``WorkflowInputError`` if it is unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkflowInputError(f"cannot read findings file {str(path)!r}: {exc.strerror or exc}",
                                 "pass the path of a findings file the harvest wrote") from None
    return [f for ok, f in parse(text) if ok]
