"""Which flow a ``reproduce`` command means: its inputs read and checked, and the flow id
they hash to (``reproduce/<12 hex of the inputs>-<8 hex of the environment>``, see
``verdict.reuse`` for what the environment part covers).

Standard library only (and the lean ``verdict.reuse``): the command line asks here before
the workflow's pydantic models are imported, so that a run can be started ahead of them
(``headstart``); the declaration asks the same functions, and one call computes the
environment key once for both.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from flow.core.errors import UsageError, WorkflowInputError
from flow.workflows.reproduce.run.deciding import PYTHON_ENV


def _read_input(flag: str, raw: str, limit: int, what: str) -> tuple[Path, str]:
    """The path and UTF-8 text of the file a flag names; WorkflowInputError saying what it is
    when it is missing, no regular file (a FIFO, /dev/zero, a folder), too large or binary."""
    from flow.core.boundedfile import UnreadableFile, read_regular

    path = Path(raw).expanduser()
    try:
        data = read_regular(path, limit)
    except UnreadableFile as exc:
        raise WorkflowInputError(f"{flag} {str(path)!r} {exc.reason}", f"pass {what}") from None
    try:
        return path, data.decode("utf-8")
    except UnicodeDecodeError:
        raise WorkflowInputError(f"{flag} {str(path)!r} is not UTF-8 text (a binary file?)",
                                 f"pass {what}") from None


def _bounded(opts: dict[str, Any]) -> tuple[int, float | None]:
    """--repeat (1 to MAX_REPEAT) and --timeout (a finite number of seconds, above 0, at
    most MAX_TIMEOUT_S); WorkflowInputError quoting a value out of bounds."""
    import math

    from flow.workflows.reproduce.batch.limits import MAX_REPEAT, MAX_TIMEOUT_S

    repeat = opts.get("repeat")
    if repeat is not None and not 1 <= int(repeat) <= MAX_REPEAT:
        raise WorkflowInputError(f"--repeat {repeat} is out of bounds",
                                 f"pass a whole number from 1 to {MAX_REPEAT}")
    timeout = opts.get("timeout")
    if timeout is not None:
        value = float(timeout)
        why = ("is not a finite number" if not math.isfinite(value) else
               "is not above 0 (a run always has a time limit)" if value <= 0 else
               f"is more than the limit of {MAX_TIMEOUT_S:g} s (a day)"
               if value > MAX_TIMEOUT_S else None)
        if why is not None:
            raise WorkflowInputError(f"--timeout {value:g} {why}",
                                     f"pass seconds above 0, at most {MAX_TIMEOUT_S:g} "
                                     "(omit it for the profile's timeout_s, 1800 by default)")
    return int(repeat or 1), (float(timeout) if timeout is not None else None)


def missing(opts: dict[str, Any]) -> None:
    """A call that names no reproducer at all is a usage error, before any flow exists: the
    seed's NO_REPRODUCER(no_command) ("Preflight") is the verdict on a reproducer that was
    given and holds nothing to run (an empty --command, a command file of comments), not on
    a command line that forgot the flag."""
    if (opts.get("repro_command") is None and not opts.get("command_file")
            and not opts.get("batch")):
        raise UsageError("reproduce needs the failing command: none of --command, "
                         "--command-file or --batch was given",
                         "pass --command 'pytest path/to/test_x.py::test_name' (or "
                         "--command-file FILE for awkward quoting, --batch FILE for many)")


def inputs(opts: dict[str, Any]) -> dict[str, Any]:
    """The normalised inputs; the flow id hashes them. UsageError when no reproducer is given
    at all (no --command, --command-file or --batch); WorkflowInputError for a command or
    batch file that is not a readable regular text file, a batch past its size limit, a
    --source-dir that is no folder, a --ci-repo that is no OWNER/NAME, or a --repeat /
    --timeout out of bounds."""
    from flow.workflows.reproduce.batch.limits import MAX_BATCH_BYTES, is_repo

    missing(opts)
    command = opts.get("repro_command")
    if opts.get("command_file"):
        _, command = _read_input("--command-file", opts["command_file"], 1 << 20,
                                 "the path of a file holding the reproducer block")
    batch = batch_text = None
    if opts.get("batch"):
        path, batch_text = _read_input("--batch", opts["batch"], MAX_BATCH_BYTES,
                                       "a JSON, JSON-lines or one-command-per-line file "
                                       f"of at most {MAX_BATCH_BYTES} bytes")
        batch = str(path.resolve())
    profile = opts.get("profile") or "local"
    source = opts.get("source_dir")
    if source:
        found = Path(source).expanduser().resolve()
        if not found.is_dir():
            raise WorkflowInputError(
                f"--source-dir {source!r} is {'a file' if found.exists() else 'missing'}, "
                "not a folder", "pass the folder of the source checkout")
        source = str(found)
    ci_repo = opts.get("ci_repo")
    if ci_repo and ci_repo not in ("pytorch", "torch-xpu-ops") and not is_repo(ci_repo):
        raise WorkflowInputError(f"--ci-repo {ci_repo!r} is not OWNER/NAME",
                                 "pass pytorch, torch-xpu-ops or an OWNER/NAME such as o/r")
    repeat, timeout = _bounded(opts)
    return {"command": command, "stage": opts.get("stage") or "auto",
            "ci_commit": opts.get("ci_commit"), "source_dir": source,
            "ci_repo": ci_repo, "failure_pattern": opts.get("failure_pattern"),
            "profile": profile, "batch_file": batch,
            "repeat": repeat, "timeout": timeout,
            "test_extras": [e for e in (opts.get("test_extras") or "").split(",") if e],
            "batch_text": batch_text}


_located: dict[tuple[Any, ...], str] = {}


def locate(opts: dict[str, Any], root: Path, given: dict[str, Any] | None = None) -> str:
    """``reproduce/<12 hex over the inputs>-<8 hex over the environment>``
    (``reproduce/batch-...`` for a batch): see ``reuse`` for what the key covers. The
    environment key (git calls, a folder listing) is computed once per call: the CLI
    asks here before starting the flow, and ``start`` again for its notes. ``given``: the
    ``inputs(opts)`` the caller already read (a command file is not read again)."""
    from flow.core import proc
    from flow.workflows.reproduce.verdict.reuse import aliased, environment_key, unfinished

    given = inputs(opts) if given is None else given
    digest = hashlib.sha1(json.dumps(given, sort_keys=True).encode()).hexdigest()[:12]
    prefix = f"reproduce/{'batch-' if opts.get('batch') else ''}{digest}"
    running = unfinished(root, prefix)
    if running is not None:
        return running
    call = proc.this_call()  # one key per CLI call or server request, never across them
    memo = (call, str(root), prefix, given["source_dir"], os.environ.get(PYTHON_ENV))
    if call is None or memo not in _located:
        _located.clear()
        _located[memo] = f"{prefix}-{environment_key(given['source_dir'], os.environ, root)}"
    return aliased(root, _located[memo]) or _located[memo]
