"""Batch sweeps: a file of reproducer entries in, the callers' buckets out.

Input formats (chosen by content, not by name):

- JSON: a list of entries, or ``{"entries": [...]}``;
- JSON lines: one entry object per line;
- text: one command per line (a node id list from a nightly CI report); ``#`` comments
  and blank lines are skipped.

An entry is ``{id?, command, failure_pattern?, ci_repo?, stage?, repeat?, timeout?}``:
``ci_repo`` is ``pytorch`` / ``torch-xpu-ops`` (pytorch-xpu) or an ``OWNER/NAME`` (local).
Each field an entry leaves out is the command line's (``--stage``, ``--failure-pattern``,
``--ci-repo``, ``--repeat``, ``--timeout``); one it sets is the entry's own. A malformed entry
does not stop the batch: it becomes an ``invalid`` row. Buckets:

- still_failing: REPRODUCED;
- already_fixed: NOT_REPRODUCED (the bug or the skip is stale);
- invalid_entry: NO_REPRODUCER and entries that do not parse;
- unverified: CANNOT_VERIFY, and every entry with no verdict (never read as success).
"""
from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from flow.workflows.reproduce.verdict.models import (
    CannotVerify, NoReproducer, NotReproduced, Reproduced, Verdict,
)


from flow.workflows.reproduce.batch.limits import (  # noqa: F401 (re-exported)
    MAX_BATCH_BYTES, MAX_ENTRIES, MAX_REPEAT, MAX_TIMEOUT_S, REPO_RE, is_repo,
)


class BatchEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # names the entry's log folder: no leading dot ("." and ".." would leave logs/)
    id: str = Field(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,99}$")
    command: str = Field(min_length=1)
    failure_pattern: str | None = None
    ci_repo: str | None = None
    stage: Literal["auto", "nightly"] | None = None   # None: the command line's --stage
    repeat: int | None = Field(default=None, ge=1, le=MAX_REPEAT)
    timeout: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)

    @field_validator("ci_repo")
    @classmethod
    def _repo(cls, value: str | None) -> str | None:
        if value is not None and value not in ("pytorch", "torch-xpu-ops") and not is_repo(value):
            raise ValueError("not pytorch, torch-xpu-ops or an OWNER/NAME")
        return value


class InvalidEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    error: str


class Bucket(StrEnum):
    STILL_FAILING = "still_failing"
    ALREADY_FIXED = "already_fixed"
    INVALID_ENTRY = "invalid_entry"
    UNVERIFIED = "unverified"


BUCKET_TITLES = {
    Bucket.STILL_FAILING: "Still failing",
    Bucket.ALREADY_FIXED: "Already fixed / stale skip",
    Bucket.INVALID_ENTRY: "Invalid entry",
    Bucket.UNVERIFIED: "Unverified",
}


def _entry(raw: object, index: int) -> BatchEntry | InvalidEntry:
    fallback_id = f"entry-{index + 1}"
    if not isinstance(raw, dict):
        return InvalidEntry(id=fallback_id, error=f"entry is {type(raw).__name__}, not an object")
    data = dict(raw)
    data.setdefault("id", fallback_id)
    try:
        return BatchEntry.model_validate(data)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        return InvalidEntry(id=str(data.get("id", fallback_id)), error=fields)


class BatchRefused(ValueError):
    """A batch file that is refused as a whole (too many entries, nested past parsing)."""


def parse_batch(text: str) -> list[BatchEntry | InvalidEntry]:
    """Entries of a batch file, in order. Never raises on bad entries (they come back as
    InvalidEntry). ``BatchRefused`` for more than ``MAX_ENTRIES`` entries or JSON nested too
    deep to parse; ``WorkflowInputError`` (``duplicate_ids``) for an id used twice, the rule
    ``campaign --items`` and ``--batch --campaign`` share (``flow.core.bounds``)."""
    try:
        items = _parse(text)
    except RecursionError:
        raise BatchRefused("the batch file's JSON is nested too deep to read") from None
    if len(items) > MAX_ENTRIES:
        raise BatchRefused(f"the batch file holds {len(items)} entries, more than the limit "
                           f"of {MAX_ENTRIES}")
    from flow.core.bounds import refuse_repeated

    refuse_repeated((item.id for item in items), "batch file")
    return items


def read_batch(path: str) -> list[BatchEntry | InvalidEntry]:
    """The entries of the batch file at ``path``, read when the flow reaches batch_setup as
    ``--batch`` was read at start (``flow.core.boundedfile``: a regular UTF-8 file of at most
    ``MAX_BATCH_BYTES``, at most ``MAX_ENTRIES`` entries): the file may have been replaced
    since (by a FIFO, ``/dev/zero``, a huge or binary file). ``WorkflowInputError`` saying what
    it is now; the flow's state is left as it was, and a --resume reads it again."""
    from flow.core.boundedfile import UnreadableFile, read_regular
    from flow.core.errors import WorkflowInputError

    mend = (f"put the batch file back (a JSON, JSON-lines or one-command-per-line file of at "
            f"most {MAX_BATCH_BYTES} bytes and {MAX_ENTRIES} entries), then run --resume")
    try:
        text = read_regular(path, MAX_BATCH_BYTES).decode("utf-8")
    except UnreadableFile as exc:
        raise WorkflowInputError(f"the batch file {path!r} {exc.reason}", mend) from None
    except UnicodeDecodeError:
        raise WorkflowInputError(f"the batch file {path!r} is not UTF-8 text (a binary file?)",
                                 mend) from None
    try:
        return parse_batch(text)
    except BatchRefused as exc:
        raise WorkflowInputError(f"the batch file {path!r}: {exc}", mend) from None


