"""Which refactor flow a start command means (seed "Resuming After Interruption" and the
workspace layout ``agent_space/refactor/{field}/{file_name}/``).

The first flow of a file keeps the seed's folder ``refactor/<field>/<stem>``. A flow is the
same inputs only when it refactors the same file of the same checkout: an unfinished one is
resumed whatever the file looks like meanwhile (its agents edit it in place); a finished one
is reused only when the file now reads as its original did. Any other checkout, or other file
content (the refactored result itself, a newer upstream), is a new flow
``refactor/<field>/<stem>-<8 hex over checkout, path and content>``, never the earlier
answer reported as "same inputs". Standard library only: the command line asks here before
any workflow model is imported.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

STATE = "flow_state.json"
_SUFFIX = re.compile(r"-[0-9a-f]{8}$")


def content_key(repo: Path, rel: str, content: bytes) -> str:
    """8 hex digits over the checkout, the file's path in it and its content."""
    digest = hashlib.sha1(f"{repo}\0{rel}\0".encode())
    digest.update(content)
    return digest.hexdigest()[:8]


def _flows(root: Path, base: str) -> list[tuple[str, dict]]:
    """(flow id, saved state) of ``base`` and its ``base-<8 hex>`` siblings that have a state."""
    folder, _, stem = base.rpartition("/")
    found = []
    names = [stem] + sorted(p.name for p in (root / folder).glob(f"{stem}-*")
                            if _SUFFIX.search(p.name) and p.name[:-9] == stem)
    for name in names:
        try:
            raw = json.loads((root / folder / name / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(raw, dict):
            found.append((f"{folder}/{name}", raw))
    return found


def flow_for(root: Path, base: str, repo: Path, absolute: Path, rel: str) -> str:
    """The flow id for refactoring ``absolute`` (``rel`` in the checkout ``repo``)."""
    try:
        content = absolute.read_bytes()
    except OSError:
        return base  # start refuses a missing file with its own error
    same, finished = [], []
    for flow_id, raw in _flows(root, base):
        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        if data.get("repo") != str(repo) or data.get("file") != str(absolute):
            continue
        if raw.get("result") is None and not raw.get("aborted"):
            same.append(flow_id)
        else:
            finished.append(flow_id)
    if same:
        return same[0]
    for flow_id in finished:
        try:
            if (root / flow_id / "original" / absolute.name).read_bytes() == content:
                return flow_id
        except OSError:
            continue
    if not (root / base / STATE).exists():  # a folder no flow was saved in (a call killed
        return base                          # before its first save) is still the file's own
    return f"{base}-{content_key(repo, rel, content)}"
