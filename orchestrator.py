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

from flow.core.errors import OrchestratorError  # noqa: E402
from workspace.paths import workspace_root  # noqa: E402

SCRIPT = Path(__file__).resolve()
ENV_HARNESS = ("ORCHESTRATOR_HARNESS", "PYTORCH_TEST_REFACTOR_HARNESS")


def _harness(flag: str | None) -> str:
    if flag:
        return flag
    for name in ENV_HARNESS:
        value = os.environ.get(name)
        if value in ("claude", "codex"):
            return value
    return "claude"


def _flag(argv: list[str], name: str) -> str | None:
    """The value of option ``name`` in ``argv`` read without the parser (None if absent)."""
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _emit(obj: Any, code: int = 0) -> int:
    from workspace.jsonio import dumps  # orjson: imported once there is an object to print

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
        if arg in {"--flow", "--workspace", "--harness", "--store", "--lease"}:
            value = next(it, None)
            if value is None:
                return None
            opts[arg] = value
        elif arg != "--resume":
            return None  # anything else (a feed, an answer, a command) takes the full path
    if "--resume" not in argv or "--flow" not in opts:
        return None
    from workspace.selection import open_store, store_url, workspace_for

    try:
        root = workspace_for(opts.get("--store"), opts.get("--workspace"), os.environ)
        store = open_store(root, opts["--flow"], store_url(opts.get("--store"), os.environ))
        spec = store.cached_spec()
    except OrchestratorError:
        return None
    if spec is None or spec.get("status") not in {"waiting", "need_human", "done"}:
        return None
    if spec.get("harness") != opts.get("--harness", spec.get("harness")):
        return None
    if "--lease" in opts and not _heartbeat(store, spec, opts["--lease"]):
        return None
    return _emit(spec)


def _heartbeat(store: Any, spec: dict[str, Any], token: str) -> bool:
    """A poll of a leased flow is its heartbeat: renew the item's lease if ``token`` is
    still its own and the cached spec's commands carry that very token; False sends the call
    down the full path (a done flow finishes its item there, a stale token is refused there
    under the flow's lock, ``flow.cli.leases``)."""
    import shlex

    url = getattr(store, "url", None)
    if url is None or not token.isdigit() or spec.get("status") == "done":
        return False
    words = shlex.split(str(spec.get("resume_command", "")))
    at = words.index("--lease") if "--lease" in words else -1
    if at < 0 or words[at + 1:at + 2] != [token]:
        return False
    from workspace import campaign
    from workspace.pgconn import connect

    try:
        name, item, *_ = campaign.hold(connect(url), store.flow_id, int(token))
    except Exception:  # noqa: BLE001 - lost, or the store failed: the full path says which
        return False
    spec["campaign"] = {"name": name, "item": item, "lease": int(token), "lease_renewed": True}
    return True


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "mcp" in argv and not ({"-h", "--help"} & set(argv)):  # its help: as any command's
        from flow.cli.argv import command_of

        command, rest = command_of(argv)
        if command == "mcp":  # the MCP server: the only call that imports the mcp SDK
            from flow.mcp.server import serve

            return serve(rest, respond)
    fast = _fast_resume(argv)
    if fast is not None:
        return fast
    if "serve" in argv:  # the dashboard: prints its URL as one JSON object, then serves
        from flow.cli.argv import command_of

        if command_of(argv)[0] == "serve" and not ({"-h", "--help"} & set(argv)):
            return _serve(argv)
    result, code = respond(argv)
    if isinstance(result, str):
        _write_text(result)
        return code
    if sys.stdout.isatty():  # a person reads: help, graph, demo, errors as text (unless --json)
        from flow.cli.person import text_for, wants_text

        text = text_for(argv, result) if wants_text(argv, True) else None
        if text is not None:
            _write_text(text)
            return code
    return _emit(result, code)


def _write_text(text: str) -> None:
    """Text for a person (or a diagram) on stdout, its secrets masked as JSON's are
    (``flow.core.redact``; ``_emit``'s ``dumps`` masks the JSON object)."""
    from flow.core.redact import redact

    sys.stdout.write(redact(text))


def _serve(argv: list[str]) -> int:
    """``serve``: parse like any call (errors are one JSON object), then run the web page.

    On a terminal (``flow.cli.person``) it says in words that it serves, where and how to
    stop it, and when stopped that it stopped; piped, the one JSON object. Ctrl-C at any
    moment ends it with exit 0.
    """
    harness = _harness(None)
    root = workspace_root(_flag(argv, "--workspace"))
    from flow.cli import person

    to_person = person.wants_text(argv, sys.stdout.isatty())
    shown: list[dict[str, Any]] = []

    def show(obj: dict[str, Any], code: int = 0) -> int:
        if not to_person:
            return _emit(obj, code)
        text = person.text_for(argv, obj) if obj.get("status") == "error" else None
        shown.append(obj)
        _write_text(text or person.serving_text(obj, person.width()))
        sys.stdout.flush()
        return code

    try:
        from flow.cli.argv import parse

        args, _ = parse(argv)
        harness = _harness(args.harness)
        from workspace.selection import store_url, workspace_for

        root = workspace_for(args.store, args.workspace, os.environ)
        from flow.web.server import serve

        code = serve(root, args.host or "127.0.0.1", args.port or 0, harness, show,
                     store_url(args.store, os.environ))
    except OrchestratorError as err:
        return show(_error(err, root, harness), err.exit_code)
    except KeyboardInterrupt:  # stopped before it served
        return 0
    if to_person and shown:
        _write_text(person.stopped_text(shown[0]))
    return code


