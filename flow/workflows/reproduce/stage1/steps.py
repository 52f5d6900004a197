"""Stage 1 (seed: "Stage 1: Nightly Wheel"): install the nightly into the project's
interpreter (and reinstall a set that is not from one build day), run the setup steps of a
shell block, run the reproducer and read the Stage 1 table.
"""
from __future__ import annotations

from typing import Any

from flow.workflows.reproduce.context import (
    blocked, env_of, interpreter, launcher, profile_of, reproducer, run_each, run_timeout, scratch,
)
from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.run import runner
from flow.workflows.reproduce.run.attempts import act, decide
from flow.workflows.reproduce.verdict.models import Stage


def installed_versions(ctx: Any, packages: list[str]) -> dict[str, str]:
    """{package: version} in the Stage 1 interpreter (``interpreter``); {} when the
    query fails. The JSON line is searched from the end (a query the budget cut short is
    run again as a job, whose answer has stderr after stdout). ``ctx.query``: a cut query
    is asked again, never recorded as "no versions"."""
    import json

    from flow.workflows.reproduce.stage1.rules import versions_query

    output = ctx.query(versions_query(interpreter(ctx), packages), cwd=scratch(ctx),
                       env=ctx.settings).text
    for line in reversed(output.splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict):
            return {str(k): str(v) for k, v in found.items()}
    return {}


def install_nightly(ctx: Any, profile: Profile) -> str | None:
    """Stage 1's install into ``interpreter``'s environment: the profile's packages;
    when they are not all from one build day, uninstall them and reinstall them together,
    then read the versions again and note the outcome. Records the versions.
    ``kind=current`` installs nothing. Returns a blocker (a failed pip run, or a set still
    mixed after the reinstall, naming the versions) or None."""
    from flow.workflows.reproduce.stage1.rules import (
        install_plan, listed, pip_for, pip_install, same_build_day,
    )

    nightly, pip = profile.nightly, pip_for(interpreter(ctx))
    if nightly.kind == "index":
        problem = run_each(ctx, [pip_install(pip, nightly.packages, index_url=nightly.index_url,
                                             pre=nightly.pre, upgrade=True)],
                           "install", "nightly install", cwd=scratch(ctx))
        if problem:
            return problem
    if nightly.kind == "current" and not nightly.same_day_check:
        return None  # nothing installed: the verdict's environment probe reads the versions
    installed = installed_versions(ctx, nightly.packages)
    ctx.data.installed_versions = installed
    if not nightly.same_day_check:
        return None
    check = same_build_day(installed, nightly.packages)
    if check.ok:
        return None
    problem = run_each(ctx, install_plan(pip, check, nightly.packages,
                                         index_url=nightly.index_url, pre=nightly.pre),
                       "reinstall", f"reinstall of {nightly.packages}", cwd=scratch(ctx))
    if problem:
        return problem
    installed = installed_versions(ctx, nightly.packages)
    ctx.data.installed_versions = installed
    again = same_build_day(installed, nightly.packages)
    now = (f"now one build day ({listed(installed, nightly.packages)})" if again.ok
           else f"still {again.reason}")
    ctx.data.notes.append(f"nightly: after install, {check.reason}; uninstalled and reinstalled "
                          f"together: {now}")
    if not again.ok:
        return (f"the nightly set is still not from one build day after uninstalling and "
                f"reinstalling it together: {listed(installed, nightly.packages)}; the index "
                "may not have all wheels of the newest day yet, retry later")
    return None


def stage1(ctx: Any) -> Any:
    """Stage 1: install the nightly, run any setup steps, run the reproducer, decide."""
    profile, rep = profile_of(ctx), reproducer(ctx)
    ctx.data.current_stage = Stage.NIGHTLY.value
    problem = install_nightly(ctx, profile)
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    env = env_of(ctx)
    start = ctx.data.setup_cwd or scratch(ctx)
    problem = runner.run_setup(rep, cwd=start, env=env,
                               log=ctx.path("logs/setup.log"), launch=launcher(ctx),
                               timeout=run_timeout(ctx, profile),
                               state_file=ctx.path("logs/setup.state"))
    if problem:
        return blocked(ctx, Stage.NIGHTLY, problem)
    carry_block(ctx, ctx.path("logs/setup.state"), env, start=start)
    return act(ctx, decide(ctx, profile, Stage.NIGHTLY, "stage1"))


def carry_block(ctx: Any, state_file: Any, env: dict[str, str],
                start: str | None = None) -> None:
    """A shell block's setup ran: its reproduce step runs where bash would run it (the
    folder the block ended in, its variables, the interpreter its PATH resolves, such as
    an activated venv's), never with the project interpreter put in its place. A block
    that ended in an empty folder (the one it started in, or one it made) refines to a
    fresh ``mktemp -d``. ``start``: the folder the setup began in; the project tree
    (``ctx.data.setup_cwd``) when a cd/export/source prefix ran there as typed."""
    from flow.workflows.reproduce.run.block import uses_folder

    state = runner.setup_state(state_file, env)
    if state is None:
        return
    ctx.data.block = state.model_dump(mode="json")
    ctx.data.cwd = state.cwd
    if start is not None and start == ctx.data.setup_cwd:
        from flow.workflows.reproduce.prepare.rules import RULE_PREFIX_IN_TREE

        ctx.data.cwd_rule = RULE_PREFIX_IN_TREE + (
            "" if state.cwd == ctx.data.setup_cwd else f"; the prefix left it in {state.cwd}")
    else:
        ctx.data.cwd_rule = ("where the shell block's setup left the shell (its cd lines, as "
                             "bash ran them)" if uses_folder(state, scratch(ctx))
                             else "outside any source tree (an empty folder: the block's "
                                  "setup wrote nothing there)")
    from pathlib import Path

    if state.program and Path(state.program).parent != Path(ctx.data.python or "").parent:
        # another environment than the project interpreter's (an activated venv)
        ctx.data.notes.append(f"the shell block's environment resolves the interpreter to "
                              f"{state.program} (not {ctx.data.python}); the reproduce step "
                              "runs with it")
        ctx.data.python, ctx.data.path_head = state.program, str(Path(state.program).parent)