def _parse(text: str) -> list[BatchEntry | InvalidEntry]:
    stripped = text.strip()
    items: list[BatchEntry | InvalidEntry] = []
    if stripped.startswith(("[", "{")):
        try:
            data = json.loads(stripped)
            raws = data.get("entries", data) if isinstance(data, dict) else data
            if not isinstance(raws, list):
                raws = [raws]
            items = [_entry(r, i) for i, r in enumerate(raws)]
        except json.JSONDecodeError:
            for i, line in enumerate(l for l in stripped.splitlines() if l.strip()):
                try:
                    items.append(_entry(json.loads(line), i))
                except json.JSONDecodeError as exc:
                    items.append(InvalidEntry(id=f"entry-{i + 1}", error=f"bad JSON line: {exc}"))
    else:
        lines = [l.strip() for l in stripped.splitlines()]
        commands = [l for l in lines if l and not l.startswith("#")]
        items = [_entry({"command": c}, i) for i, c in enumerate(commands[:MAX_ENTRIES + 1])]
    return items


def bucket_of(verdict: Verdict | None) -> Bucket:
    """The bucket a final verdict falls in; no verdict is UNVERIFIED."""
    if isinstance(verdict, Reproduced):
        return Bucket.STILL_FAILING
    if isinstance(verdict, NotReproduced):
        return Bucket.ALREADY_FIXED
    if isinstance(verdict, NoReproducer):
        return Bucket.INVALID_ENTRY
    return Bucket.UNVERIFIED


class BatchRow(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    command: str
    bucket: Bucket
    verdict: Verdict | None = None
    note: str = ""


class BatchReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rows: list[BatchRow]
    counts: dict[Bucket, int]


def build_report(entries: list[BatchEntry | InvalidEntry],
                 verdicts: dict[str, Verdict]) -> BatchReport:
    """One row per entry, in batch order. Entries missing from ``verdicts`` are unverified."""
    rows = []
    for entry in entries:
        if isinstance(entry, InvalidEntry):
            rows.append(BatchRow(id=entry.id, command="", bucket=Bucket.INVALID_ENTRY,
                                 note=entry.error))
            continue
        verdict = verdicts.get(entry.id)
        note = "" if verdict is not None else "no verdict recorded"
        if isinstance(verdict, CannotVerify):
            note = f"{verdict.stage}: {verdict.blocker}" + (
                f"; {verdict.hint}" if verdict.hint else "")
        elif isinstance(verdict, NoReproducer):
            note = verdict.reason
        elif isinstance(verdict, NotReproduced):
            note = verdict.reason
        elif isinstance(verdict, Reproduced):
            note = f"{verdict.stage} on {verdict.base}"
        rows.append(BatchRow(id=entry.id, command=entry.command, bucket=bucket_of(verdict),
                             verdict=verdict, note=note))
    counts = {b: sum(1 for r in rows if r.bucket is b) for b in Bucket}
    return BatchReport(rows=rows, counts=counts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip() or " "


def render_markdown(report: BatchReport) -> str:
    """The report as Markdown: a count line, then one table per non-empty bucket."""
    parts = ["# Reproduce batch", "",
             " · ".join(f"{BUCKET_TITLES[b]}: {report.counts[b]}" for b in Bucket), ""]
    for bucket in Bucket:
        rows = [r for r in report.rows if r.bucket is bucket]
        if not rows:
            continue
        parts += [f"## {BUCKET_TITLES[bucket]} ({len(rows)})", "",
                  "| id | command | verdict | refined_command | unskipped | note |",
                  "|---|---|---|---|---|---|"]
        for r in rows:
            verdict = r.verdict.verdict if r.verdict is not None else "-"
            refined = getattr(r.verdict, "refined_command", "") or ""
            unskipped = getattr(r.verdict, "unskipped", None)
            skip = (f"{unskipped.decorator} ({Path(unskipped.file).name}:{unskipped.line}"
                    f"{', bypassed: ' + unskipped.bypass if unskipped.bypass else ', edited'})"
                    if unskipped else "")
            if getattr(r.verdict, "flaky", False):
                verdict += f" (flaky {r.verdict.failures}/{r.verdict.attempts})"  # type: ignore[union-attr]
            parts.append(f"| {_cell(r.id)} | `{_cell(r.command)}` | {verdict} | "
                         f"{'`' + _cell(refined) + '`' if refined else ' '} | {_cell(skip)} | "
                         f"{_cell(r.note)} |")
        parts.append("")
    return "\n".join(parts)


def render_json(report: BatchReport) -> str:
    return report.model_dump_json(indent=2)
