"""Phase 7, Finalize: render ``final_summary.md`` from typed inputs. Pure; never raises.

With ``pr`` set, the summary opens with the pull request description
(``flow.workflows.refactor.prtext``); a run that changed nothing (``unchanged``) says so and
proposes no PR.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from flow.workflows.refactor.analysis import TestMove
from flow.workflows.refactor.findings import CheckResult
from flow.workflows.refactor.prtext import PrInput, blockers, render_pr, title


class MovedTests(BaseModel):
    """Tests that moved from one class to another."""

    model_config = ConfigDict(extra="forbid")

    source_class: str
    target_class: str
    tests: list[str]


class AppliedRule(BaseModel):
    """A rule applied, by whom, with how many edits."""

    model_config = ConfigDict(extra="forbid")

    rule_id: str
    title: str
    by: str  # "codemod" or an agent name ("coder")
    changes: int = 0
    #: for an agent's rule: lines the file gained or lost while the rule was worked on (None: not measured)
    changed_lines: int | None = None


class DeferredFailure(BaseModel):
    """A local-test failure the coder deferred as pre-existing or environmental."""

    model_config = ConfigDict(extra="forbid")

    test_name: str
    reason: str
    #: the original's test that fails the same way, run the same way ("" when not checked)
    original_fails_as: str = ""
    #: deferred by a person's answer once the fix rounds were spent (the reason says both runs' results)
    by_person: bool = False


class SummaryInput(BaseModel):
    """Everything ``final_summary.md`` reports."""

    model_config = ConfigDict(extra="forbid")

    file: str
    field: str
    moves: list[MovedTests] = Field(default_factory=list)
    rules: list[AppliedRule] = Field(default_factory=list)
    checks: list[CheckResult] = Field(default_factory=list)
    retries: dict[str, int] = Field(default_factory=dict)  # phase or rule id -> retries used
    deferred: list[DeferredFailure] = Field(default_factory=list)
    local_tests: str = ""  # one line, e.g. "cpu: 42 passed, 3 skipped"
    # Decisions and events a reviewer must see: a gate a person chose to carry on past,
    # a soft-failed test gate, references the codemods could not resolve.
    notes: list[str] = Field(default_factory=list)
    # The gates (escalation keys) a person chose to carry on past, recorded where decided.
    decided_by_person: list[str] = Field(default_factory=list)
    # The absolute, quoted command that starts CI monitoring (from the flow's Commands); required,
    # as a relative default would print a command that does not run from the reader's directory.
    ci_check_command: str
    pr: PrInput | None = None  # the PR description that opens the summary
    unchanged: bool = False  # the run changed no line: no PR to propose
    #: the checkout's uncommitted changes to the files a refactor touches (git's names), said
    #: when this run changed nothing: the change a PR would carry is already there
    uncommitted: list[str] = Field(default_factory=list)
    earlier_summary: str = ""  # the summary of the finished flow whose result they are
    judged_by: str = ""  # which TEST_LINTER judged the file


def moved_tests(moves: list[TestMove]) -> list[MovedTests]:
    """Group moves by (source, target) class, dropping mechanism-only changes within one class."""
    groups: dict[tuple[str, str], list[str]] = {}
    for m in moves:
        if m.old_class != m.new_class:
            groups.setdefault((m.old_class, m.new_class), []).append(m.test)
    return [MovedTests(source_class=s, target_class=t, tests=tests) for (s, t), tests in groups.items()]


def _cell(text: str) -> str:
    """Escape a table cell so a class or test name cannot break the table."""
    return text.replace("|", "\\|").replace("\n", " ")


def render_summary(s: SummaryInput) -> str:
    """Return the Markdown summary for ``s``."""
    out = [f"# Refactoring summary: `{s.file}`", "", f"Field: **{s.field}**", ""]
    if s.unchanged and s.uncommitted:
        out += ["**Unchanged by this run**: it changed no line of the file or of the files that refer "
                "to it. The checkout holds uncommitted changes to "
                + ", ".join(f"`{_cell(f)}`" for f in s.uncommitted)
                + (f", the result of an earlier flow (its summary and PR description: {s.earlier_summary})"
                   if s.earlier_summary else ", made before this run")
                + ": that change is the one a PR would carry; this run found nothing more to change.", ""]
    elif s.unchanged:
        out += ["**Unchanged**: the refactor changed no line of the file or of the files that "
                "refer to it; there is no PR to open.", ""]
    elif s.pr is not None:
        out += ["## Pull request description", "", *render_pr(s.pr), ""]
    if s.judged_by:
        out += [f"Judged by: {s.judged_by}.", ""]
    out += ["## Tests moved", ""]
    if s.moves:
        out += ["| From | To | Tests |", "|---|---|---|"]
        for m in s.moves:
            out.append(f"| {_cell(m.source_class)} | {_cell(m.target_class)} | {len(m.tests)}: {_cell(', '.join(m.tests))} |")
    else:
        out.append("No test changed class.")
    codemods = [r for r in s.rules if r.by == "codemod"]
    out += ["", "## Rules applied by the orchestrator (codemods)", ""]
    out += [f"- `{r.rule_id}` {r.title} ({r.changes} edit{'s' if r.changes > 1 else ''})" if r.changes
            else f"- `{r.rule_id}` {r.title} (nothing to change)" for r in codemods] or ["None."]
    agents = [r for r in s.rules if r.by != "codemod"]
    out += ["", "## Rules applied by agents", ""]
    out += [f"- `{r.rule_id}` {r.title} (applied by the {r.by}, accepted by the checker)" if r.changed_lines is None
            else f"- `{r.rule_id}` {r.title} (the {r.by} changed no line: nothing to apply)" if r.changed_lines == 0
            else f"- `{r.rule_id}` {r.title} (applied by the {r.by}: {r.changed_lines} lines changed, accepted by the checker)"
            for r in agents] or ["None."]
    out += ["", "## Checks", ""]
    if s.checks:
        out += ["| Check | Result | Errors | Warnings |", "|---|---|---|---|"]
        out += [f"| {_cell(c.name)} | skipped: {_cell(c.skipped)} | - | - |" if c.skipped is not None
                else f"| {_cell(c.name)} | {'pass' if c.passed else 'FAIL'} | {c.errors} | {c.warnings} |"
                for c in s.checks]
    else:
        out.append("No checks recorded.")
    out += ["", "## Retries used", ""]
    out += [f"- {k}: {v}" for k, v in sorted(s.retries.items())] or ["None."]
    out += ["", "## Local tests", "", s.local_tests or "Not run (no local test gate for this field)."]
    out += ["", "## Deferred failures", ""]
    out += [f"- `{d.test_name}`: {d.reason}" for d in s.deferred] or ["None."]
    out += ["", "## Decisions and notes", ""]
    out += [f"- {_cell(n)}" for n in dict.fromkeys(s.notes)] or ["None."]
    if s.unchanged and s.uncommitted:
        where = (f"open the PR as {s.earlier_summary} describes" if s.earlier_summary
                 else "open a PR with a description of that change")
        return "\n".join([*out, "", "## Next steps", "",
                          "1. Review the checkout's uncommitted change (`git diff -- "
                          + " ".join(_cell(f) for f in s.uncommitted) + f"`), then commit it and {where}."]) + "\n"
    if s.unchanged:
        return "\n".join([*out, "", "## Next steps", "", "None: nothing changed."]) + "\n"
    first = "1. Review the diff, then create a branch, commit and push it, and open a draft PR."
    if s.pr is not None:
        first = (f"1. Review the diff, then create a branch, commit and push it (this one file), and "
                 f"open a PR titled \"{title(s.pr)}\" with the description above.")
        stops = blockers(s.pr)
        if stops:
            first = ("1. Not ready for a PR yet: " + "; ".join(stops) + ". Do that first; open no "
                     "PR on this summary's test plan.")
    out += [
        "",
        "## Next steps",
        "",
        first,
        f"2. Start CI monitoring: say \"look after the CI\" or run "
        f"`{s.ci_check_command}` (add `--pr-number N` to skip detecting the PR).",
    ]
    step = 3
    if s.deferred and (s.pr is None or any(not d.original_fails_as and not d.by_person for d in s.deferred)):
        out.append(f"{step}. Mention the deferred failures in the PR description; CI will show whether they are pre-existing.")
        step += 1
    if s.decided_by_person:
        gates = ", ".join(f"`{_cell(g)}`" for g in s.decided_by_person)
        out.append(f"{step}. Say in the PR description which gate was passed by a person's decision "
                   f"({gates}), and why (see Decisions and notes).")
    return "\n".join(out) + "\n"
