"""``reproduce --batch FILE``: one flow sweeping many reproducers (the seed's
nightly-CI caller hands over a list of failing tests).

batch_setup reads the file bounded (``entries.read_batch``) and installs Stage 1 once;
batch_entry runs Stage 1 for one entry per visit (prepare, collect-only, setup steps,
the reproducer, and the skip-marker re-run as a second visit of the same entry).
``auto`` entries that pass there go on together: batch_build builds each tree they ran
in ONCE (the local profile: --source-dir, or the clone an entry ``cd``s into, each into a
venv of its own; a profile with its own tree: that tree; the single flow's run task or
build-skill agent task, with its one ci_commit fallback), batch_stage2 re-runs each of
them against its own tree's build, batch_ci aligns to the CI environment once per CI
repository the entries going there are aligned against (an entry's ci_repo, else
--ci-repo, else inferred from its reproducer's path), and batch_stage3 re-runs each
entry of that group before the next group is aligned.
``nightly`` entries end at Stage 1. Every entry visit saves the entry's row (or its
place in the next stage's list) before the index moves, so a crash resumes at the
entry it was on and never re-runs a finished one. batch_report ends with the buckets
as Markdown and JSON.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.core.outcome import Ask, Done, Go
from flow.workflows.reproduce.batch.entries import (
    BatchEntry, InvalidEntry, build_report, read_batch, render_json, render_markdown,
)
from flow.workflows.reproduce.context import (
    blocked, env_of, interpreter, launcher, profile_of, reproducer, run_timeout, scratch,
)
from flow.workflows.reproduce.prepare.steps import collect, place, prepare, prepare_tree
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.attempts import act, decide
from flow.workflows.reproduce.stage1.steps import carry_block, install_nightly
from flow.workflows.reproduce.stage2.steps import source_build
from flow.workflows.reproduce.stage3 import steps as stage3_steps
from flow.workflows.reproduce.unskip.steps import unskip
from flow.workflows.reproduce.verdict.models import VERDICT_ADAPTER, NoReproducer, Stage

_PER_ENTRY: dict[str, Any] = dict(verdict=None, tree=None, cwd=None, cwd_rule=None, pytest_args=None,
                  block=None,
                  rerun_done=False,
                  pending_restore=None, batch_unskip=False, current_stage=Stage.NIGHTLY.value,
                  ci_env={}, bypass=None, unskipped=None, restore_kept=None,
                  attempt_counts=None, last_exit=None, skipped_exit=None)


def _entries(ctx: Any) -> list[BatchEntry | InvalidEntry]:
    return [InvalidEntry.model_validate(e["invalid"]) if "invalid" in e
            else BatchEntry.model_validate(e["entry"]) for e in ctx.data.batch_entries]


def setup(ctx: Any) -> Any:
    """Parse the batch file (read bounded, as at start: ``read_batch``) and install Stage 1
    once for every entry."""
    items = read_batch(ctx.data.batch_file)
    ctx.data.batch_ci_repo = ctx.data.ci_repo
    ctx.data.batch_repeat, ctx.data.batch_timeout = ctx.data.repeat, ctx.data.timeout
    ctx.data.batch_stage, ctx.data.batch_pattern = ctx.data.stage, ctx.data.failure_pattern
    ctx.data.batch_entries = [{"invalid": i.model_dump()} if isinstance(i, InvalidEntry)
                              else {"entry": i.model_dump()} for i in items]
    problem = install_nightly(ctx, profile_of(ctx))
    if problem:
        ctx.data.notes.append(f"stage 1 install failed: {problem}")
        for item in items:
            if isinstance(item, BatchEntry):
                ctx.data.batch_verdicts[item.id] = {
                    "verdict": "CANNOT_VERIFY", "stage": "nightly", "blocker": problem}
        ctx.data.batch_index = len(items)
    return Go("ready")


def _next(ctx: Any, entry_id: str, verdict: dict[str, Any] | None, note: str = "") -> Go:
    if verdict is not None:
        ctx.data.batch_verdicts[entry_id] = verdict
    if note:
        ctx.data.batch_notes[entry_id] = note
    for key, value in _PER_ENTRY.items():
        setattr(ctx.data, key, value)
    ctx.data.batch_index += 1
    return Go("next")


def _loop_done(ctx: Any, trigger: str) -> Go:
    """The end of a one-entry-per-visit loop: the index starts over for the next one (the
    only place it is reset; the build and the CI alignment in between leave it alone)."""
    ctx.data.batch_index = 0
    return Go(trigger)


def _settle(ctx: Any, entry: BatchEntry, go: Go) -> Go:
    """Turn what a single-flow step decided into this entry's row, its place in the next
    stage's list, or a skip-marker re-run visit."""
    if go.trigger in {"unskip", "retry"}:
        ctx.data.batch_unskip = True  # pending restore is saved before the file is edited
        return Go("next")
    if go.trigger == "decided":
        from flow.workflows.reproduce.verdict.finalize import with_environment

        return _next(ctx, entry.id, with_environment(ctx, ctx.data.verdict))
    if go.trigger in {"next", "to_stage2", "to_stage3"}:  # act() set the stage to go to
        to_build = ctx.data.current_stage == Stage.SOURCE_BUILD
        later = ctx.data.batch_to_stage2 if to_build else ctx.data.batch_to_stage3
        if entry.id not in later:
            later.append(entry.id)
        if to_build and entry.id not in ctx.data.batch_entry_trees:
            tree = entry_tree(ctx)
            if tree:
                ctx.data.batch_entry_trees[entry.id] = tree
        return _next(ctx, entry.id, None)
    raise AssertionError(f"unexpected trigger {go.trigger!r} for batch entry {entry.id!r}")


_PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def entry_tree(ctx: Any) -> str | None:
    """The tree the entry just run is a build of: for a command that ``cd``s into another
    git tree than --source-dir (``finalize.other_tree``), the nearest folder from where it
    ran up to that tree's top that holds a project file (``pyproject.toml``, ``setup.py``,
    ``setup.cfg``), else that top; otherwise --source-dir's tree."""
    from flow.workflows.reproduce.verdict.finalize import other_tree

    where = ctx.data.tree or ctx.data.source_dir
    top = other_tree(ctx, where)
    if top is None:
        return where
    here, stop = Path(ctx.data.cwd).resolve(), Path(top).resolve()
    for folder in (here, *here.parents):
        if any((folder / name).is_file() for name in _PROJECT_FILES):
            return str(folder)
        if folder == stop:
            break
    return top


def _load(ctx: Any, item: BatchEntry) -> None:
    """The entry's fields, each one it leaves out taken from the command line's."""
    ctx.data.command, ctx.data.stage = item.command, item.stage or ctx.data.batch_stage
    ctx.data.entry_id = item.id
    ctx.data.failure_pattern = item.failure_pattern or ctx.data.batch_pattern
    ctx.data.ci_repo = item.ci_repo or ctx.data.batch_ci_repo
    ctx.data.repeat = item.repeat or ctx.data.batch_repeat
    ctx.data.timeout = item.timeout or ctx.data.batch_timeout


def _by_id(ctx: Any, entry_id: str) -> BatchEntry:
    return next(e for e in _entries(ctx) if isinstance(e, BatchEntry) and e.id == entry_id)


def _decide_all(ctx: Any, ids: list[str]) -> Go:
    """The batch-wide step stopped (build or CI alignment): its verdict is every entry's."""
    for entry_id in ids:
        ctx.data.batch_verdicts[entry_id] = dict(ctx.data.verdict or {})
    ctx.data.verdict = None
    return Go("decided")


def entry(ctx: Any) -> Any:
    """One entry per visit; the index moves only once the entry's row is saved."""
    entries = _entries(ctx)
    if ctx.data.batch_index >= len(entries):
        return _loop_done(ctx, "build" if ctx.data.batch_to_stage2 else "finished")
    item = entries[ctx.data.batch_index]
    if isinstance(item, InvalidEntry):
        return _next(ctx, item.id, None)
    if ctx.data.batch_unskip:
        return _settle(ctx, item, unskip(ctx))
    ctx.log(f"batch entry {ctx.data.batch_index + 1}/{len(entries)}: {item.id}")
    _load(ctx, item)
    from flow.workflows.reproduce.errors import ReproducerParseError
    from flow.workflows.reproduce.reproducer.forms import parse_reproducer

    try:
        rep = parse_reproducer(item.command)
    except ReproducerParseError as exc:
        return _next(ctx, item.id, None, f"cannot be split into commands: {exc}")
    if rep is None:
        return _next(ctx, item.id, NoReproducer(reason="no_command").model_dump(mode="json"))
    for step in (prepare, collect):
        go = step(ctx)
        if go.trigger == "decided":
            return _settle(ctx, item, go)
    profile = profile_of(ctx)
    env = env_of(ctx)
    if any(s.argv and s.argv[0] not in {"cd", "export"} for s in rep.setup):
        problem = isolate(ctx, item.id)
        if problem:
            return _settle(ctx, item, blocked(ctx, Stage.NIGHTLY, problem))
        env = {**env_of(ctx), "VIRTUAL_ENV": str(Path(ctx.data.path_head).parent),
               "PIP_PYTHON": ctx.data.python}
    state_file = ctx.path(f"logs/{item.id}/setup.state")
    start = ctx.data.setup_cwd or scratch(ctx)  # a cd/export/source prefix: in its tree
    problem = runner.run_setup(rep, cwd=start, env=env,
                               log=ctx.path(f"logs/{item.id}/setup.log"),
                               launch=launcher(ctx), timeout=run_timeout(ctx, profile),
                               state_file=state_file)
    if problem:
        return _settle(ctx, item, blocked(ctx, Stage.NIGHTLY, problem))
    carry_block(ctx, state_file, env, start=start)
    decision = decide(ctx, profile, Stage.NIGHTLY, f"{item.id}/stage1")
    return _settle(ctx, item, act(ctx, decision))


