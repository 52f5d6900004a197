"""The two stores as the contract suite sees them: where a run's state and audit trail are,
read the way a person would (the files, or the rows), and the settings that point a call at
each. ``FileStoreView`` reads ``flow_state.json``/``audit.jsonl``; ``PgStoreView`` gives each
workspace a database of its own on the session's real PostgreSQL cluster and reads its rows."""

from __future__ import annotations

import itertools
import json
import os
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any


_COUNT = itertools.count(1)


class FileStoreView:
    name = "file"

    def env(self, ws: Path) -> dict[str, str]:
        return {}

    def live_flows(self, ws: Path) -> list[str]:
        return [str(p.parent.relative_to(ws)) for p in ws.rglob("flow_state.json")
                if ".old-" not in str(p)]

    def state_bytes(self, ws: Path, flow_id: str) -> bytes:
        return (ws / flow_id / "flow_state.json").read_bytes()

    def audit(self, ws: Path, flow_id: str) -> list[dict[str, Any]]:
        lines = (ws / flow_id / "audit.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines]

    def lock(self, ws: Path, flow_id: str) -> AbstractContextManager[Any]:
        from workspace.lock import FlowLock

        return FlowLock(ws / flow_id)


class PgStoreView:
    name = "postgres"

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.urls: dict[Path, str] = {}

    def url(self, ws: Path) -> str:
        if ws not in self.urls:
            self.urls[ws] = self.cluster.create_db(f"c{os.getpid()}_{next(_COUNT)}")
        return self.urls[ws]

    def env(self, ws: Path) -> dict[str, str]:
        return {"ORCHESTRATOR_STORE": self.url(ws)}

    def _rows(self, ws: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        import psycopg

        with psycopg.connect(self.url(ws)) as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except psycopg.errors.UndefinedTable:
                return []

    def live_flows(self, ws: Path) -> list[str]:
        return [r[0] for r in self._rows(ws, "SELECT flow_id FROM flows WHERE flow_id NOT LIKE "
                                              "'%%.old-%%'")]

    def state_bytes(self, ws: Path, flow_id: str) -> bytes:
        [row] = self._rows(ws, "SELECT state FROM flows WHERE flow_id = %s", (flow_id,))
        return bytes(row[0])

    def audit(self, ws: Path, flow_id: str) -> list[dict[str, Any]]:
        rows = self._rows(ws, "SELECT record FROM audit WHERE flow_id = %s ORDER BY id",
                          (flow_id,))
        return [json.loads(bytes(r[0])) for r in rows]

    def lock(self, ws: Path, flow_id: str) -> AbstractContextManager[Any]:
        from workspace.pgstore import PgFlowStore

        return PgFlowStore(ws, flow_id, self.url(ws)).lock()
