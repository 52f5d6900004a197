"""The ``ingest`` workflow: reviewer feedback on merged ``[Test]`` PRs -> approved ruleset edits.

Two flows share this declaration:

- harvest (``--ingest-feedback [--repo owner/name]``, flow ``ingest/harvest-<UTC date>``):
  ``harvest`` reads GitHub (flow.workflows.ingest.harvest) -> ``triage`` (one triage task per
  PR: is this a ruleset lesson?) -> ``analyse`` (one analyst task per lesson: which rule,
  which edit) -> ``draft`` writes ``<root>/ingest/findings/PR-<N>.md`` (one ``- [ ]`` box per
  finding) and moves the cursor ``<root>/ingest/state.json`` -> ``harvested``.
- apply (``--apply-ingest FINDINGS_FILE``, flow ``ingest/apply-PR-<N>``): the ticked findings
  are read at start (none ticked: refused, nothing written) -> ``confirm`` asks a person
  (need_human) to apply exactly those -> ``edit`` (a ruleset_editor task; the orchestrator
  then checks the catalogue still loads and sends it back, at most ``max_edit_rounds``
  times) -> ``applied``, or ``refused`` (the ruleset restored from the copy taken before the
  first edit), or ``declined``.

Every agent task is ``inline`` under Codex (openai/codex#25458) and a spawn under Claude.
Comment text reaches prompts only through ``Untrusted``.

Settings (environment): GITHUB_TOKEN / GH_TOKEN, ORCHESTRATOR_GITHUB_API,
ORCHESTRATOR_INGEST_AUTHOR (default KarhouTam), ORCHESTRATOR_INGEST_RULESET (default the
bundled reference/refactor/rules.json).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from agents.prompts import Untrusted, render
from flow.core.errors import WorkflowInputError
from flow.core.outcome import Ask, Done, Go, Human, Task
from flow.core.workflow import Workflow
from flow.workflows.ingest import findings as findings
from flow.workflows.ingest import harvest as harvesting
from flow.workflows.ingest.model import (
    AnalysisResult, EditorResult, IngestData, PrFeedback, TriageResult,
)

DEFAULT_REPO = "pytorch/pytorch"
DEFAULT_AUTHOR = "KarhouTam"
AUTHOR_ENV = "ORCHESTRATOR_INGEST_AUTHOR"
RULESET_ENV = "ORCHESTRATOR_INGEST_RULESET"
BACKUP = "rules.before.json"
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_LOGIN = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")


# -- locating and starting ---------------------------------------------------------------------

def _repo(opts: Mapping[str, Any]) -> str:
    repo = opts.get("repo") or DEFAULT_REPO
    if not _REPO.fullmatch(repo):
        raise WorkflowInputError(f"--repo {repo!r} is not owner/name",
                                 "pass --repo OWNER/NAME, e.g. --repo pytorch/pytorch")
    return str(repo)


def locate(opts: dict[str, Any], root: Path) -> str:
    """``ingest/apply-PR-<N>`` for ``--apply-ingest``, else ``ingest/harvest-<UTC date>``."""
    if opts.get("apply_ingest"):
        return f"ingest/apply-PR-{findings.pr_number(Path(opts['apply_ingest']))}"
    _repo(opts)
    return f"ingest/harvest-{datetime.now(timezone.utc).date().isoformat()}"


def _ruleset(settings: Mapping[str, str]) -> Path:
    from flow.workflows.refactor.rules import DEFAULT_PATH

    return Path(settings.get(RULESET_ENV) or DEFAULT_PATH).resolve()


def start(opts: dict[str, Any], root: Path, settings: Mapping[str, str]) -> IngestData:
    """Initial data. An apply reads the ticked findings now; a harvest checks for a token."""
    repo, ruleset = _repo(opts), str(_ruleset(settings))
    if opts.get("apply_ingest"):
        path = Path(opts["apply_ingest"]).expanduser().resolve()
        number = findings.pr_number(path)
        approved = findings.approved(path)  # none ticked: refused, naming the lines read
        return IngestData(mode="apply", repo=repo, ruleset=ruleset, pr=number,
                          findings_file=str(path), approved=approved)
    author = settings.get(AUTHOR_ENV) or DEFAULT_AUTHOR
    if not _LOGIN.fullmatch(author):
        raise WorkflowInputError(f"{AUTHOR_ENV}={author!r} is not a GitHub login",
                                 f"unset it or set e.g. {AUTHOR_ENV}={DEFAULT_AUTHOR}")
    from flow.github.access import access_from, connect_with

    access = access_from(settings)
    connect_with(access, settings)  # MissingToken now, before anything is written
    harvesting.load_cursor(root)  # a damaged cursor stops the start, not a later step
    return IngestData(mode="harvest", repo=repo, author=author, ruleset=ruleset, access=access)


# -- prompts -------------------------------------------------------------------------------------

def feedback_text(pr: PrFeedback) -> str:
    """The harvested comments of ``pr`` as plain text (to be fenced as untrusted data)."""
    out: list[str] = []
    for t in pr.threads:
        gone = "" if t.root is not None else (
            f" (its first comment, id {t.root_id}, was deleted on GitHub; only the replies remain)")
        out.append(f"Inline thread on {t.where}{gone}")
        out += [f"  [comment {c.id}] {c.author} at {c.updated_at}:\n    "
                + c.body.replace("\n", "\n    ") for c in t.comments()]
    for c in pr.summaries:
        out.append(f"Summary [comment {c.id}] {c.author} at {c.updated_at}:\n    "
                   + c.body.replace("\n", "\n    "))
    return "\n".join(out)


def _codex_inline(key: str, role: str, feed: str, prompt: str, **kw: Any) -> Task:
    return Task(key=key, role=role, feed=feed, prompt=prompt, inline_for_codex=True, **kw)


# -- harvest steps ---------------------------------------------------------------------------------

def begin(ctx: Any) -> Any:
    return Go("harvest" if ctx.data.mode == "harvest" else "apply")


def harvest(ctx: Any) -> Any:
    """Read GitHub (flow.github.trouble maps every failure: a limit or an outage sleeps, a
    refused token or a missing repository asks a person, who may stop the harvest)."""
    from flow.github.access import connect_with
    from flow.github.trouble import guarded

    d: IngestData = ctx.data

    def read() -> Go:
        d.prs = harvesting.harvest(connect_with(d.access, ctx.settings), d.repo, d.author,
                                   harvesting.load_cursor(ctx.root), log=ctx.log)
        ctx.log(f"harvested {len(d.prs)} PR(s) with new feedback")
        return Go("collected" if d.prs else "nothing")

    def stop(reason: str) -> Go:
        d.prs = []
        d.last_error = f"harvest stopped by a person after GitHub refused: {reason}"
        return Go("nothing")

    return guarded(ctx, d.github, "harvest", read, stop)


def triage(ctx: Any) -> Any:
    d: IngestData = ctx.data
    keys = {pr.number: f"triage-PR-{pr.number}" for pr in d.prs}
    missing = [pr for pr in d.prs if ctx.result(keys[pr.number]) is None]
    if missing:
        return Ask([_codex_inline(keys[pr.number], "triage", "triage", render(
            "ingest_triage", repo=d.repo, number=pr.number,
            title=Untrusted(pr.title, "PR title"),
            feedback=Untrusted(feedback_text(pr), "review comments"))) for pr in missing])
    # Results belong to this state's visit: what later states need is copied into ctx.data.
    verdicts: dict[int, TriageResult] = {n: ctx.result(k) for n, k in keys.items()}
    d.lessons = [n for n, v in verdicts.items() if v.lesson]
    d.reasons = {str(n): f"{v.reason} (comments {v.comment_ids})" for n, v in verdicts.items()
                 if v.lesson}
    return Go("triaged")


def _rules(ruleset: str) -> tuple[str, set[str]]:
    from flow.workflows.refactor.rules import load_catalogue

    cat = load_catalogue(Path(ruleset))
    return "\n".join(f"{r.id}: {r.title}" for r in cat.rules), {r.id for r in cat.rules}


def analyse(ctx: Any) -> Any:
    d: IngestData = ctx.data
    rules, ids = _rules(d.ruleset)
    asks: list[Task] = []
    for pr in (p for p in d.prs if p.number in d.lessons):
        key = f"analyst-PR-{pr.number}"
        res: AnalysisResult | None = ctx.result(key)
        unknown = sorted({f.rule_id for f in res.findings} - ids - {"new"}) if res else []
        if res is not None and not unknown:
            d.proposals[str(pr.number)] = res.findings
            continue
        note = (f"\n\nYour last answer named rule ids {unknown} that the ruleset does not have; "
                f"use one of the ids above or \"new\"." if unknown else "")
        asks.append(_codex_inline(key, "analyst", "analysis", render(
            "ingest_analyst", repo=d.repo, number=pr.number, ruleset=d.ruleset, rules=rules,
            triage=Untrusted(d.reasons.get(str(pr.number), ""), "triage verdict"),
            feedback=Untrusted(feedback_text(pr), "review comments")) + note))
    return Ask(asks) if asks else Go("analysed")


def draft(ctx: Any) -> Any:
    from workspace.atomic import write_atomic

    d: IngestData = ctx.data
    for pr in d.prs:
        proposals = d.proposals.get(str(pr.number), [])
        if proposals:
            path = findings.findings_path(ctx.root, pr.number)
            existing = path.read_text(encoding="utf-8") if path.exists() else None
            header = findings.render_header(pr, d.repo, ctx.cmds.cli("--apply-ingest", str(path)))
            text = findings.add_section(existing, header, pr, proposals, ctx.flow_id)
            if text is not None:
                write_atomic(path, text.encode("utf-8"))
            if str(path) not in d.drafted:
                d.drafted.append(str(path))
        harvesting.record(ctx.root, pr, d.repo)
    return Go("drafted")


def harvested(ctx: Any) -> Any:
    d: IngestData = ctx.data
    nxt = ([f"Review {p}: tick ('- [x]') the findings to apply, then run "
            f"{ctx.cmds.cli('--apply-ingest', p)}" for p in d.drafted]
           or ["Nothing to review; the next daily harvest looks again."])
    if d.last_error:  # stopped after GitHub refused: say so, never "nothing new"
        nxt = [f"Nothing was harvested: {d.last_error}. Mend it, then run --ingest-feedback "
               f"again with --restart (the cursor is unchanged)."]
        return Done({"outcome": "stopped", "reason": d.last_error, "prs": [], "lessons": [],
                     "findings_files": [], "github_problems": d.github.history,
                     "cursor": str(harvesting.cursor_path(ctx.root))}, nxt)
    return Done({"outcome": "drafted" if d.drafted else "nothing_new",
                 "prs": [p.number for p in d.prs], "lessons": d.lessons,
                 "findings_files": d.drafted,
                 "cursor": str(harvesting.cursor_path(ctx.root))}, nxt)


# -- apply steps -----------------------------------------------------------------------------------

def _listing(d: IngestData) -> str:
    return "\n".join(f"{f.key} (rule {f.rule_id}): {f.summary}" for f in d.approved)


def confirm(ctx: Any) -> Any:
    """need_human: applying ruleset edits is a decision only a person takes."""
    d: IngestData = ctx.data
    answer = ctx.answer("apply")
    if answer is None:
        return Human("apply", (
            f"Apply exactly these {len(d.approved)} ticked finding(s) from {d.findings_file} "
            f"to the ruleset {d.ruleset}?\n{_listing(d)}"),
            {"apply": "a ruleset_editor agent edits the ruleset for these findings only",
             "decline": "change nothing"},
            extra={"findings": [f.model_dump() for f in d.approved], "ruleset": d.ruleset})
    return Go("approved" if answer == "apply" else "declined")


def check_ruleset(path: Path) -> str | None:
    """None if the catalogue at ``path`` loads and validates, else why not (never raises)."""
    from flow.workflows.refactor.errors import CatalogueError
    from flow.workflows.refactor.rules import load_catalogue

    try:
        load_catalogue(path)
    except CatalogueError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read {str(path)!r}: {exc.strerror or exc}"
    return None


def edit(ctx: Any) -> Any:
    d: IngestData = ctx.data
    ruleset = Path(d.ruleset)
    if not ctx.path(BACKUP).exists():  # taken once, before the first edit can happen
        ctx.write_text(BACKUP, ruleset.read_text(encoding="utf-8"), copy=True)
    key = f"edit-{d.edit_round}"
    res: EditorResult | None = ctx.result(key)
    if res is not None:
        problem = check_ruleset(ruleset)
        if problem is None:
            return Go("valid")
        d.last_error = problem
        ctx.log(f"edit round {d.edit_round} left the ruleset invalid: {problem}")
        if d.edit_round >= d.max_edit_rounds:
            return Go("refused")
        d.edit_round += 1
        key = f"edit-{d.edit_round}"
    problem_text: str | Untrusted = ""
    if d.last_error:
        problem_text = Untrusted(f"Your previous edit left the ruleset invalid; the check said:\n"
                                 f"{d.last_error}\nFix the file.", "validation error")
    prompt = render("ingest_ruleset_editor", ruleset=d.ruleset, round=d.edit_round,
                    max_rounds=d.max_edit_rounds, problem=problem_text,
                    findings=Untrusted("\n\n".join(
                        f"{f.key} (rule {f.rule_id}): {f.summary}\n{f.details}"
                        for f in d.approved), "approved findings"))
    return Ask([_codex_inline(key, "ruleset_editor", "editor", prompt,
                              follow_up=d.edit_round > 1)],
               extra={"edit_round": d.edit_round, "max_edit_rounds": d.max_edit_rounds})


def applied(ctx: Any) -> Any:
    d: IngestData = ctx.data
    before = ctx.path(BACKUP).read_text(encoding="utf-8")
    after = Path(d.ruleset).read_text(encoding="utf-8")
    changed = after != before
    # Say what changed and where: the ruleset actually edited, and by how many lines.
    import difflib

    diff = [ln for ln in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="")
            if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
    added = sum(ln.startswith("+") for ln in diff)
    removed = len(diff) - added
    keys = [f.key for f in d.approved]
    if changed:
        steps = [f"The ruleset {d.ruleset} was edited for {len(keys)} finding(s) ({', '.join(keys)}): "
                 f"{added} line(s) added, {removed} removed; the previous version is kept at "
                 f"{ctx.path(BACKUP)}.",
                 f"Review the diff (git -C {shlex.quote(str(Path(d.ruleset).parent))} diff -- "
                 f"{shlex.quote(Path(d.ruleset).name)}) and commit it."]
    else:
        steps = [f"Nothing changed: the ruleset editor left {d.ruleset} as it was for the "
                 f"finding(s) {', '.join(keys)}. Check the findings, or edit the ruleset by hand."]
    return Done({"outcome": "applied" if changed else "unchanged", "ruleset": d.ruleset,
                 "changed": changed, "lines_added": added, "lines_removed": removed,
                 "findings": keys, "edit_rounds": d.edit_round,
                 "backup": str(ctx.path(BACKUP))}, steps)


def refused(ctx: Any) -> Any:
    from workspace.atomic import write_atomic

    d: IngestData = ctx.data
    # Put the ruleset back as it was: a catalogue that does not load would stop every refactor.
    write_atomic(Path(d.ruleset), ctx.path(BACKUP).read_bytes())
    return Done({"outcome": "refused", "ruleset": d.ruleset, "restored": True,
                 "error": d.last_error, "edit_rounds": d.edit_round},
                [(f"The ruleset was restored. Fix the findings in {d.findings_file} or edit the "
                  f"ruleset by hand, then run "
                  f"{ctx.cmds.cli('--apply-ingest', str(d.findings_file), '--restart')}.")])


def declined(ctx: Any) -> Any:
    return Done({"outcome": "declined", "ruleset": ctx.data.ruleset},
                ["Nothing was changed."])


WORKFLOW = Workflow(
    name="ingest",
    states=("begin", "harvest", "triage", "analyse", "draft", "harvested",
            "confirm", "edit", "applied", "refused", "declined"),
    transitions=(("harvest", "begin", "harvest"), ("apply", "begin", "confirm"),
                 ("collected", "harvest", "triage"), ("nothing", "harvest", "harvested"),
                 ("triaged", "triage", "analyse"), ("analysed", "analyse", "draft"),
                 ("drafted", "draft", "harvested"),
                 ("approved", "confirm", "edit"), ("declined", "confirm", "declined"),
                 ("valid", "edit", "applied"), ("refused", "edit", "refused")),
    initial="begin",
    terminal=frozenset({"harvested", "applied", "refused", "declined"}),
    steps={"begin": begin, "harvest": harvest, "triage": triage, "analyse": analyse,
           "draft": draft, "harvested": harvested, "confirm": confirm, "edit": edit,
           "applied": applied, "refused": refused, "declined": declined},
    feeds={"triage": TriageResult, "analysis": AnalysisResult, "editor": EditorResult},
    data_model=IngestData,
    asks_person=frozenset({"harvest", "confirm"}),
    sleeps=frozenset({"harvest"}),
    skill="pytorch-test-refactoring",
    description="Feedback ingest: harvest review lessons from merged [Test] PRs into findings "
                "files; apply ticked findings to the ruleset after a person confirms.",
)