def isolate(ctx: Any, entry_id: str) -> str | None:
    """Give an entry whose shell block has setup steps its own environment, so what they
    install cannot change another entry's: a venv ``entries/<id>/venv`` made from the
    stage's interpreter, which lends that interpreter's packages through a ``.pth`` placed
    after its own site-packages. Setup steps run with it first on PATH, ``VIRTUAL_ENV``
    and ``PIP_PYTHON`` set to it (a bare ``pip install`` and ``python -m pip install`` both
    install into it), and the entry's reproducer runs with its interpreter (its
    refined_command names it). Returns a blocker, or None."""
    from flow.workflows.reproduce.stage2.venv import TOOLS_PTH

    base = ctx.data.python or interpreter(ctx)
    venv = ctx.path(f"entries/{entry_id}/venv")
    python = venv / "bin" / "python"
    query = "import sysconfig; print(sysconfig.get_path('purelib'))"
    log = ctx.path(f"logs/{entry_id}/isolate.log")
    if not python.exists():
        code, out = runner.run([base, "-m", "venv", "--without-pip", str(venv)],
                                         cwd=None, env=ctx.settings, log=log)
        if code != 0:
            return f"the entry's own environment could not be made (exit {code}): {out[-300:]}"
    # every site dir the base interpreter sees (its own and those it lends itself: a
    # .pth inside a lent dir is not read, so the chain is flattened here)
    sites = ("import sys, json; print(json.dumps([p for p in sys.path "
             "if p.endswith(('site-packages', 'dist-packages'))]))")
    lent = runner.run([base, "-c", sites], cwd=None, env=ctx.settings, log=log)
    own = runner.run([str(python), "-c", query], cwd=None, env=ctx.settings, log=log)
    if lent[0] or own[0]:
        return f"the entry's environment's site-packages could not be read: {(lent[1] + own[1])[-300:]}"
    import json

    dirs = json.loads(lent[1].strip().splitlines()[-1])
    Path(own[1].strip().splitlines()[-1], TOOLS_PTH).write_text("".join(f"{d}\n" for d in dirs))
    ctx.data.python, ctx.data.path_head = str(python), str(python.parent)
    return None


def build(ctx: Any) -> Any:
    """Stage 2 for the batch: a profile with its own tree prepares and builds that tree
    once; the local profile builds each tree its Stage 2 entries ran in once, one after
    the other (``_build_each``)."""
    profile, ids = profile_of(ctx), ctx.data.batch_to_stage2
    ctx.data.current_stage = Stage.SOURCE_BUILD.value
    if profile.tree is None and profile.source_build.kind == "venv":
        return _build_each(ctx, profile, ids)
    if ctx.data.batch_tree is None:
        if profile.tree is None:
            ctx.data.batch_tree = ctx.data.source_dir
        else:  # a fresh tree at origin/main; set once, so a fallback checkout is kept
            _load(ctx, _by_id(ctx, ids[0]))
            problem = prepare_tree(ctx, profile, reproducer(ctx))
            if problem:
                blocked(ctx, Stage.SOURCE_BUILD, problem)
                return _decide_all(ctx, ids)
            ctx.data.batch_tree = ctx.data.tree
    ctx.data.tree = ctx.data.batch_tree
    python = interpreter(ctx)
    ctx.data.python, ctx.data.path_head = python, str(Path(python).parent)
    pending = source_build(ctx, profile)
    if isinstance(pending, Ask):
        return pending
    if pending is not None:
        return _decide_all(ctx, ids)
    ctx.data.batch_python, ctx.data.batch_path_head = ctx.data.python, ctx.data.path_head
    return Go("built")


