"""Prepare (seed: "Prepare"): get the tree the reproducer needs, choose where it runs (the
local profile's tree as bash typed there; never a tree whose package under test is not
built), and the collect-only check that stops every stage on "collected 0 items".
"""
from __future__ import annotations

from pathlib import Path

from typing import Any

from flow.core.outcome import Go
from flow.workflows.reproduce.context import (
    blocked, interpreter, env_of, launcher, profile_of, reproducer, run_each, run_timeout, scratch,
)
from flow.workflows.reproduce.prepare.rules import after_collect_only
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.reproducer.forms import Form, Reproducer
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.deciding import clean_env
from flow.workflows.reproduce.verdict.models import Stage


def prepare_tree(ctx: Any, profile: Profile, rep: Reproducer) -> str | None:
    """Prepare's tree (seed: "Get the pytorch tree"); returns a blocker or None.

    local: the --source-dir as is. Profiles with git recipes: fetch a given tree, or clone
    into the workspace's scratch dir; then detach at origin/main and update submodules."""
    if profile.tree is None:
        ctx.data.tree = ctx.data.source_dir
        if ctx.data.tree is None and rep.needs_tree:
            return "the reproducer needs a source tree: pass --source-dir DIR"
        return None
    from flow.workflows.reproduce.recipes import fill

    tree = ctx.data.source_dir or str(ctx.root / (profile.source_build.scratch_subdir or "tree"))
    recipes = []
    if not Path(tree, ".git").exists():
        recipes.append(fill(profile.tree.clone, clone_url=profile.source_build.clone_url or "",
                            tree=tree))
    recipes += [fill(r, tree=tree) for r in (profile.tree.fetch, profile.tree.detach_main,
                                              profile.tree.submodules)]
    problem = run_each(ctx, recipes, "prepare", f"prepare of the tree at {tree}")
    if problem:
        return problem
    ctx.data.tree = tree
    return None


def prepare(ctx: Any) -> Any:
    """needs_tree per the seed's table, the tree, and the cwd rules (never inside a tree);
    the tree's state as found, before any run (what a Stage 1 verdict says it ran on: read
    here, it costs a run started ahead nothing, and a test that writes into the tree does
    not make its own tree look changed)."""
    profile, rep = profile_of(ctx), reproducer(ctx)
    if rep.needs_tree or ctx.data.source_dir:
        problem = prepare_tree(ctx, profile, rep)
        if problem:
            return blocked(ctx, Stage.NIGHTLY, problem)
    problem = place(ctx, profile, rep)
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    ctx.data.python = interpreter(ctx)
    ctx.data.path_head = str(Path(ctx.data.python).parent)
    where = ctx.data.tree or ctx.data.source_dir
    if where:
        ctx.data.tree_found = read_tree(ctx, where, first=True).model_dump(mode="json")
    return Go("prepared")


def read_tree(ctx: Any, where: str, *, first: bool = False) -> Any:
    """``envinfo.TreeState`` of ``where``, git read now through ``ctx.query`` (a read the
    budget cut short is asked again, never recorded). ``first`` (prepare, before the
    flow's runs): as this call found it, through the reads it made for the flow id before
    any run, since a run started ahead may have written into the tree meanwhile."""
    from flow.workflows.reproduce.verdict import environment as envinfo
    from flow.workflows.reproduce.verdict.reuse import read_before_runs

    def asked(argv: list[str]) -> tuple[int, str]:
        found = read_before_runs(argv) if first else None
        if found is not None:
            return found
        got = ctx.query(argv, env=ctx.settings)
        return got.code, got.text

    return envinfo.tree_state(where, asked, ctx.root)


def project_probe(ctx: Any, profile: Profile, python: str, tree: str | None = None) -> str:
    """The environment probe of ``python`` for the project and the profile's packages (none
    for this interpreter or a venv, whose metadata files are read here; else one child
    run), kept in ``ctx.data.project_probe`` so the verdict reuses it. ``tree``: the tree
    the reproducer ran in when it is another than --source-dir's (a batch entry that
    ``cd``s into its own clone): the project is the one that tree declares."""
    from flow.workflows.reproduce.verdict import environment as envinfo, probe

    where = tree or ctx.data.tree or ctx.data.source_dir
    kept = ctx.data.project_probe
    if kept and kept.get("python") == python and kept.get("tree") == (where or ""):
        return kept["output"]
    project = profile.project or envinfo.project_name(tree or ctx.data.source_dir)
    packages = list(dict.fromkeys([*profile.nightly.packages, *([project] if project else [])]))
    layout = None if probe.is_this_interpreter(python) else probe.venv_layout(python)
    if layout is not None or probe.is_this_interpreter(python):
        output = probe.probe_here(packages, where, layout)
    else:
        # ctx.query: a probe the budget cut short runs again as a job, so an empty answer
        # (no project identity) is never kept in project_probe as if it were the answer
        output = ctx.query(probe.probe_argv(python, packages, where), cwd=scratch(ctx),
                           env=clean_env(ctx.settings)).text
    ctx.data.project_probe = {"python": python, "tree": where or "", "output": output}
    return output


