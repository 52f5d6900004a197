"""The command line: one subcommand per thing the orchestrator does, each with its own flags.

``parse(argv)`` finds the command (a first word such as ``reproduce``, a seed flag such as
``--ci-check``, a bare test FILE meaning ``refactor FILE``, or ``--flow ID`` alone), parses the
arguments with that command's parser only (a flag of another command is refused), and returns
a namespace holding every known option (absent ones as their default), so ``flow.cli.main.run``
reads ``args.X`` for any flag. ``parser_for(command).format_help()`` is the usage of that
command (its flags, their defaults, one example from ``EXAMPLES``), or the list of commands. Flags are declared once, as data, in ``FLAGS``; ``COMMANDS`` says which
flags each command takes. An unknown option, or a first word close to a command's name, is a
usage error naming what it most likely meant (``flow.cli.suggest``); ``--profile`` lists the
profiles its workflow's reference folder holds (``PROFILES``).
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from flow.cli import suggest
from flow.core.bounds import Flag, campaign_name
from flow.core.errors import UsageError

PROG = "orchestrator.py"

# name -> (option strings, argparse keyword arguments incl. help). Shared by every command.
FLAGS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "workspace": (("--workspace",), {"metavar": "DIR", "help": "workspace root (default: "
                                     "$ORCHESTRATOR_WORKSPACE, then ./agent_space)"}),
    "store": (("--store",), {"metavar": "DIR|URL", "help": "where flows live: a folder (the "
                             "workspace, the default) or postgresql://USER@HOST:PORT/DB for a "
                             "fleet (default: $ORCHESTRATOR_STORE); sticky"}),
    "harness": (("--harness",), {"choices": ["claude", "codex"], "help": "the harness that drives "
                                 "the flow; sticky (default: $ORCHESTRATOR_HARNESS, "
                                 "$PYTORCH_TEST_REFACTOR_HARNESS, then claude)"}),
    "flow": (("--flow",), {"metavar": "ID", "help": "act on this flow (its flow_id)"}),
    "resume": (("--resume",), {"action": "store_true", "help": "carry on where the flow stopped"}),
    "restart": (("--restart",), {"action": "store_true", "help": "move the old flow aside "
                                 "(kept as <id>.old-<stamp>) and start anew"}),
    "feed": (("--feed",), {"metavar": "ROLE", "help": "feed a task's result (with --feed-file)"}),
    "feed_file": (("--feed-file",), {"metavar": "PATH", "help": "the result JSON (the task's "
                                     "feed_file; a regular file of at most "
                                     "$ORCHESTRATOR_MAX_FEED_BYTES, default 8 MiB)"}),
    "lease": (("--lease",), {"type": Flag("lease"), "metavar": "TOKEN", "help": "the campaign lease "
                             "this call acts under (the printed commands of a campaign's flow "
                             "carry it; a stale one is refused, lease_lost); sticky"}),
    "answer": (("--answer",), {"metavar": "VALUE", "help": "answer the open need_human question "
                               "with one of its option values"}),
    "json": (("--json",), {"action": "store_true", "help": "print one JSON object on a terminal "
                          "too (piped, every call prints one; on a terminal help, errors, "
                          "status, affected-tests, graph, demo and serve print text)"}),
    "source_dir": (("--pytorch-dir", "--source-dir"), {"metavar": "DIR", "help": "the PyTorch (or "
                   "project) checkout (default: the current directory)"}),
    "ci_check": (("--ci-check",), {"action": "store_true", "help": "the seed's spelling of "
                                   "'ci-check' (accepted, changes nothing)"}),
    "pr_number": (("--pr-number",), {"type": Flag("pr-number"), "metavar": "N", "help": "the pull request "
                                     "(default: the open PR of the current branch)"}),
    "repo": (("--repo",), {"metavar": "OWNER/NAME", "help": "the GitHub repository (default: the "
                           "origin remote, or the workflow's own default)"}),
    "repo_dir": (("--repo-dir",), {"metavar": "DIR", "help": "the git checkout to read (default: "
                                   "the current directory)"}),
    "mark_ready": (("--mark-ready",), {"action": "store_true", "help": "mark the draft PR ready "
                                       "for review once CI is green"}),
    "ingest_feedback": (("--ingest-feedback",), {"action": "store_true", "help": "the seed's "
                        "spelling of 'ingest' (harvest reviewer feedback)"}),
    "apply_ingest": (("--apply-ingest",), {"metavar": "FINDINGS_FILE", "help": "apply the ticked "
                     "findings of this PR-N.md file to the ruleset (asks a person first)"}),
    "review_queue": (("--review-queue",), {"action": "store_true", "help": "the seed's spelling "
                     "of 'review-queue'"}),
    "limit": (("--limit",), {"type": Flag("limit"), "metavar": "N", "help": "review at most N PRs"}),
    "profile": (("--profile",), {"metavar": "NAME", "help": "the named profile of settings for "
                                 "this workflow"}),  # + its names: ``_profile_help``
    "repro_command": (("--command",), {"metavar": "CMD", "help": "the failing command to "
                      "reproduce (a pytest invocation or a python script)"}),
    "command_file": (("--command-file",), {"metavar": "FILE", "help": "read the command from "
                     "FILE (for commands with awkward quoting)"}),
    "stage": (("--stage",), {"choices": ["auto", "nightly"], "default": "auto",
                             "help": "auto: nightly wheel, then a source build, then the CI "
                             "environment; nightly: stop after it (default: %(default)s)"}),
    "ci_commit": (("--ci-commit",), {"metavar": "SHA", "help": "the commit the CI failure was "
                                     "seen on"}),
    "ci_repo": (("--ci-repo",), {"metavar": "OWNER/NAME", "help": "the GitHub repository whose "
                                 "CI saw the failure, e.g. acme/calc: Stage 3 installs the "
                                 "wheels of its GitHub Actions runs (with the local profile, "
                                 "whose ci_env.github.repo is empty, Stage 3 needs it); the "
                                 "pytorch-xpu profile takes pytorch or torch-xpu-ops instead "
                                 "(default: inferred from the command's test path)"}),
    "failure_pattern": (("--failure-pattern",), {"metavar": "REGEX", "help": "what the failure "
                        "looks like in the output (default: the test's own failure)"}),
    "batch": (("--batch",), {"metavar": "FILE", "help": "reproduce every entry of this JSON list "
                             "of {command, ...}"}),
    "repeat": (("--repeat",), {"type": Flag("repeat"), "metavar": "N", "help": "run each stage's reproducer "
                               "up to N times; any failing attempt is REPRODUCED, mixed results "
                               "are flagged flaky with the rate"}),
    "test_extras": (("--test-extras",), {"metavar": "A,B", "help": "the project's extras to "
                                         "install with it for Stage 2 (e.g. test)"}),
    "timeout": (("--timeout",), {"type": Flag("timeout"), "metavar": "SECONDS", "help": "per reproducer "
                                 "run (default: the profile's timeout_s, 1800); a run cut there "
                                 "is CANNOT_VERIFY 'timed out after N s'"}),
    "base": (("--base",), {"metavar": "REV", "help": "the revision the PR branches from "
                           "(e.g. origin/main)"}),
    "depth": (("--depth",), {"type": Flag("depth"), "metavar": "N", "help": "how many import hops to "
                             "follow from a changed file"}),
    "hub_limit": (("--hub-limit",), {"type": Flag("hub-limit"), "metavar": "N", "help": "a file whose "
                                     "dependents reach more than N enabled CUDA tests within "
                                     "--depth hops counts as a hub and is not followed"}),
    "approved": (("--approved",), {"action": "store_true", "help": "a person approved spending "
                                   "the CI runners the plan needs"}),
    "include_worktree": (("--include-worktree",), {"action": "store_true", "help": "trace the "
                         "uncommitted changes too (untracked files included)"}),
    "format": (("--format",), {"choices": ["mermaid", "svg", "png"], "help": "mermaid: the "
               "diagram's text; svg or png: a picture drawn by Graphviz (default: mermaid)"}),
    "output": (("--output",), {"metavar": "PATH", "help": "where to write the svg or png "
               "(default: <workspace>/graphs/<workflow>[.<flow>].<format>)"}),
    "host": (("--host",), {"metavar": "ADDRESS", "help": "the address to listen on (default: "
             "127.0.0.1, this machine only)"}),
    "port": (("--port",), {"type": Flag("port"), "metavar": "N", "help": "the port to listen on "
             "(default: 0, a free port the system picks; the URL is printed)"}),
    "campaign": (("--campaign",), {"metavar": "NAME", "type": campaign_name,
                                   "help": "share the work with a fleet: "
                                   "claim the next free item of campaign NAME (defined by "
                                   "this command's items) in the PostgreSQL --store"}),
    "needs_me": (("--needs-me",), {"action": "store_true", "help": "only the flows that need a "
                                   "person: asking (need_human), failed, unreadable or stuck, "
                                   "in that order, with counts"}),
    "items": (("--items",), {"metavar": "FILE", "help": "the campaign's items: a JSON list of "
                             '{"id": ..., "argv": [start words of a flow]}'}),
    "requeue": (("--requeue",), {"metavar": "ID", "help": "put item ID back in the pool (a "
                                 "parked one, say; its claims count from 0, its flow resumes); "
                                 "needs --lease TOKEN, the item's token status --campaign "
                                 "shows (a stale one is refused)"}),
    "drop": (("--drop",), {"metavar": "ID", "help": "drop item ID from the campaign (no worker "
                           "takes it again; the campaign ends without it); needs --lease "
                           "TOKEN as --requeue"}),
}
FLOW = ["flow", "resume", "restart", "feed", "feed_file", "answer", "lease"]
REPRODUCE = ["repro_command", "command_file", "stage", "ci_commit", "source_dir", "ci_repo",
             "failure_pattern", "profile", "batch", "repeat", "test_extras", "timeout"]
TARGETED = ["base", "depth", "hub_limit", "repo_dir", "profile"]

# command -> (one-line description, positional (name, nargs, help) or None, flag names)
COMMANDS: dict[str, tuple[str, tuple[str, str | None, str] | None, list[str]]] = {
    "reproduce": ("reproduce a failing test or script: nightly wheel, source build, CI env",
                  None, [*FLOW, *REPRODUCE, "campaign"]),
    "refactor": ("refactor a PyTorch test file (the seed's bare FILE works too)",
                 ("file", "?", "the test file, relative to --pytorch-dir or absolute (with "
                  "--campaign: default every allowlisted test file of the checkout)"),
                 [*FLOW, "source_dir", "campaign"]),
    "ci-check": ("watch a PR's CI and debug its failures (the seed's --ci-check)",
                 None, [*FLOW, "ci_check", "pr_number", "repo", "repo_dir", "mark_ready"]),
    "affected-tests": ("list the tests a change can affect (no flow, no GitHub)",
                       None, [*TARGETED, "include_worktree"]),
    "ci-targeted": ("run only the CI a PR's change needs, after a person approves",
                    None, [*FLOW, *TARGETED, "pr_number", "repo", "approved"]),
    "review-queue": ("review the queued [Test] PRs (the seed's --review-queue)",
                     None, [*FLOW, "review_queue", "repo", "limit", "profile", "pr_number",
                            "campaign"]),
    "ingest": ("turn reviewer feedback into ruleset findings; --apply-ingest applies them",
               None, [*FLOW, "ingest_feedback", "apply_ingest", "repo"]),
    "status": ("list the flows of the workspace and what each works on", None,
               ["campaign", "needs_me"]),
    "campaign": ("work on a campaign's next item (many harnesses, one PostgreSQL --store)",
                 ("name", "?", "the campaign"), ["items", "requeue", "drop", "lease"]),
    "schema": ("list the JSON schemas, or print one (a feed: WORKFLOW.FEED)",
               ("name", "?", "the schema to print (omit to list them)"), []),
    "graph": ("draw a workflow's state machine (Mermaid text, or an svg/png picture), with a "
              "flow's current state and path when --flow is given",
              ("workflow", "?", "the workflow to draw"), ["flow", "format", "output"]),
    "serve": ("a read-only web page of every flow in the workspace (Ctrl-C stops it)",
              None, ["host", "port"]),
    "demo": ("run a built-in example to its end (demo refactor)",
             ("name", "?", "the demo to run: refactor"), []),
    "start": ("start any registered workflow by name (plugins too)",
              ("words", "*", "WORKFLOW [ARGS...]"), FLOW),
    "mcp": ("serve these calls as MCP tools over stdio (a harness starts it from its MCP "
            "config)", None, []),
}
# command -> one example a person can copy (the top level's is under None)
EXAMPLES: dict[str | None, str] = {
    None: f"{PROG} reproduce --profile local --source-dir examples/calc --command "
          "'pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction'",
    "reproduce": f"{PROG} reproduce --profile local --source-dir examples/calc --command "
                 "'pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction'",
    "refactor": f"{PROG} refactor test/test_ops.py --pytorch-dir ~/pytorch",
    "ci-check": f"{PROG} ci-check --pr-number 1234 --repo pytorch/pytorch",
    "affected-tests": f"{PROG} affected-tests --base origin/main --json",
    "ci-targeted": f"{PROG} ci-targeted --base origin/main --pr-number 1234 --repo "
                   "pytorch/pytorch",
    "review-queue": f"{PROG} review-queue --limit 4",
    "ingest": f"{PROG} ingest --repo pytorch/pytorch",
    "status": f"{PROG} status",
    "campaign": f"{PROG} --store postgresql://fleet-db/orchestrator campaign nightly-sweep --items items.json",
    "schema": f"{PROG} schema refactor.coder",
    "graph": f"{PROG} graph reproduce --format svg --flow reproduce/ID",
    "serve": f"{PROG} serve --port 8765",
    "demo": f"{PROG} demo refactor",
    "start": f"{PROG} start review-queue",
    "mcp": f"{PROG} mcp --workspace agent_space --harness claude",
}
# command -> (the folder of reference/ holding its --profile files, what no --profile means);
# the names listed in --help are the files there, as the workflows' loaders find them
PROFILES: dict[str, tuple[str, str]] = {
    "reproduce": ("reproduce", "local"),
    "review-queue": ("review_queue", "pytorch"),
    "affected-tests": ("targeted", "the repository's [tool.orchestrator.targeted] table, else "
                       "the profile whose detect files it has, else the defaults"),
    "ci-targeted": ("targeted", "the repository's [tool.orchestrator.targeted] table, else "
                    "the profile whose detect files it has, else the defaults"),
}
SEED_FLAGS = {"--ci-check": "ci-check", "--ingest-feedback": "ingest", "--apply-ingest": "ingest",
              "--review-queue": "review-queue"}
TOP_FLAGS = ["workspace", "store", "harness", "json"]


class _Parser(argparse.ArgumentParser):
    """A parser whose mistakes are usage errors, an unknown option answered with the option
    of this command it most likely meant (``flow.cli.suggest``)."""

    command: str | None = None

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"bad command line: {message}",
                         f"run '{self.prog} --help' for this command's flags")

    def parse_args(self, args: Any = None, namespace: Any = None) -> Any:
        known, extras = self.parse_known_args(args, namespace)
        if extras:
            raise suggest.unknown_arguments(self.prog, self.command, extras,
                                            list(self._option_string_actions), _owners())
        return known


def _owners() -> dict[str, list[str]]:
    """Option string -> the commands that take it."""
    owners: dict[str, list[str]] = {}
    for command, (_, _, names) in COMMANDS.items():
        for name in names:
            for option in FLAGS[name][0]:
                owners.setdefault(option, []).append(command)
    return owners


def _profile_help(command: str | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``--profile``'s help with the profile names ``command``'s workflow knows (the .toml
    files of its reference folder; a .toml path works too) and what no --profile means."""
    if command not in PROFILES:
        return kwargs
    from reference import DIR

    folder, default = PROFILES[command]
    names = sorted(p.stem for p in (DIR / folder).glob("*.toml"))
    path = ", or a .toml path" if command in ("reproduce", "review-queue") else ""
    return {**kwargs, "help": f"{kwargs['help']}: one of {', '.join(names) or '(none installed)'}"
                              f"{path} (default: {default})"}