def _groups(ctx: Any, ids: list[str]) -> dict[str, list[str]]:
    """{tree: the ids of the entries that ran in it}, in the order the entries came."""
    groups: dict[str, list[str]] = {}
    for entry_id in ids:
        tree = ctx.data.batch_entry_trees.get(entry_id) or ctx.data.source_dir or ""
        groups.setdefault(tree, []).append(entry_id)
    return groups


def _build_each(ctx: Any, profile: Any, ids: list[str]) -> Any:
    """The local profile's builds: each tree into ``<flow>/build/venv`` (the first) or
    ``<flow>/build<N>/venv``, one Ask at a time; a tree whose build fails decides only
    its own entries (CANNOT_VERIFY). The one ci_commit fallback is --source-dir's alone
    (--ci-commit names a commit of that repository). Built trees are kept in
    ``batch_builds``, so a resumed batch asks for no build twice."""
    ctx.data.batch_tree = ctx.data.batch_tree or ctx.data.source_dir
    groups = _groups(ctx, ids)
    for n, (tree, members) in enumerate(groups.items()):
        slot = ctx.data.batch_builds.setdefault(
            tree, {"work": "build" if n == 0 else f"build{n + 1}"})
        if "python" in slot or "verdict" in slot:
            continue
        ctx.data.tree = tree
        ctx.data.trunk_ok, ctx.data.fallback_ok = slot.get("trunk_ok"), slot.get("fallback_ok")
        python = interpreter(ctx)
        ctx.data.python, ctx.data.path_head = python, str(Path(python).parent)
        own = bool(ctx.data.source_dir) and Path(tree).resolve() == Path(ctx.data.source_dir).resolve()
        pending = source_build(ctx, profile, source=tree or None, work=slot["work"], fallback=own)
        slot["trunk_ok"], slot["fallback_ok"] = ctx.data.trunk_ok, ctx.data.fallback_ok
        if isinstance(pending, Ask):
            return pending
        if pending is not None:
            slot["verdict"] = dict(ctx.data.verdict or {})
            ctx.data.verdict = None
            for entry_id in members:
                ctx.data.batch_verdicts[entry_id] = dict(slot["verdict"])
            continue
        slot.update(python=ctx.data.python, path_head=ctx.data.path_head, base=ctx.data.base,
                    tree=ctx.data.tree)
    ctx.data.trunk_ok = ctx.data.fallback_ok = None
    ctx.data.batch_to_stage2 = [i for i in ids if i not in ctx.data.batch_verdicts]
    if not ctx.data.batch_to_stage2:
        return Go("decided")
    if len(groups) > 1:
        note = ("source_build: one build per tree the entries ran in: " + "; ".join(
            f"{tree} for {members}" for tree, members in groups.items()))
        if note not in ctx.data.notes:
            ctx.data.notes.append(note)
    return Go("built")


def align(ctx: Any) -> Any:
    """Stage 3's CI environment for the next group of entries going there, one group per CI
    repository they name (``_ci_groups``), one group per visit (its runs and jobs are that
    visit's own): a group whose alignment stops (CANNOT_VERIFY) decides only its own
    entries, and the next visit aligns the next group."""
    profile, groups = profile_of(ctx), _ci_groups(ctx)
    if ctx.data.batch_ci_group >= len(groups):  # the last groups' alignments all stopped
        return Go("decided")
    ids = groups[ctx.data.batch_ci_group]
    ctx.data.current_stage = Stage.CI_ENV.value
    _load(ctx, _by_id(ctx, ids[0]))
    ctx.data.tree = ctx.data.batch_tree
    if stage3_steps.align(ctx, profile, reproducer(ctx)) is not None:
        for entry_id in ids:
            ctx.data.batch_verdicts[entry_id] = dict(ctx.data.verdict or {})
        ctx.data.verdict = None
        ctx.data.batch_ci_group += 1
        return Go("next")
    if len(ids) > 1:
        ctx.data.notes.append(f"ci_env: one CI environment for {ids}")
    ctx.data.batch_python, ctx.data.batch_path_head = ctx.data.python, ctx.data.path_head
    return Go("aligned")


