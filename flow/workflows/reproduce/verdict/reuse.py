"""When a verdict may be reused: the flow id of a reproduce run is keyed by what decides it.

``reproduce/<12 hex of the inputs>-<8 hex of the environment>``: the inputs are the
command and every flag (profile included); the environment part covers

- the interpreter (``ORCHESTRATOR_REPRODUCE_PYTHON``, else the orchestrator's own);
- the source tree: git HEAD plus a hash of ``git diff HEAD`` and the untracked files'
  names; a tree that is no git repository: names, sizes and mtimes of its source files
  (``*.py``, build and config files; hidden and cache folders skipped). What running the
  reproducer leaves behind is no change of the tree: untracked ``__pycache__`` folders,
  ``*.pyc``/``*.pyo`` files and ``.pytest_cache`` are left out (``is_run_debris``), so a
  finished verdict keeps its key; so is the workspace when it lies inside the tree (the
  default ``./agent_space`` of a call made from the project tree): the orchestrator's
  own files never make the same start another flow;
- the installed distributions: the names (so the versions) of the ``*.dist-info``
  folders in the interpreter's site-packages.

The same key is the same flow: the recorded verdict is printed again (``decided_at`` says
when it was reached). Any difference is another flow id, so a new run; the earlier flows
of the same inputs are listed in its notes (``earlier_runs``). Cheap by design (no child
interpreter; at most two git calls) so that every call can compute it.
"""
from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from flow.core import proc

SOURCE_SUFFIXES = {".py", ".pyx", ".pxd", ".c", ".cc", ".cpp", ".h", ".hpp", ".toml", ".cfg",
                   ".ini", ".txt", ".in", ".json", ".yaml", ".yml"}
MAX_FILES = 20000


def interpreter(env: Mapping[str, str]) -> str:
    value = env.get("ORCHESTRATOR_REPRODUCE_PYTHON")
    return os.path.abspath(os.path.expanduser(value)) if value else sys.executable


def installed_fingerprint(python: str) -> str:
    """The ``*.dist-info`` names in the interpreter's site-packages (venv layout, else
    the prefix's lib dirs): a changed version renames its folder."""
    prefix = Path(python).parent.parent
    names = sorted(p.name for pattern in ("lib/python*/site-packages/*.dist-info",
                                          "lib/python*/dist-packages/*.dist-info")
                   for p in prefix.glob(pattern))
    return "\n".join(names)


def is_run_debris(name: str) -> bool:
    """A file a Python or pytest run writes into the tree by itself (bytecode caches, the
    pytest cache): never a change of the tree under test."""
    parts = name.replace("\\", "/").split("/")
    return ("__pycache__" in parts or ".pytest_cache" in parts
            or parts[-1].endswith((".pyc", ".pyo")))


def status_changes(text: str) -> list[str]:
    """The change lines of ``git status --porcelain=v2`` output, untracked run debris
    (``is_run_debris``) left out."""
    return [line for line in text.splitlines() if line and not line.startswith("#")
            and not (line.startswith("? ") and is_run_debris(line[2:]))]


# The git reads of a tree this call made for its flow id, before any run of the call
# (the reproduce head start starts its run only once the flow id is known): prepare reads
# the tree through ``read_before_runs`` first, so the verdict names the tree as the call
# found it even when the early run has written into it meanwhile. Kept for one call only.
_before_runs: dict[tuple[str, ...], tuple[int, str]] = {}
_reads_call: list[float | None] = [None]


def _git(argv: list[str]) -> proc.Captured:
    got = proc.capture(argv, timeout=60)
    call = proc.this_call()
    if call is not None and not (got.timed_out or got.too_big or got.budget_cut):
        if _reads_call[0] != call:
            _before_runs.clear()
            _reads_call[0] = call
        _before_runs[tuple(argv)] = (got.code, got.text)
    return got


def read_before_runs(argv: list[str]) -> tuple[int, str] | None:
    """(exit code, stdout) of ``argv`` when this call already ran it for its flow id, before
    any run; None otherwise (another call, or not read)."""
    call = proc.this_call()
    if call is None or _reads_call[0] != call:
        return None
    return _before_runs.get(tuple(argv))


def inside(tree: str, workspace: str | Path | None) -> str | None:
    """The workspace's path relative to ``tree`` when it lies inside it (``./agent_space``
    of a call made from the project tree), else None. The orchestrator's own files are
    never a change of the tree under test."""
    if workspace is None:
        return None
    try:
        rel = Path(workspace).resolve().relative_to(Path(tree).resolve())
    except (OSError, ValueError):
        return None
    return rel.as_posix() if rel.parts else None


def pathspec(exclude: str | None) -> list[str]:
    """The pathspec after ``--`` of the tree's git reads: the tree, the workspace left out
    (taken literally: a folder name with ``*`` or ``[`` is no pattern)."""
    return [".", f":(exclude,literal){exclude}"] if exclude else ["."]


