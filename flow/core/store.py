"""The store interface: what the engine and the command line need from where a flow lives.

Two stores implement it: ``workspace.store.FlowStore`` (the flow's folder, the default) and
``workspace.pgstore.PgFlowStore`` (state, audit trail, spec cache and lock in PostgreSQL, the
files a harness needs on its own machine in the same local folder). Both give the same
guarantees: one atomic write per save, a refused input changes nothing, one lock holder at a
time that is named when busy, a state newer than the code refused.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from flow.core.state import FlowState


class StateStore(Protocol):
    """One flow's persistence. ``dir`` is the local folder for feeds, logs and artifacts."""

    root: Path
    flow_id: str
    dir: Path
    feeds_dir: Path
    logs_dir: Path
    source: str  # where the state lives, for messages (a path, or a masked URL and flow id)

    def exists(self) -> bool: ...

    def read_bytes(self) -> bytes: ...

    def load(self) -> FlowState: ...

    def save(self, state: FlowState, event: str, **fields: Any) -> bytes: ...

    def audit(self, event: str, **fields: Any) -> None: ...

    def replay_audit(self, state: FlowState) -> bool: ...

    def cache_spec(self, state_bytes: bytes, spec: dict[str, Any]) -> None: ...

    def cached_spec(self) -> dict[str, Any] | None: ...

    def log(self, message: str) -> None: ...

    def lock(self) -> AbstractContextManager[Any]: ...

    def audit_lines(self) -> list[dict[str, Any]]: ...

    def record_error(self, record: dict[str, Any] | None) -> None: ...

    def last_error(self) -> dict[str, Any] | None: ...

    def move_aside(self, stamp: str) -> str: ...
