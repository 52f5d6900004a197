"""A small on-disk JSON cache of conditional-request answers: url -> (etag, body, next link).

The caller owns the path (one per workflow state dir). A corrupt or missing file is an
empty cache: the cost is one full read, never a wrong answer. Writes are atomic
(workspace.atomic.write_atomic) so a killed tick cannot leave half a file. On disk it is
a list of [key, entry] pairs, oldest first: the order is what eviction goes by, and the
project's one `dumps` sorts object keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from workspace.atomic import write_atomic
from workspace.jsonio import dumps, loads

MAX_ENTRIES = 1000  # old commits' pages age out; a tick on a 300-check PR needs about 10


class ETagCache:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._data: dict[str, dict[str, Any]] = {}
        self._dirty = False
        if path is not None and path.exists():
            try:
                self._data = {k: v for k, v in loads(path.read_bytes()) if isinstance(v, dict)}
            except (OSError, ValueError, TypeError):  # unreadable, not JSON, or not [[key, entry], ...]
                self._data = {}

    def get(self, key: str) -> dict[str, Any] | None:
        """{'etag', 'body', 'next'} for `key`, or None."""
        return self._data.get(key)

    def put(self, key: str, etag: str | None, body: Any, next_url: str | None) -> None:
        if not etag:
            return
        self._data.pop(key, None)  # re-insert at the end: eviction drops least recently written
        self._data[key] = {"etag": etag, "body": body, "next": next_url}
        self._dirty = True

    def recall(self, key: str) -> Any:
        """A value stored with `remember` (for immutable things such as a finished job's log), or None."""
        entry = self._data.get(key)
        return entry.get("value") if entry else None

    def remember(self, key: str, value: Any) -> None:
        self._data.pop(key, None)
        self._data[key] = {"value": value}
        self._dirty = True

    def save(self) -> None:
        """Persist if anything changed. Never raises for a None path."""
        if self.path is None or not self._dirty:
            return
        for key in list(self._data)[: max(len(self._data) - MAX_ENTRIES, 0)]:
            del self._data[key]
        write_atomic(self.path, dumps(list(self._data.items()), indent=False))
        self._dirty = False