def respond(argv: list[str]) -> tuple[dict[str, Any] | str, int]:
    """What ``main(argv)`` prints and its exit code, without printing (the MCP server's entry)."""
    harness = _harness(_flag(argv, "--harness") if _flag(argv, "--harness") in
                       ("claude", "codex") else None)
    root = workspace_root(_flag(argv, "--workspace"))  # an error before parsing names it too
    try:
        from flow.cli.argv import parse

        args, parser = parse(argv)
        harness = _harness(args.harness)
        args.json = args.json or not sys.stdout.isatty()  # piped: the one JSON object, always
        from workspace.selection import workspace_for

        root = workspace_for(args.store, args.workspace, os.environ)
        if args.help:  # one JSON object like every call, the usage text inside it
            from flow.core.render import envelope

            return envelope(None, root, "done", harness, usage=parser.format_help()), 0
        from flow.cli import main as cli

        return cli.run(args, root, harness, SCRIPT), 0
    except OrchestratorError as err:
        return _error(err, root, harness), err.exit_code
    except OSError as exc:  # a fault of the machine (full disk, read-only...) is not a bug
        from flow.core.errors import environment_fault

        fault = environment_fault(exc)
        if fault is None:
            return _bug(exc, root, harness)
        return _error(fault, root, harness), fault.exit_code
    except Exception as exc:  # a bug: still one JSON object, exit 1
        return _bug(exc, root, harness)


def _error(err: OrchestratorError, root: Path, harness: str) -> dict[str, Any]:
    """The error's spec, every string in it with secrets masked (``redact_tree``)."""
    from flow.core.redact import redact_tree
    from flow.core.render import error_spec

    spec = error_spec(err, root, harness, getattr(err, "state", None),
                      getattr(err, "workspace", None))
    for key in ("flow_id", "workflow"):  # known even when the state is not (busy, corrupt)
        if spec.get(key) is None and getattr(err, key, None):
            spec[key] = getattr(err, key)
    return dict(redact_tree(spec))


def _bug(exc: BaseException, root: Path, harness: str) -> tuple[dict[str, Any], int]:
    """A bug's one JSON object (exit 1); it and the traceback on stderr with secrets masked."""
    import traceback

    from flow.core.redact import redact, redact_tree

    sys.stderr.write(redact(traceback.format_exc()))
    spec = {"schema_version": 1, "status": "error", "workflow": None,
            "flow_id": None, "phase": None, "harness": harness,
            "workspace": str(root),
            "error": {"code": "bug", "message": f"{type(exc).__name__}: {exc}",
                      "hint": "this is a bug in the orchestrator; the traceback "
                              "is on stderr; please report it"},
            "message": f"{type(exc).__name__}: {exc}"}
    return dict(redact_tree(spec)), 1


def _exit(code: int) -> NoReturn:
    """End a finished call now that its one JSON object is out: flush, close the database
    connection the PostgreSQL store opened, and leave without the interpreter's teardown of
    the few hundred modules a call loads (about 25 ms, a tenth of a sub-second reproduce).
    Nothing of ours is left to that teardown: files are written and closed, or fsync'd and
    renamed, before the object is printed; no call starts an atexit hook, and the one thread
    a call may start (the PostgreSQL store's heartbeat, ``workspace.pgbeat``) is stopped
    when the call lets go of the flow's lock, before the object is printed.
    The servers (``mcp``, ``serve``) exit the usual way, and so does a run under a tool
    that wraps the script (a profiler, coverage: they write their report at exit)."""
    sys.stdout.flush()
    sys.stderr.flush()
    pgconn = sys.modules.get("workspace.pgconn")
    if pgconn is not None:
        pgconn.close_all()
    os._exit(code)


def _run_by_python() -> bool:
    """The interpreter runs this file itself, not a tool through ``runpy`` (a profiler,
    coverage), whose frames lie below the module's and whose report is written at exit."""
    try:
        return sys._getframe(2).f_back is None  # 0: here, 1: _quick_exit_ok, 2: the module
    except (AttributeError, ValueError):
        return False


def _quick_exit_ok(argv: list[str]) -> bool:
    return _run_by_python() and "mcp" not in argv and "serve" not in argv


if __name__ == "__main__":
    if _quick_exit_ok(sys.argv[1:]):
        _exit(main())
    sys.exit(main())