def status_argv(path: str, exclude: str | None = None) -> list[str]:
    """``git status`` of the tree (``exclude``: a folder inside it that is not the tree's)."""
    return ["git", "-C", path, "status", "--porcelain=v2", "--branch", "--untracked-files=all",
            "--", *pathspec(exclude)]


def diff_argv(path: str, exclude: str | None = None) -> list[str]:
    return ["git", "-C", path, "diff", "HEAD", "--binary", "--", *pathspec(exclude)]


def tree_fingerprint(path: str, workspace: str | Path | None = None) -> str:
    """Git HEAD and the uncommitted changes, or the source files' names/sizes/mtimes; the
    ``workspace`` left out when it lies inside the tree."""
    exclude = inside(path, workspace)
    status = _git(status_argv(path, exclude))
    if status.ok:
        changes = status_changes(status.text)
        text = "\n".join([*(l for l in status.text.splitlines() if l.startswith("#")), *changes])
        if changes:
            diff = _git(diff_argv(path, exclude))
            text += diff.text
        return text
    parts: list[str] = []
    root = Path(path)
    skipped = (root / exclude).resolve() if exclude else None
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")
                             and d not in {"__pycache__", "build", "dist"}
                             and not d.endswith(".egg-info")
                             and (skipped is None or Path(dirpath, d).resolve() != skipped))
        for name in sorted(filenames):
            if Path(name).suffix in SOURCE_SUFFIXES and not name.startswith("."):
                st = os.stat(os.path.join(dirpath, name))
                parts.append(f"{os.path.relpath(os.path.join(dirpath, name), root)} "
                             f"{st.st_size} {st.st_mtime_ns}")
                if len(parts) >= MAX_FILES:
                    return "\n".join(parts)
    return "\n".join(parts)


def environment_key(source_dir: str | None, env: Mapping[str, str],
                    workspace: str | Path | None = None) -> str:
    """8 hex digits over the interpreter, the tree and the installed distributions (the
    ``workspace``'s own files left out of the tree when it lies inside it)."""
    python = interpreter(env)
    digest = hashlib.sha1(python.encode())
    digest.update(installed_fingerprint(python).encode())
    if source_dir and Path(source_dir).is_dir():
        digest.update(tree_fingerprint(source_dir, workspace).encode(errors="replace"))
    return digest.hexdigest()[:8]


ALIAS_SUFFIX = ".alias"


def write_alias(where: Path, name: str) -> None:
    """``<where>.alias`` names the flow folder ``name`` beside it (see ``aliased``)."""
    from workspace.atomic import write_atomic

    try:
        write_atomic(where.with_name(where.name + ALIAS_SUFFIX), name.encode())
    except OSError:
        pass  # only a convenience: without it a changed tree is a new flow, as before


def aliased(root: Path, flow_id: str) -> str | None:
    """The flow a finished flow's alias file names for ``flow_id`` (the key of the tree its
    own runs left, ``verdict.report.remember_tree_as_left``), when no flow lives at
    ``flow_id`` and that one does; else None."""
    folder = root / flow_id
    if folder.exists():
        return None
    try:
        name = (folder.parent / (folder.name + ALIAS_SUFFIX)).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    prefix = folder.name.rpartition("-")[0]
    if not name.startswith(prefix + "-") or "/" in name or name in (".", "..") \
            or not (folder.parent / name / "flow_state.json").is_file():
        return None
    return str(Path(flow_id).parent / name)


def unfinished(root: Path, prefix: str) -> str | None:
    """The flow id of an unfinished flow of the same inputs (``reproduce/<prefix>-*``), if
    any: a call with the same command resumes it, whatever the tree looks like meanwhile
    (a skip-marker re-run edits the tree; only a finished verdict is keyed anew)."""
    import json

    folder, _, name = prefix.rpartition("/")
    for other in sorted((root / folder).glob(f"{name}-*")):
        state = other / "flow_state.json"
        try:
            raw = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if raw.get("result") is None and not raw.get("aborted"):
            return f"{folder}/{other.name}"
    return None


def earlier_runs(root: Path, flow_id: str) -> list[str]:
    """Other flows of the same inputs (``<prefix>-*`` beside ``flow_id``), newest first,
    as ``<flow id> (<verdict> at <time>)``."""
    import json
    from datetime import datetime, timezone

    folder, _, name = flow_id.rpartition("/")
    prefix = name.rsplit("-", 1)[0]
    found = []
    for other in (root / folder).glob(f"{prefix}-*"):
        if other.name == name or not other.is_dir():
            continue
        verdict = other / "verdict.json"
        try:
            what = json.loads(verdict.read_text()).get("verdict", "?")
            when = datetime.fromtimestamp(verdict.stat().st_mtime, timezone.utc)
        except (OSError, ValueError):
            continue
        found.append((when, f"{folder}/{other.name} ({what} at {when:%Y-%m-%dT%H:%M:%SZ})"))
    return [text for _, text in sorted(found, reverse=True)]
