"""A reproduce campaign's report: the fleet-wide batch, in the very buckets and Markdown of
``reproduce --batch``'s ``report.md`` (``flow.workflows.reproduce.batch.entries``), built from
the verdicts the items were finished with; an item not done yet is unverified, with its
state as the note. Written to ``<workspace>/campaigns/<name>/report.md`` and ``report.json``
by ``status --campaign`` and by the call that finds the campaign finished."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def _command(argv: list[str]) -> str:
    for i, word in enumerate(argv[:-1]):
        if word == "--command":
            return argv[i + 1]
    return " ".join(argv)


def write_report(conn: Any, name: str, root: Path) -> dict[str, Any]:
    """Build and write the report of reproduce campaign ``name``; its counts by bucket and
    the paths written."""
    from pydantic import TypeAdapter, ValidationError

    from flow.workflows.reproduce.batch.entries import (
        BatchEntry, build_report, render_json, render_markdown,
    )
    from flow.workflows.reproduce.verdict.models import Verdict
    from workspace.atomic import write_atomic
    from workspace.campaignstatus import items
    from workspace.paths import safe_name

    adapter: TypeAdapter[Any] = TypeAdapter(Verdict)
    entries, verdicts, notes = [], {}, {}
    for item_id, argv, state, result in items(conn, name):
        entries.append(BatchEntry.model_construct(id=item_id, command=_command(argv)))
        raw = (result or {}).get("verdict") if state == "done" else None
        if isinstance(raw, dict):
            try:
                verdicts[item_id] = adapter.validate_python(raw)
            except ValidationError:
                notes[item_id] = "its recorded verdict cannot be read"
        else:
            notes[item_id] = ("no verdict" if state == "done" else "dropped by a person"
                              if state == "dropped" else f"not done yet: {state}")
    built = build_report(entries, verdicts)
    for row in built.rows:
        if row.id in notes:
            row.note = notes[row.id]
    folder = root / "campaigns" / safe_name(name)
    folder.mkdir(parents=True, exist_ok=True)
    md, js = folder / "report.md", folder / "report.json"
    from flow.core.redact import redact  # the verdicts quote fed logs: secrets masked

    write_atomic(md, redact(render_markdown(built).replace(
        "# Reproduce batch", f"# Reproduce campaign {name}", 1)).encode())
    write_atomic(js, redact(render_json(built)).encode())
    return {"counts": {str(k): v for k, v in built.counts.items()}, "report_path": str(md),
            "report_json_path": str(js)}
