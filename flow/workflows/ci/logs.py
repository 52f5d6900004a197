"""Trim a CI job log to its failure lines (pure)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from flow.workflows.ci.patterns import Patterns

# GitHub Actions prefixes each line with an ISO timestamp; drop it so patterns can anchor at ^.
_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")


class LogExcerpt(BaseModel):
    """The failing lines of one job log, with a little context. `lines` empty: none found."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    lines: list[str]
    failure_lines: int
    truncated: bool = False
    infra: str | None = None  # name of a known infra pattern found in the log


def trim_log(text: str, patterns: Patterns) -> LogExcerpt:
    """Keep failure lines (per patterns.logs) plus `context` lines around each, capped at max_lines."""
    rules = patterns.logs
    from flow.core.redact import redact  # a token echoed in a log is never stored or printed

    raw = [_STAMP.sub("", ln) for ln in redact(text).splitlines()]
    keep = [re.compile(r) for r in rules.failure_lines]
    drop = [re.compile(r) for r in rules.not_failure_lines]
    hits = [i for i, ln in enumerate(raw)
            if any(r.search(ln) for r in keep) and not any(r.search(ln) for r in drop)]
    chosen: set[int] = set()
    for i in hits:
        chosen.update(range(max(i - rules.context, 0), min(i + rules.context + 1, len(raw))))
    ordered = sorted(chosen)
    lines: list[str] = []
    prev = -2
    for i in ordered:
        if i != prev + 1 and lines:
            lines.append("...")
        lines.append(raw[i])
        prev = i
    truncated = len(lines) > rules.max_lines
    # Keep the end: the last failures (pytest's short summary) are the most telling.
    return LogExcerpt(lines=lines[-rules.max_lines:], failure_lines=len(hits), truncated=truncated,
                      infra=patterns.infra_match("\n".join(raw)))