def _ci_groups(ctx: Any) -> list[list[str]]:
    """The entries going to Stage 3, grouped by the CI repository each is aligned against
    (``stage3.steps.ci_name``, what ``align`` fetches from), in the order they came; worked
    out once (``batch_ci_groups``), so a resumed batch keeps its groups. Entries naming
    different CI repositories never share an environment: each verdict is the one its own
    CI gives."""
    if not ctx.data.batch_ci_groups:
        profile = profile_of(ctx)
        groups: dict[str, list[str]] = {}
        for entry_id in ctx.data.batch_to_stage3:
            _load(ctx, _by_id(ctx, entry_id))
            repo = stage3_steps.ci_name(profile, reproducer(ctx), ctx.data.ci_repo,
                                        ctx.data.batch_tree)
            groups.setdefault(repo, []).append(entry_id)
        ctx.data.batch_ci_groups = list(groups.values())
        if len(groups) > 1:
            ctx.data.notes.append("ci_env: one CI environment per CI repository, in turn: " +
                                  "; ".join(f"{repo} for {ids}" for repo, ids in groups.items()))
    return ctx.data.batch_ci_groups


def _rerun(ctx: Any, stage: Stage, ids: list[str], when_done: str) -> Go:
    """One entry per visit: re-run it against the batch's build / CI environment."""
    if ctx.data.batch_index >= len(ids):
        return _loop_done(ctx, when_done)
    item = _by_id(ctx, ids[ctx.data.batch_index])
    if ctx.data.batch_unskip:
        return _settle(ctx, item, unskip(ctx))
    ctx.log(f"batch {stage.value} {ctx.data.batch_index + 1}/{len(ids)}: {item.id}")
    _load(ctx, item)
    ctx.data.current_stage = stage.value
    profile, rep = profile_of(ctx), reproducer(ctx)
    tree, python, head = ctx.data.batch_tree, ctx.data.batch_python, ctx.data.batch_path_head
    slot = _own_build(ctx, item.id) if stage is Stage.SOURCE_BUILD else None
    if slot is not None:
        # the entry's own tree's build (its clone at ci_commit after a fallback)
        tree, python, head, ctx.data.base = (slot["tree"], slot["python"], slot["path_head"],
                                             slot["base"])
    ctx.data.tree = tree if rep.needs_tree or ctx.data.source_dir else None
    ctx.data.python, ctx.data.path_head = python, head
    problem = place(ctx, profile, rep)
    if problem:
        return _settle(ctx, item, blocked(ctx, stage, problem))
    if stage is Stage.CI_ENV:
        stage3_steps.fold(ctx, profile, rep)
    decision = decide(ctx, profile, stage, f"{item.id}/{stage.value}")
    return _settle(ctx, item, act(ctx, decision))


def _own_build(ctx: Any, entry_id: str) -> dict[str, Any] | None:
    """The build of the tree the entry ran in (``_build_each``), or None (a profile with
    its own tree: the batch's one build)."""
    tree = ctx.data.batch_entry_trees.get(entry_id) or ctx.data.source_dir or ""
    slot = ctx.data.batch_builds.get(tree)
    return slot if slot and "python" in slot else None


def stage2_entry(ctx: Any) -> Any:
    """Stage 2 for one entry that passed Stage 1 (auto)."""
    return _rerun(ctx, Stage.SOURCE_BUILD, ctx.data.batch_to_stage2,
                  "align" if ctx.data.batch_to_stage3 else "finished")


def stage3_entry(ctx: Any) -> Any:
    """Stage 3 for one entry of the CI repository group aligned last; once the group is
    done, the next group is aligned (``align``) or the batch is finished."""
    groups, at = _ci_groups(ctx), ctx.data.batch_ci_group
    if ctx.data.batch_index >= len(groups[at]) and at + 1 < len(groups):
        ctx.data.batch_ci_group += 1
        return _loop_done(ctx, "align")
    return _rerun(ctx, Stage.CI_ENV, groups[at], "finished")


def report(ctx: Any) -> Any:
    """The buckets as report.md and report.json; Done."""
    verdicts = {k: VERDICT_ADAPTER.validate_python(v) for k, v in ctx.data.batch_verdicts.items()}
    built = build_report(_entries(ctx), verdicts)
    for row in built.rows:
        if row.id in ctx.data.batch_notes:
            row.note = ctx.data.batch_notes[row.id]
    md = ctx.write_text("report.md", render_markdown(built))
    js = ctx.write_text("report.json", render_json(built))
    counts = {str(k): v for k, v in built.counts.items()}
    return Done({"outcome": "BATCH", "counts": counts, "report_path": str(md),
                 "report_json_path": str(js)},
                [f"read {md}"])
