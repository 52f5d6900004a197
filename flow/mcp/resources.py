"""What the MCP server offers to read: each flow's results and audit log, each state diagram.

URIs:

- ``orchestrator://flow/<flow_id>/<file>`` for the files of ``FLOW_FILES`` a flow has written
  (``flow_id`` may hold slashes: ``refactor/core/test_ops``);
- ``orchestrator://graph/<workflow>`` for a workflow's state machine as Mermaid text, the
  same text ``orchestrator.py graph WORKFLOW`` prints under ``mermaid``.

Reads are read-only and take no lock (each file is written atomically or appended to by
lines; on the PostgreSQL store, ``--store``/``ORCHESTRATOR_STORE``, the outputs and audit
trail are read from the database), a flow file's text with secrets masked (``flow.core.redact``,
as the dashboard shows it); a URI outside these shapes, a flow id that fails the CLI's check, a file that is not
a regular file inside the workspace, or a workflow this installation lacks is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flow.core.errors import NotBuilt, OrchestratorError, UsageError
from workspace.paths import check_flow_id, is_inside

SCHEME = "orchestrator://"
FLOW_FILES: dict[str, tuple[str, str]] = {  # name -> (MIME type, what it is)
    "final_summary.md": ("text/markdown", "the refactor flow's final summary"),
    "verdict.json": ("application/json", "the reproduce verdict"),
    "report.md": ("text/markdown", "the report (reproduce batch)"),
    "report.json": ("application/json", "the report as JSON (reproduce, reproduce batch)"),
    "audit.jsonl": ("application/x-ndjson", "every transition, task, feed and refusal"),
}
MERMAID = "text/vnd.mermaid"
MAX_BYTES = 8 * 1024 * 1024  # a longer audit log is served from its end


class ResourceMissing(OrchestratorError):
    """No resource at that URI."""

    code = "resource_not_found"


@dataclass(frozen=True)
class Entry:
    uri: str
    name: str
    mime_type: str
    description: str


def flow_uri(flow_id: str, name: str) -> str:
    return f"{SCHEME}flow/{flow_id}/{name}"


def graph_uri(workflow: str) -> str:
    return f"{SCHEME}graph/{workflow}"


def templates() -> list[Entry]:
    """The URI templates (RFC 6570; ``{+flow_id}`` keeps its slashes)."""
    out = [Entry(f"{SCHEME}flow/{{+flow_id}}/{name}", f"flow {name}", mime, desc)
           for name, (mime, desc) in FLOW_FILES.items()]
    out.append(Entry(f"{SCHEME}graph/{{workflow}}", "state diagram", MERMAID,
                     "a workflow's state machine as Mermaid text"))
    return out


def _store_files(url: str) -> dict[str, set[str]]:
    """flow id -> the ``FLOW_FILES`` it has in the PostgreSQL store at ``url`` (its outputs,
    and ``audit.jsonl`` for every flow: the audit table)."""
    from flow.cli.campaigns import guard
    from workspace.pgconn import connect

    conn = connect(url)
    rows = guard(url, "listing the flows' outputs", lambda: conn.execute(
        "SELECT f.flow_id, a.name FROM flows f LEFT JOIN artifacts a ON a.flow_id = f.flow_id "
        "AND a.name = ANY(%s)", (list(FLOW_FILES),)).fetchall())
    out: dict[str, set[str]] = {}
    for flow_id, name in rows:
        out.setdefault(flow_id, {"audit.jsonl"}).update([name] if name else [])
    return out


def listed(root: Path, store: str | None = None) -> list[Entry]:
    """Every flow file that exists now (in the workspace, or the PostgreSQL ``store``), then
    one diagram per available workflow."""
    from flow.workflows import registry
    from flow.cli.status import collect

    out: list[Entry] = []
    if store is not None:
        from flow.cli.fleet import collect_store

        rows, have = collect_store(store), _store_files(store)
    else:
        rows, have = collect(root), {}
    for row in rows:
        folder = Path(row["path"]) if row.get("path") else None
        for name, (mime, desc) in FLOW_FILES.items():
            if (name in have.get(row["flow_id"], set()) if folder is None
                    else (folder / name).is_file()):
                out.append(Entry(flow_uri(row["flow_id"], name), f"{row['flow_id']} {name}",
                                 mime, f"{desc} ({row.get('workflow')}, phase "
                                       f"{row.get('phase')})"))
    for name in registry.names():
        try:
            wf = registry.load(name).WORKFLOW
        except NotBuilt:
            continue
        out.append(Entry(graph_uri(name), f"{name} state diagram", MERMAID,
                         wf.description or f"the {name} workflow's states and transitions"))
    return out


def _from_store(url: str, root: Path, flow_id: str, name: str) -> bytes | None:
    """Resource ``name`` of ``flow_id`` in the PostgreSQL store (its audit table for
    ``audit.jsonl``, the last ``MAX_BYTES`` of it), or None."""
    from flow.cli.campaigns import guard
    from workspace.jsonio import dumps
    from workspace.pgconn import connect
    from workspace.pgstore import PgFlowStore

    if name == "audit.jsonl":
        store = PgFlowStore(root, flow_id, url)
        if not store.exists():
            return None
        return b"".join(dumps(r, indent=False) + b"\n" for r in store.audit_lines())
    conn = connect(url)
    rows = guard(url, "reading a flow's output", lambda: conn.execute(
        "SELECT data FROM artifacts WHERE flow_id = %s AND name = %s",
        (flow_id, name)).fetchall())
    return bytes(rows[0][0]) if rows else None


def read(root: Path, uri: str, store: str | None = None) -> tuple[str, str]:
    """``(text, MIME type)`` of the resource at ``uri``; ``ResourceMissing`` if none (read
    from the PostgreSQL ``store`` when one is given)."""
    if uri.startswith(f"{SCHEME}graph/"):
        from flow.workflows import registry

        name = uri[len(f"{SCHEME}graph/"):]
        try:
            return registry.load(name).WORKFLOW.mermaid(), MERMAID
        except (UsageError, NotBuilt) as err:
            raise ResourceMissing(f"no state diagram for {name!r}: {err.message}",
                                  err.hint) from None
    if not uri.startswith(f"{SCHEME}flow/") or "/" not in uri[len(f"{SCHEME}flow/"):]:
        raise ResourceMissing(f"no resource {uri!r}",
                              "list the resources; URIs are orchestrator://flow/<flow_id>/<file> "
                              "and orchestrator://graph/<workflow>")
    flow_id, name = uri[len(f"{SCHEME}flow/"):].rsplit("/", 1)
    if name not in FLOW_FILES:
        raise ResourceMissing(f"{name!r} is not a flow resource",
                              f"one of: {', '.join(FLOW_FILES)}")
    folder = root / check_flow_id(flow_id)
    path = folder / name
    if store is not None:
        blob = _from_store(store, root, flow_id, name)
        if blob is None:
            raise ResourceMissing(f"flow {flow_id!r} has no {name} (yet)",
                                  "list the resources to see what each flow has written")
        size, data = len(blob), blob[-MAX_BYTES:]
        return _text(data, size, name)
    if path.is_symlink() or not path.is_file() or not is_inside(root, path.resolve()):
        raise ResourceMissing(f"flow {flow_id!r} has no {name} (yet)",
                              "list the resources to see what each flow has written")
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - MAX_BYTES))
        data = fh.read()
    return _text(data, size, name)


def _text(data: bytes, size: int, name: str) -> tuple[str, str]:
    from flow.core.redact import redact

    text = redact(data.decode("utf-8", errors="replace"))
    if size > MAX_BYTES:  # start at a whole line
        text = f"[first {size - MAX_BYTES} bytes left out]\n" + text.split("\n", 1)[-1]
    return text, FLOW_FILES[name][0]
