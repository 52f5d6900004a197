"""One flow's folder on disk: its state, audit log, spec cache and logs (the file store).

Reads are cheap (orjson only); pydantic validation happens in ``load``. Every write is atomic.
A state file that fails to load is never replaced: ``load`` raises ``StateLoadError`` and the
file stays where it is. ``FlowStore`` implements ``workspace.interface.StateStore``; the
PostgreSQL store (``workspace.pgstore``) parses state with the same ``parse_state``.
"""

from __future__ import annotations

import hashlib
import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow.core.errors import StateLoadError
from workspace.atomic import (
    append_line, read_nofollow, refuse_symlink, write_atomic, write_nofollow,
)
from flow.core.naming import now_iso  # noqa: F401 (re-exported)
from workspace.jsonio import dumps, loads
from workspace.paths import AUDIT_FILE, SPEC_CACHE, STATE_FILE, flow_dir

ERROR_FILE = ".last_error.json"

if TYPE_CHECKING:
    from flow.core.state import FlowState


TAIL_BYTES = 64 * 1024


class FlowStore:
    """The files of one flow under ``root/flow_id``."""

    def __init__(self, root: Path, flow_id: str) -> None:
        self.root = root
        self.flow_id = flow_id
        self.dir = flow_dir(root, flow_id)
        self.state_path = self.dir / STATE_FILE
        self.audit_path = self.dir / AUDIT_FILE
        self.spec_path = self.dir / SPEC_CACHE
        self.feeds_dir = self.dir / "feeds"
        self.logs_dir = self.dir / "logs"
        self.source = str(self.state_path)

    def exists(self) -> bool:
        return self.state_path.exists()

    def read_bytes(self) -> bytes:
        try:
            return self.state_path.read_bytes()
        except OSError as exc:
            raise StateLoadError(
                f"cannot read {str(self.state_path)!r}: {exc.strerror or exc}",
                "check the path and its permissions",
            ) from exc

    def sweep_tmp(self, older_than_s: float = 60.0) -> list[str]:
        """Remove the temporary files a killed atomic write left in the flow folder
        (``.<name>.<random>.tmp``, see ``workspace.atomic``) once older than ``older_than_s``
        (a write in progress lasts milliseconds); the names removed. Never follows a link."""
        import time as _time

        removed: list[str] = []
        try:
            entries = list(os.scandir(self.dir))
        except OSError:
            return removed
        for entry in entries:
            if not (entry.name.startswith(".") and entry.name.endswith(".tmp")):
                continue
            try:
                if (entry.is_file(follow_symlinks=False)
                        and _time.time() - entry.stat(follow_symlinks=False).st_mtime > older_than_s):
                    os.unlink(entry.path)
                    removed.append(entry.name)
            except OSError:
                continue
        return removed

    def load(self) -> FlowState:
        """Load, migrate and validate the state; raise ``StateLoadError`` and keep the file."""
        self.sweep_tmp()
        return parse_state(self.read_bytes(), str(self.state_path))

    def save(self, state: FlowState, event: str, **fields: Any) -> bytes:
        """Bump the revision, write atomically with its audit record inside, then log it.

        The audit record of a revision travels in the state file (``audit_record``) and is
        appended to ``audit.jsonl`` right after the state is replaced. A kill between the two
        loses nothing: ``replay_audit`` (run on every load) appends the record of the state on
        disk when the log's last revision is older. A kill before the replace loses neither:
        the old state and its record stand, and the step runs again.
        """
        state.revision += 1
        state.updated_at = now_iso()
        state.audit_record = {"at": state.updated_at, "event": event,
                              "revision": state.revision, **fields}
        data = dumps(state.model_dump(mode="json"))
        write_atomic(self.state_path, data)
        self._append(state.audit_record)
        return data

    def audit(self, event: str, **fields: Any) -> None:
        """Log an event that changes no state (a refused or duplicate feed)."""
        self._append({"at": now_iso(), "event": event, **fields})

    def replay_audit(self, state: FlowState) -> bool:
        """Append the state's own audit record if ``audit.jsonl`` lacks it; True if it did."""
        record = state.audit_record
        if not record or self._last_audited_revision() >= state.revision:
            return False
        self._append({**record, "replayed_at": now_iso()})
        return True

    def _append(self, record: dict[str, Any]) -> None:
        append_line(self.audit_path, dumps(record, indent=False))

    def _last_audited_revision(self) -> int:
        """The highest ``revision`` in the audit log (0 if none); a torn last line is skipped.

        Reads the log's tail first (the answer is almost always in its last lines), the whole
        log only when the tail holds no revision (a long run of refusals).
        """
        for tail in (TAIL_BYTES, None):
            try:
                data = read_nofollow(self.audit_path, tail)
            except FileNotFoundError:
                return 0
            lines = data.splitlines()
            if tail is not None and len(data) >= tail:
                lines = lines[1:]  # the first line of a tail may be cut
            for line in reversed(lines):
                try:
                    rev = loads(line).get("revision")
                except (ValueError, AttributeError):
                    continue
                if isinstance(rev, int):
                    return rev
            if tail is not None and len(data) < tail:
                return 0  # the tail was the whole log
        return 0

    def cache_spec(self, state_bytes: bytes, spec: dict[str, Any]) -> None:
        record = {"state_sha": _sha(state_bytes), "spec": spec}
        data = dumps(record, indent=False)
        try:
            if self.spec_path.read_bytes() == data:
                return
        except OSError:
            pass
        write_atomic(self.spec_path, data)

    def cached_spec(self) -> dict[str, Any] | None:
        """The spec rendered from exactly the state now on disk, or None.

        The cache is trusted only when the hash of the current state bytes matches the one
        it was rendered from, so an edited or newer state always takes the full path.
        """
        try:
            record = loads(self.spec_path.read_bytes())
            state_bytes = self.state_path.read_bytes()
        except (OSError, ValueError):
            return None
        if not isinstance(record, dict) or record.get("state_sha") != _sha(state_bytes):
            return None
        spec = record.get("spec")
        return spec if isinstance(spec, dict) else None

    def log(self, message: str) -> None:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        refuse_symlink(self.logs_dir)
        from flow.core.redact import redact

        write_nofollow(self.logs_dir / "orchestrator.log",
                       f"{now_iso()} {redact(message)}\n".encode(), append=True)


    def lock(self) -> AbstractContextManager[object]:
        """The flow's lock (``workspace.lock.FlowLock`` on its folder)."""
        from workspace.lock import FlowLock

        return FlowLock(self.dir)

    def audit_lines(self) -> list[dict[str, object]]:
        """Every whole record of ``audit.jsonl`` in order (a torn line is skipped)."""
        try:
            data = read_nofollow(self.audit_path)
        except FileNotFoundError:
            return []
        out = []
        for line in data.splitlines():
            try:
                record = loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def record_error(self, record: dict[str, Any] | None) -> None:
        """Keep the last error of a call beside the state (None clears it); best effort."""
        path = self.dir / ERROR_FILE
        if record is None:
            path.unlink(missing_ok=True)
            return
        if not self.dir.exists():
            return
        try:
            write_atomic(path, dumps(record))
        except OSError:
            pass

    def last_error(self) -> dict[str, Any] | None:
        try:
            record = loads((self.dir / ERROR_FILE).read_bytes())
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def move_aside(self, stamp: str) -> str:
        """Rename the folder to ``<name>.old-<stamp>[-n]`` (never onto an earlier one); the
        caller holds the lock. Returns the new flow id."""
        target = self.dir.with_name(f"{self.dir.name}.old-{stamp}")
        n = 1
        while target.exists():  # two restarts within one second
            n += 1
            target = self.dir.with_name(f"{self.dir.name}.old-{stamp}-{n}")
        (self.dir / ".lock.holder").unlink(missing_ok=True)  # the old flow is not held once moved
        self.dir.rename(target)
        return str(target.relative_to(self.root))


def parse_state(data: bytes, source: str) -> FlowState:
    """Parse, migrate and validate state bytes; ``StateLoadError`` names ``source`` if not."""
    from pydantic import ValidationError

    from flow.core.state import SCHEMA_VERSION, FlowState
    from workspace.migrations import migrate

    try:
        raw = loads(data)
    except ValueError as exc:
        raise StateLoadError(
            f"{source} is not valid JSON: {exc}",
            "the file is kept for inspection; restore it from a backup or move the flow "
            "folder aside to start anew",
        ) from exc
    if not isinstance(raw, dict):
        raise StateLoadError(f"{source} holds a {type(raw).__name__}, not an object",
                             "the file is kept for inspection; move the flow folder aside")
    raw = migrate(raw, SCHEMA_VERSION, source)
    try:
        return FlowState.model_validate(raw)
    except ValidationError as exc:
        raise StateLoadError(
            f"{source} does not match the state schema: {_first_errors(exc)}",
            "the file is kept for inspection; fix the named fields or move the folder aside",
        ) from exc


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _first_errors(exc: Any, limit: int = 3) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc or '<root>'}: {err.get('msg')}")
    return "; ".join(parts)
