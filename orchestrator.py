#!/usr/bin/env python3
"""The orchestrator's command line: parse, call the library, print one JSON object, exit.

Every call prints exactly one JSON object on stdout (``status`` tells what to do next); logs go
to stderr and to the flow's log files. Exit codes: 0 a spec was printed, 2 bad input, 3 busy,
4 the state cannot be loaded, 1 a bug.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, NoReturn

os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # skips a slow entry-point scan

from flow.errors import OrchestratorError, UsageError  # noqa: E402
from workspace.jsonio import dumps  # noqa: E402
from workspace.paths import workspace_root  # noqa: E402

SCRIPT = Path(__file__).resolve()
ENV_HARNESS = ("ORCHESTRATOR_HARNESS", "PYTORCH_TEST_REFACTOR_HARNESS")


def _parser() -> Any:
    import argparse

    class Parser(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            raise UsageError(f"bad command line: {message}",
                             "run 'orchestrator.py --help' for the usage")

    p = Parser(prog="orchestrator.py", description=__doc__, add_help=False)
    p.add_argument("args", nargs="*", help="COMMAND [ARGS] or a test FILE (refactor)")
    p.add_argument("-h", "--help", action="store_true",
                   help="print this text as the 'usage' field of one JSON object")
    g = p.add_argument_group("every flow")
    g.add_argument("--workspace", help="workspace root (env ORCHESTRATOR_WORKSPACE, ./agent_space)")
    g.add_argument("--harness", choices=["claude", "codex"],
                   help="sticky; default from ORCHESTRATOR_HARNESS, then claude")
    g.add_argument("--flow", help="flow id (as printed in flow_id)")
    g.add_argument("--resume", action="store_true", help="carry on where the flow stopped")
    g.add_argument("--restart", action="store_true", help="move the old flow aside, start anew")
    g.add_argument("--feed", metavar="ROLE", help="feed a task result (with --feed-file)")
    g.add_argument("--feed-file", metavar="PATH")
    g.add_argument("--answer", metavar="VALUE", help="answer the open need_human question")
    g.add_argument("--json", action="store_true", help="status: machine-readable output")
    r = p.add_argument_group("refactor and CI (the seed's flags)")
    r.add_argument("--ci-check", action="store_true")
    r.add_argument("--pr-number", type=int)
    r.add_argument("--repo", help="owner/name of the GitHub repository")
    r.add_argument("--ingest-feedback", action="store_true")
    r.add_argument("--apply-ingest", metavar="FINDINGS_FILE")
    r.add_argument("--review-queue", action="store_true")
    r.add_argument("--limit", type=int)
    r.add_argument("--mark-ready", action="store_true")
    x = p.add_argument_group("reproduce")
    x.add_argument("--command", dest="repro_command")
    x.add_argument("--command-file")
    x.add_argument("--stage", choices=["auto", "nightly"])
    x.add_argument("--ci-commit")
    x.add_argument("--pytorch-dir", "--source-dir", dest="source_dir")
    x.add_argument("--ci-repo")
    x.add_argument("--failure-pattern")
    x.add_argument("--profile")
    x.add_argument("--batch", metavar="FILE")
    x.add_argument("--repeat", type=int, metavar="N", help="run each stage's reproducer up to N times")
    x.add_argument("--test-extras", metavar="A,B", help="the project's test extras for Stage 2")
    x.add_argument("--timeout", type=float, metavar="SECONDS", help="per reproducer run")
    t = p.add_argument_group("targeted CI")
    t.add_argument("--base")
    t.add_argument("--depth", type=int)
    t.add_argument("--hub-limit", type=int)
    t.add_argument("--repo-dir")
    t.add_argument("--approved", action="store_true")
    t.add_argument("--include-worktree", action="store_true", help="trace uncommitted changes too")
    return p


def _harness(flag: str | None) -> str:
    if flag:
        return flag
    for name in ENV_HARNESS:
        value = os.environ.get(name)
        if value in ("claude", "codex"):
            return value
    return "claude"


def _emit(obj: Any, code: int = 0) -> int:
    sys.stdout.buffer.write(dumps(obj) + b"\n")
    sys.stdout.flush()
    return code


def _fast_resume(argv: list[str]) -> int | None:
    """``--resume --flow ID`` of a flow waiting on someone else: print the cached spec.

    The cache is used only when it was rendered from exactly the state bytes on disk, so
    this never skips work; it skips importing pydantic and transitions on the hot path.
    """
    opts: dict[str, str] = {}
    it = iter(argv)
    for arg in it:
        if arg in {"--flow", "--workspace", "--harness"}:
            value = next(it, None)
            if value is None:
                return None
            opts[arg] = value
        elif arg != "--resume":
            return None  # anything else (a feed, an answer, a command) takes the full path
    if "--resume" not in argv or "--flow" not in opts:
        return None
    from workspace.store import FlowStore

    try:
        store = FlowStore(workspace_root(opts.get("--workspace")), opts["--flow"])
    except OrchestratorError:
        return None
    spec = store.cached_spec()
    if spec is None or spec.get("status") not in {"waiting", "need_human", "done"}:
        return None
    if spec.get("harness") != opts.get("--harness", spec.get("harness")):
        return None
    return _emit(spec)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["mcp"]:  # the MCP server: the only call that imports the mcp SDK
        from flow.mcp.server import serve

        return serve(argv[1:], respond)
    fast = _fast_resume(argv)
    if fast is not None:
        return fast
    result, code = respond(argv)
    if isinstance(result, str):
        sys.stdout.write(result)
        return code
    return _emit(result, code)


def respond(argv: list[str]) -> tuple[dict[str, Any] | str, int]:
    """What ``main(argv)`` prints and its exit code, without printing (the MCP server's entry)."""
    harness = "claude"
    root = workspace_root(None)
    try:
        parser = _parser()
        args = parser.parse_args(argv)
        harness = _harness(args.harness)
        root = workspace_root(args.workspace)
        if args.help:  # one JSON object like every call, the usage text inside it
            from flow.render import envelope

            return envelope(None, root, "done", harness, usage=parser.format_help()), 0
        from flow import cli

        return cli.run(args, root, harness, SCRIPT), 0
    except OrchestratorError as err:
        from flow.render import error_spec

        return error_spec(err, root, harness, getattr(err, "state", None),
                          getattr(err, "workspace", None)), err.exit_code
    except Exception as exc:  # a bug: still one JSON object, exit 1
        import traceback

        traceback.print_exc(file=sys.stderr)
        return ({"schema_version": 1, "status": "error", "workflow": None,
                 "flow_id": None, "phase": None, "harness": harness,
                 "workspace": str(root),
                 "error": {"code": "bug", "message": f"{type(exc).__name__}: {exc}",
                           "hint": "this is a bug in the orchestrator; the traceback "
                                   "is on stderr; please report it"},
                 "message": f"{type(exc).__name__}: {exc}"}, 1)


if __name__ == "__main__":
    sys.exit(main())
