"""A flow's outputs on the PostgreSQL store: the files another machine needs to resume the
flow or report it, kept in the ``artifacts`` table beside the state row.

The outputs are the regular files at the top of the flow folder (what the workflows write:
reproduce's ``verdict.json``/``report.json``, a batch's ``report.md``, refactor's
``assessment.json``, ``analyst_report.json`` (written by the agent), ``coder_tasks.json``,
``final_summary.md``, the CI babysitter's cache...), the files under ``original/`` and
``rule_base/`` (refactor's copy of the file and its per-rule bases), and the feed file of
every accepted task (``feeds/<task_id>.json``). A machine's own things stay local: logs,
background job files, builds and venvs, scratch folders, hidden files, files over
``MAX_BYTES`` (named in the flow's log), links (never followed).

``scan`` hashes what is in the local folder; a save sends what changed since the last sync
in its own transaction, and a load writes what the database has and this folder lacks
(``workspace.pgstore``). The folder keeps a manifest (``MANIFEST``) of the names and hashes it
last had in common with the database: a file that matches it but is gone from the database
was removed on another machine and is removed here; a file not in it was written here since
(an agent's report before its feed) and is kept.

The state's paths name the workspace they were written in; ``rebase`` rewrites them for the
workspace of this call (a second machine with another ``--workspace`` path).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from workspace.atomic import write_atomic
from workspace.jsonio import dumps, loads

MANIFEST = ".store_outputs.json"
SUBDIRS = ("original", "rule_base")
MAX_BYTES = 8 * 1024 * 1024


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _regular(path: Path) -> os.stat_result | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _files(folder: Path, prefix: str) -> Iterable[tuple[str, Path]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_file(follow_symlinks=False):
            continue
        yield prefix + entry.name, Path(entry.path)


def scan(flow_dir: Path, applied: Iterable[str]) -> tuple[dict[str, bytes], list[str]]:
    """(name -> bytes of every output now in ``flow_dir``, names too big to keep).
    ``applied``: the task ids whose feed files count (the accepted ones)."""
    found: list[tuple[str, Path]] = list(_files(flow_dir, ""))
    for sub in SUBDIRS:
        if (flow_dir / sub).is_dir() and not (flow_dir / sub).is_symlink():
            found.extend(_files(flow_dir / sub, f"{sub}/"))
    for task_id in applied:
        name = f"feeds/{task_id}.json"
        if _regular(flow_dir / name) is not None and not (flow_dir / "feeds").is_symlink():
            found.append((name, flow_dir / name))
    out: dict[str, bytes] = {}
    big: list[str] = []
    for name, path in found:
        st = _regular(path)
        if st is None:
            continue
        if st.st_size > MAX_BYTES:
            big.append(name)
            continue
        try:
            out[name] = path.read_bytes()
        except OSError:
            continue
    return out, big


def holds(data: bytes, accepted: str | None) -> bool:
    """Whether feed file bytes hold the result accepted with digest ``accepted`` (the
    engine's: the JSON object without its ``task_id``)."""
    from workspace.jsonio import digest

    try:
        content = loads(data)
    except ValueError:
        return False
    if not isinstance(content, dict) or accepted is None:
        return False
    return digest({k: v for k, v in content.items() if k != "task_id"}) == accepted


def safe_name(name: str) -> bool:
    """An output name may only name a file of the flow folder (no '..', no absolute path)."""
    parts = name.split("/")
    return bool(name) and not name.startswith("/") and all(
        p and p not in (".", "..") for p in parts) and "\\" not in name and "\0" not in name


def read_manifest(flow_dir: Path) -> dict[str, str]:
    try:
        raw = loads((flow_dir / MANIFEST).read_bytes())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def write_manifest(flow_dir: Path, synced: dict[str, str]) -> None:
    if flow_dir.is_dir():
        write_atomic(flow_dir / MANIFEST, dumps(dict(sorted(synced.items())), indent=False))


def place(flow_dir: Path, name: str, data: bytes) -> None:
    """Write output ``name`` into the flow folder (its sub-folder made; links refused)."""
    target = flow_dir / name
    for parent in reversed(target.relative_to(flow_dir).parents):
        folder = flow_dir / parent
        if folder.is_symlink():
            raise OSError(f"{folder} is a link; the flow's outputs are not written through it")
        folder.mkdir(exist_ok=True)
    if target.is_symlink():
        target.unlink()
    write_atomic(target, data)


def rebase(data: bytes, old_root: str | None, new_root: str) -> bytes:
    """State bytes with every path under ``old_root`` moved under ``new_root`` (the same
    bytes when they are the same or the old one is unknown). The root counts as a path
    where it ends a JSON string, a path segment, or a word of a printed command
    (``--workspace ROOT --harness ...``, quoted or not)."""
    if not old_root or old_root == new_root:
        return data
    old = dumps(old_root, indent=False)[1:-1]
    new = dumps(new_root, indent=False)[1:-1]
    return re.sub(re.escape(old) + rb"(?=[/\"'\s]|\\n)", new.replace(b"\\", b"\\\\"), data)