def _takes_value(option: str) -> bool:
    for names, kwargs in FLAGS.values():
        if option in names:
            return kwargs.get("action") != "store_true"
    return False


def _positionals(argv: list[str]) -> list[tuple[int, str]]:
    """(index, word) of each argument that is not an option or an option's value."""
    found: list[tuple[int, str]] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
        elif arg == "--":
            found.extend((j, a) for j, a in enumerate(argv[i + 1:], i + 1))
            break
        elif arg.startswith("-") and arg != "-":
            skip = "=" not in arg and _takes_value(arg)
        else:
            found.append((i, arg))
    return found


def command_of(argv: list[str]) -> tuple[str | None, list[str]]:
    """The command ``argv`` asks for and the arguments left for its parser.

    ``None`` means no command: ``--flow ID`` alone (resume/feed/answer) or nothing at all.
    """
    words = _positionals(argv)
    if words and words[0][1] in COMMANDS:
        i = words[0][0]
        return words[0][1], argv[:i] + argv[i + 1:]
    for flag, command in SEED_FLAGS.items():
        if any(a == flag or a.startswith(flag + "=") for a in argv):
            return command, argv
    if words:
        return "refactor", argv  # the seed's bare FILE
    return None, argv


def parser_for(command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (``None``: the flags that drive an existing flow)."""
    if command is None:
        p = _Parser(prog=PROG, add_help=False,
                    usage=f"{PROG} COMMAND [FLAGS]  |  {PROG} --flow ID --resume|--feed ROLE "
                          f"--feed-file PATH|--answer VALUE",
                    description="The orchestrator: every call prints one JSON object. "
                                f"Run '{PROG} COMMAND --help' for a command's flags.",
                    epilog="commands:\n" + "\n".join(f"  {name:<15} {desc}" for name, (desc, _, _)
                                                     in COMMANDS.items())
                           + f"\n\nexample:\n  {EXAMPLES[None]}",
                    formatter_class=argparse.RawDescriptionHelpFormatter)
        names = FLOW
    else:
        desc, positional, names = COMMANDS[command]
        p = _Parser(prog=f"{PROG} {command}", add_help=False, description=desc,
                    epilog=f"example:\n  {EXAMPLES[command]}",
                    formatter_class=argparse.RawDescriptionHelpFormatter)
        p.command = command
        if positional is not None:
            name, nargs, text = positional
            p.add_argument(name, nargs=nargs, help=text)
    p.add_argument("-h", "--help", action="store_true",
                   help="print this help: plain text on a terminal, else one JSON "
                        "object with the text in 'usage' (--json forces that)")
    g = p.add_argument_group("every call")
    for name in TOP_FLAGS:
        opts, kwargs = FLAGS[name]
        g.add_argument(*opts, dest=name, **kwargs)
    if names:
        g = p.add_argument_group(f"{command or 'driving a flow'}")
        for name in names:
            opts, kwargs = FLAGS[name]
            if name == "profile":
                kwargs = _profile_help(command, kwargs)
            g.add_argument(*opts, dest=name, **kwargs)
    return p


def parse(argv: list[str]) -> tuple[argparse.Namespace, argparse.ArgumentParser]:
    """Parse ``argv`` with its command's parser; the namespace holds every known option."""
    command, rest = command_of(argv)
    words = _positionals(argv)
    if command == "refactor" and words and words[0][1] != "refactor":  # the seed's bare FILE
        mistyped = suggest.unknown_command(words[0][1], COMMANDS, PROG)
        if mistyped is not None:
            raise mistyped
    parser = parser_for(command)
    values: dict[str, Any] = {name: (False if kw.get("action") == "store_true" else None)
                              for name, (_, kw) in FLAGS.items()}
    if "-h" in rest or "--help" in rest:  # help wins over anything missing or wrong
        sticky = _Parser(prog=parser.prog, add_help=False)
        for name in TOP_FLAGS:
            opts, kwargs = FLAGS[name]
            sticky.add_argument(*opts, dest=name, **kwargs)
        known, _ = sticky.parse_known_args(rest)
        values.update(vars(known), help=True, command=command, args=[])
        return argparse.Namespace(**values), parser
    values.update(vars(parser.parse_args(rest)))  # numbers: ``flow.core.bounds.Flag``
    values["command"] = command
    values["args"] = _words(command, values)
    return argparse.Namespace(**values), parser


def _words(command: str | None, values: dict[str, Any]) -> list[str]:
    """The positional words ``flow.cli.main.run`` expects for ``command``."""
    if command is None:
        return []
    if command == "refactor":
        return [values["file"]] if values.get("file") else []
    if command == "ci-check":
        values["ci_check"] = True
        return []
    if command == "review-queue":
        values["review_queue"] = True
        return []
    if command == "ingest":
        if not values.get("apply_ingest"):
            values["ingest_feedback"] = True
        return []
    if command == "start":
        return ["start", *(values.get("words") or [])]
    positional = COMMANDS[command][1]
    extra = values.get(positional[0]) if positional else None
    return [command, *([extra] if extra else [])]
