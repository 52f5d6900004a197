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


class Saved:
    """The saved flows a start compares itself with: the workspace's folders (the file
    store). ``workspace.pgstore.PgSaved`` answers the same two questions from the
    PostgreSQL store, where another machine's flows of the file live."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def states(self, base: str) -> list[tuple[str, dict]]:
        """(flow id, saved state) of ``base`` and of the ``base-*`` flows that have a state
        (``flow_for`` keeps the ``base-<8 hex>`` ones); a state that does not parse reads as
        ``{}`` (its id is still taken)."""
        folder, _, stem = base.rpartition("/")
        found = []
        names = [stem] + sorted(p.name for p in (self.root / folder).glob(f"{stem}-*"))
        for name in names:
            try:
                text = (self.root / folder / name / STATE).read_text(encoding="utf-8")
            except OSError:
                continue
            try:
                raw = json.loads(text)
            except ValueError:
                raw = {}
            found.append((f"{folder}/{name}", raw if isinstance(raw, dict) else {}))
        return found

    def original_sha(self, flow_id: str, name: str) -> str | None:
        """sha256 of the flow's kept original ``original/<name>``; None when it has none."""
        try:
            return hashlib.sha256((self.root / flow_id / "original" / name).read_bytes()).hexdigest()
        except OSError:
            return None


def _of_file(base: str, flow_id: str) -> bool:
    """``flow_id`` is ``base`` or ``base-<8 hex>``: a flow of the same file."""
    return flow_id == base or bool(_SUFFIX.search(flow_id)) and flow_id[:-9] == base


def flow_for(root: Path, base: str, repo: Path, absolute: Path, rel: str,
             saved: Saved | None = None) -> str:
    """The flow id for refactoring ``absolute`` (``rel`` in the checkout ``repo``), among
    the flows ``saved`` holds (default: the workspace's folders under ``root``)."""
    try:
        content = absolute.read_bytes()
    except OSError:
        return base  # start refuses a missing file with its own error
    saved = Saved(root) if saved is None else saved
    flows = [(flow_id, raw) for flow_id, raw in saved.states(base) if _of_file(base, flow_id)]
    same, finished = [], []
    for flow_id, raw in flows:
        data = raw.get("data") if isinstance(raw.get("data"), dict) else {}
        if data.get("repo") != str(repo) or data.get("file") != str(absolute):
            continue
        if raw.get("result") is None and not raw.get("aborted"):
            same.append(flow_id)
        else:
            finished.append(flow_id)
    if same:
        return same[0]
    digest = hashlib.sha256(content).hexdigest() if finished else ""
    for flow_id in finished:
        if saved.original_sha(flow_id, absolute.name) == digest:
            return flow_id
    if base not in {flow_id for flow_id, _ in flows}:  # no flow was saved there (a call
        return base                                    # killed before its first save)
    return f"{base}-{content_key(repo, rel, content)}"