def unbuilt_install(ctx: Any, profile: Profile) -> str | None:
    """Why no run in the tree can test the project, or None: it is installed non-editable,
    its import package sits at the tree's root, and the installed copy holds compiled
    modules that the tree's package lacks (an extension not built in place: ``import``
    from the tree would load a package that cannot work, as the seed's "Working
    directory" says of an in-tree torch). A pure Python copy, installed from this tree or
    from anywhere else, is no such reason: bash typed in the tree imports the tree, and
    so does the run."""
    from flow.workflows.reproduce.verdict import environment as envinfo
    from flow.workflows.reproduce.verdict.environment import TreeState

    python = ctx.data.python or interpreter(ctx)
    project = profile.project or envinfo.project_name(ctx.data.source_dir)
    output = project_probe(ctx, profile, python)
    env = envinfo.read_probe(python, output, project, [], TreeState(path=ctx.data.tree, git=False))
    names = envinfo.unbuilt_imports(env, output)
    if not names:
        return None
    return (f"{env.project} {env.project_version} is installed non-editable (from "
            f"{env.project_origin}) with compiled modules that the tree's "
            f"{', '.join(n + '/' for n in names)} lacks (not built in place), so an import "
            "from the tree could not work")


def place(ctx: Any, profile: Profile, rep: Reproducer) -> str | None:
    """Set ``cwd``, ``pytest_args`` and ``cwd_rule`` for the tree in ``ctx.data.tree``
    (the seed's cwd rules: the local profile runs in the project tree, as bash typed
    there, unless the tree's package is an unbuilt compiled one, ``unbuilt_install``);
    returns a blocker or None. Touches no file."""
    from flow.workflows.reproduce.errors import InTreeImportTrap, UnresolvedNodeId
    from flow.workflows.reproduce.prepare.rules import RULE_PREFIX_IN_TREE, choose_cwd
    from flow.workflows.reproduce.reproducer.forms import prefix_only

    in_tree = profile.tree is None and bool(ctx.data.tree) and (
        not rep.setup or prefix_only(rep))
    unbuilt = unbuilt_install(ctx, profile) if in_tree else None
    try:
        choice = choose_cwd(rep, scratch=scratch(ctx), tree=ctx.data.tree,
                            package=profile.import_package, in_tree=in_tree, unbuilt=unbuilt,
                            **({"xpu_ops_subdir": profile.xpu_ops_subdir} if profile.xpu_ops_subdir else {}))
    except (InTreeImportTrap, UnresolvedNodeId) as exc:
        return str(exc)
    ctx.data.cwd = choice.cwd
    ctx.data.cwd_rule = choice.rule
    # a cd/export/source prefix runs where bash would run it typed in the tree
    ctx.data.setup_cwd = ctx.data.tree if choice.rule == RULE_PREFIX_IN_TREE else None
    ctx.data.pytest_args = choice.pytest_args if choice.pytest_args is not None else rep.pytest_args
    return None


def collect(ctx: Any) -> Any:
    """The collect-only check (pytest form): collected 0 items stops every stage."""
    rep = reproducer(ctx)
    if rep.form is not Form.PYTEST:
        return Go("collected")
    if profile_of(ctx).nightly.kind == "current":
        # Stage 1 installs nothing, so its one pytest run is the collect check too:
        # "no tests ran" there is NO_REPRODUCER(collected_zero) by the same rules.
        return Go("collected")
    outcome = runner.collect(rep, python=ctx.data.python, cwd=ctx.data.cwd,
                             pytest_args=ctx.data.pytest_args or [], env=env_of(ctx),
                             log=ctx.path("logs/collect.log"), launch=launcher(ctx),
                             timeout=run_timeout(ctx))
    verdict = after_collect_only(outcome)
    if verdict is not None:
        ctx.data.verdict = verdict.model_dump(mode="json")
        return Go("decided")
    return Go("collected")
