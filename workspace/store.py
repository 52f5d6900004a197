"""One flow's folder on disk: its state, audit log, spec cache and logs.

Reads are cheap (orjson only); pydantic validation happens in ``load``. Every write is atomic.
A state file that fails to load is never replaced: ``load`` raises ``StateLoadError`` and the
file stays where it is.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flow.errors import StateLoadError
from workspace.atomic import append_line, write_atomic
from workspace.jsonio import dumps, loads
from workspace.paths import AUDIT_FILE, SPEC_CACHE, STATE_FILE, flow_dir

if TYPE_CHECKING:
    from flow.state import FlowState


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


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

    def load(self) -> FlowState:
        """Load, migrate and validate the state; raise ``StateLoadError`` and keep the file."""
        from pydantic import ValidationError

        from flow.state import SCHEMA_VERSION, FlowState
        from workspace.migrations import migrate

        data = self.read_bytes()
        source = str(self.state_path)
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

    def save(self, state: FlowState) -> bytes:
        """Bump the revision and write atomically; return the bytes written."""
        state.revision += 1
        state.updated_at = now_iso()
        data = dumps(state.model_dump(mode="json"))
        write_atomic(self.state_path, data)
        return data

    def audit(self, event: str, **fields: Any) -> None:
        record = {"at": now_iso(), "event": event, **fields}
        append_line(self.audit_path, dumps(record, indent=False))

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
        with open(self.logs_dir / "orchestrator.log", "a", encoding="utf-8") as fh:
            fh.write(f"{now_iso()} {message}\n")


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _first_errors(exc: Any, limit: int = 3) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{loc or '<root>'}: {err.get('msg')}")
    return "; ".join(parts)
