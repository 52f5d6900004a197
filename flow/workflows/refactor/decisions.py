"""Answers to findings: disputes, their decisions, waivers, and the local test gate's verdicts.

A coder (or checker) may answer a finding with a dispute: the finding's id from the prompt
and a reason. The checker decides each dispute (``DisputeDecision``); an upheld dispute
waives the finding (``Waiver``), so the same finding on the same source line is not raised
again, and a fix round whose every finding was disputed and upheld is given back. A person
decides only when the bounded loop runs out, shown every finding's file, line and text.

Pure: models and functions of their inputs; the steps in ``gates`` do the IO.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from flow.workflows.refactor.findings import Finding


class Dispute(BaseModel):
    """``{"finding": "L3", "reason": "..."}``: the finding's id as the prompt listed it."""

    model_config = ConfigDict(extra="forbid")

    finding: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class DisputeDecision(BaseModel):
    """The checker's decision on one dispute: ``upheld`` true means the finding is wrong."""

    model_config = ConfigDict(extra="forbid")

    finding: str = Field(min_length=1)
    upheld: bool
    reason: str = ""


class ShownFinding(BaseModel):
    """A finding as listed in a prompt: id, place, the source line's text, message, waiver key."""

    model_config = ConfigDict(extra="forbid")

    id: str
    code: str
    file: str
    line: int
    text: str
    message: str
    key: str

    def render(self) -> str:
        """``[L3] test/x.py:42 L006: message`` then the source line, fenced by the caller."""
        where = f"{self.file}:{self.line}" if self.line else f"{self.file} (whole file)"
        src = f"\n      | {self.text}" if self.text else ""
        return f"[{self.id}] {where} {self.code}: {self.message}{src}"


class Waiver(BaseModel):
    """A finding judged a false positive, by whom and why (listed in the summary)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    finding: str
    reason: str
    decided_by: Literal["checker", "person"]


def show(findings: list[Finding], source: str, prefix: str) -> list[ShownFinding]:
    """Number ``findings`` as ``{prefix}1..n`` and attach each one's source line.

    The waiver key is code + file + the stripped source line (not the line number, which
    moves when the coder edits above it).
    """
    lines = source.splitlines()
    out: list[ShownFinding] = []
    for n, f in enumerate(findings, 1):
        text = lines[f.line - 1].strip() if 0 < f.line <= len(lines) else ""
        out.append(ShownFinding(id=f"{prefix}{n}", code=f.code, file=f.file, line=f.line, text=text,
                                message=f.message, key=f"{f.code}|{f.file}|{text or f.message}"))
    return out


def unwaived(findings: list[Finding], source: str, waivers: list[Waiver]) -> list[Finding]:
    """``findings`` less those a waiver covers."""
    keys = {w.key for w in waivers}
    shown = show(findings, source, "x")
    return [f for f, s in zip(findings, shown, strict=True) if s.key not in keys]


def check_disputes(disputes: list[Dispute], shown: list[ShownFinding]) -> list[str]:
    """Problems with ``disputes`` against the listed findings: unknown or repeated ids."""
    ids = {s.id for s in shown}
    problems = [f"dispute of unknown finding {d.finding!r}; use an id from the list ({', '.join(sorted(ids))})"
                for d in disputes if d.finding not in ids]
    seen = [d.finding for d in disputes]
    problems += [f"finding {i!r} is disputed more than once" for i in sorted({i for i in seen if seen.count(i) > 1})]
    return problems


def decide(disputes: list[Dispute], decisions: list[DisputeDecision], shown: list[ShownFinding],
           decided_by: Literal["checker", "person"] = "checker") -> tuple[list[Waiver], list[str]]:
    """(waivers for the upheld disputes, notes for rejected or undecided ones).

    A dispute with no decision stands rejected: the finding keeps counting.
    """
    by_id = {s.id: s for s in shown}
    verdict = {d.finding: d for d in decisions}
    waivers: list[Waiver] = []
    notes: list[str] = []
    for d in disputes:
        s = by_id.get(d.finding)
        if s is None:
            continue
        answer = verdict.get(d.finding)
        label = f"{s.code} at {s.file}:{s.line}"
        if answer is not None and answer.upheld:
            waivers.append(Waiver(key=s.key, finding=label, reason=d.reason, decided_by=decided_by))
        else:
            why = answer.reason if answer is not None and answer.reason else "no decision given"
            notes.append(f"dispute of {label} rejected by the {decided_by}: {why}")
    return waivers, notes


def round_given_back(shown: list[ShownFinding], waivers: list[Waiver]) -> bool:
    """True when every finding of a fix round was disputed and upheld: the round burns nothing."""
    keys = {w.key for w in waivers}
    return bool(shown) and all(s.key in keys for s in shown)


def check_verdicts(verdicts: list[tuple[str, str, str | None, str | None]], failing: list[str]) -> list[str]:
    """Problems with the coder's local-test verdicts ``(test_name, verdict, fix_applied, defer_reason)``.

    Every verdict must name one of the ``failing`` tests exactly as listed (the JUnit ids the
    gate sent), once; every failing test needs a verdict; ``fixed`` needs ``fix_applied`` and
    ``deferred`` needs ``defer_reason``.
    """
    known = set(failing)
    names = [v[0] for v in verdicts]
    problems = [f"{n!r} is not one of the failing tests listed; use the names exactly as given"
                for n in names if n not in known]
    problems += [f"{n!r} has more than one verdict" for n in sorted({n for n in names if names.count(n) > 1})]
    problems += [f"{n!r} has no verdict; give it \"fixed\" or \"deferred\"" for n in failing if n not in names]
    for name, verdict, fix, reason in verdicts:
        if verdict == "fixed" and not (fix or "").strip():
            problems.append(f"{name!r} is \"fixed\" without fix_applied; say what you changed")
        if verdict == "deferred" and not (reason or "").strip():
            problems.append(f"{name!r} is \"deferred\" without defer_reason; say why it is not the refactor's")
    return problems
