"""Findings files (``<root>/ingest/findings/PR-<N>.md``): deterministic rendering and parsing.

A person approves a finding by turning its ``- [ ] `` into ``- [x] ``, in any form GitHub
renders as a ticked box: ``[x]`` or ``[X]`` after ``-``, ``*``, ``+`` or a number (``1.``,
``1)``), indented by up to three spaces. Only such a line with a bold finding key counts. Every
line of text that came from GitHub or an agent is indented by four spaces (or collapsed onto the
checkbox line after the key), and a line indented that far is a finding's details, never a
finding: no comment or proposal can smuggle in a pre-ticked box.
"""

from __future__ import annotations

import re
from pathlib import Path

from flow.core.errors import WorkflowInputError
from flow.workflows.ingest.model import ApprovedFinding, PrFeedback, Proposal

# A list item's checkbox as GitHub renders one: up to three spaces (four make it text under the
# item above), a bullet or a number, the box.
_ITEM = r"^ {0,3}(?:[-*+]|\d{1,9}[.)])[ \t]+\[(?P<mark>[ xX])\][ \t]+"
_BOX = re.compile(_ITEM + r"\*\*(?P<key>F\d+)\*\* rule `(?P<rule>[A-Za-z0-9]+)`: (?P<summary>.*)$")
_KEY = re.compile(_ITEM + r"\*\*F(?P<n>\d+)\*\*", re.MULTILINE)
# What a person may have meant as a checkbox: read back when no finding is ticked.
_LOOKS = re.compile(r"^\s*(?:(?:[-*+]|\d{1,9}[.)])\s*)?\[[^\]]{0,3}\]")
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
    keys = [int(m["n"]) for m in _KEY.finditer(text)]
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


def approved(path: Path) -> list[ApprovedFinding]:
    """The ticked findings of the file at ``path``, in file order.

    Raises ``WorkflowInputError`` if the file is unreadable, or if no finding is ticked: then
    the error names every checkbox-looking line it read and how it read each (``lines_read``),
    so a person sees why a tick was not taken.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkflowInputError(f"cannot read findings file {str(path)!r}: {exc.strerror or exc}",
                                 "pass the path of a findings file the harvest wrote") from None
    found = [f for ok, f in parse(text) if ok]
    if found:
        return found
    lines = read_back(text)
    seen = "; ".join(f"line {r['line']} ({r['read_as']})" for r in lines[:8])
    more = f"; {len(lines) - 8} more in lines_read" if len(lines) > 8 else ""
    raise WorkflowInputError(
        f"no finding is ticked in {str(path)!r}; nothing to apply. "
        + (f"It read {len(lines)} checkbox line(s), none ticked: {seen}{more}" if lines
           else "It found no checkbox line in it"),
        "tick the box of each finding to apply ('- [ ]' to '- [x]') on the finding's own line, "
        "indented at most three spaces, then run again",
        lines_read=lines)


def read_back(text: str) -> list[dict[str, int | str]]:
    """Every line of ``text`` that looks like a checkbox, numbered from 1, with how it was
    read: a ticked or unticked finding, or why it is no finding."""
    out: list[dict[str, int | str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not _LOOKS.match(line):
            continue
        box = _BOX.match(line)
        if box:
            read_as = f"finding {box['key']}, " + ("ticked" if box["mark"] != " " else "not ticked")
        elif _indent(line) >= len(INDENT):
            read_as = ("not a finding: indented four spaces or more, which marks text under a "
                       "finding (from GitHub or an agent)")
        elif re.match(_ITEM, line) is None:
            read_as = "not a checkbox: the box must be '[ ]', '[x]' or '[X]' after '-', '*', " \
                      "'+' or '1.', with a space on each side"
        else:
            read_as = "not a finding: no '**F<n>** rule `ID`: ' after the box"
        out.append({"line": number, "text": line.strip()[:120], "read_as": read_as})
    return out


def _indent(line: str) -> int:
    """The columns of white space ``line`` starts with (a tab counts to the next four)."""
    wide = line.expandtabs(4)
    return len(wide) - len(wide.lstrip())
