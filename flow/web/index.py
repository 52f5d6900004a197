"""The dashboard's index of flows: one summary per flow, re-read only when that flow changed.

A page asking for the list never walks and parses the whole workspace: ``FlowIndex`` keeps
each flow's summary (the fields ``status`` lists, ``flow.cli.status.describe``) with the
signature it was read under, and a refresh re-reads a flow only when its signature moved:

- the file store: the (mtime, size) of the flow's ``flow_state.json``, ``.last_error.json``,
  ``audit.jsonl``, ``cron_job.json``, its ``jobs/`` folder (a job's result file appearing) and the logs of its
  running jobs; folders are found by a walk that lists a directory again only when its own
  mtime changed, and never descends into a flow's ``scratch``, ``logs``, ``jobs`` or
  ``original`` folders;
- the PostgreSQL store: each row's ``revision`` and the digest of its ``last_error``, one
  small query; only changed states are fetched. The campaign items that need a person
  (expired leases, parked items: ``workspace.campaignstatus.attention``) are read by a second
  small query on each refresh and kept in ``items``; they count as a change only when an item
  comes, goes or changes (not as its lease ages).

A refresh runs at most once per ``fresh_s``, one at a time, in a background thread after
the first (a request is answered from the summaries known, never kept waiting by a walk); ``generation`` counts the changes, so a page can be answered
"not modified" (``flow.web.app``). ``reads`` counts the flow files opened and the states
fetched: nothing changed, nothing read. Blocking work here runs in a worker thread, never on
the server's event loop (the app calls it through ``run_in_threadpool``).
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from workspace.paths import AUDIT_FILE, STATE_FILE

SKIP = frozenset({"scratch", "logs", "jobs", "original", ".git", "feeds"})
Signature = tuple[Any, ...]


def _stamped(row: dict[str, Any]) -> dict[str, Any]:
    """The summary with ``updated_ts``, its ``updated_at`` parsed once here, not per page."""
    from flow.cli.inbox import stamp_of

    row["updated_ts"] = stamp_of(row.get("updated_at"))
    return row


def _steady(items: tuple[list[dict[str, Any]], dict[str, int]]) -> Any:
    """The items without what moves with the clock alone (how long ago a lease expired)."""
    return ([{k: v for k, v in it.items() if k != "expired_s_ago"} for it in items[0]],
            items[1])


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class FlowIndex:
    """The summaries of every flow of ``source`` (``flow.web.source``)."""

    def __init__(self, root: Path, source: Any, fresh_s: float = 1.0) -> None:
        self.root = root.resolve()
        self.source = source
        self.fresh_s = fresh_s
        self.reads = 0
        self.generation = 0
        self.checked = 0.0
        self._rows: dict[str, dict[str, Any]] = {}
        self._sigs: dict[str, Signature] = {}
        self._dirs: dict[str, tuple[int, list[str], bool]] = {}
        self._lock = threading.Lock()
        self.on_change: Any = None
        # the campaign items that need a person, and their counts (None: the file store)
        self.items: tuple[list[dict[str, Any]], dict[str, int]] | None = None

    def rows(self) -> list[dict[str, Any]]:
        """The summaries. The first call reads them; later ones answer at once from what is
        known (``later`` refreshes them once the answer is sent), so no request waits on a
        workspace walk."""
        if not self.checked:
            with self._lock:
                if not self.checked:
                    self.refresh()
        return list(self._rows.values())

    def later(self) -> None:
        """When the last refresh is older than ``fresh_s``, start one in a background thread
        (never two at a time); the app calls this after an answer went out."""
        if time.monotonic() - self.checked >= self.fresh_s and \
                self._lock.acquire(blocking=False):
            threading.Thread(target=self._refresh_and_release, daemon=True,
                             name="dashboard-index").start()

    def _refresh_and_release(self) -> None:
        try:
            self.refresh()
        except Exception:  # noqa: BLE001 - a store that does not answer: try again later
            self.checked = time.monotonic()
        finally:
            self._lock.release()

    def refresh(self) -> bool:
        """Re-read the flows whose signature changed; True if anything did. The summaries
        are swapped in at once (a reader never sees a half-made table)."""
        url = getattr(self.source, "url", None)
        rows = dict(self._rows)
        self._changed = False
        seen = self._store_refresh(url, rows) if url else self._folder_refresh(rows)
        gone = set(rows) - seen
        for flow_id in gone:
            rows.pop(flow_id, None)
            self._sigs.pop(flow_id, None)
        changed = bool(gone) or self._changed
        if changed:
            self._rows = dict(sorted(rows.items()))
            self.generation += 1
        self.checked = time.monotonic()
        if changed and self.on_change is not None:
            self.on_change()  # the app renders its default list now, not at the next poll
        return changed

    # -- the file store ------------------------------------------------------------------

    def _folder_refresh(self, rows: dict[str, dict[str, Any]]) -> set[str]:
        seen: set[str] = set()
        root = str(self.root)
        for folder in self._flow_folders(root):
            flow_id = os.path.relpath(folder, root)
            if ".old-" in flow_id:
                continue
            seen.add(flow_id)
            sig = self._signature(folder, rows.get(flow_id))
            if self._sigs.get(flow_id) == sig and flow_id in rows:
                continue
            rows[flow_id] = self._read_folder(flow_id, Path(folder))
            self._sigs[flow_id] = self._signature(folder, rows[flow_id])
            self._changed = True
        return seen

    def _flow_folders(self, root: str) -> list[str]:
        """Every folder holding a state file, listing a directory only when it changed."""
        out: list[str] = []
        stack = [root]
        known: dict[str, tuple[int, list[str], bool]] = {}
        while stack:
            path = stack.pop()
            try:
                mtime = os.stat(path).st_mtime_ns
            except OSError:
                continue
            cached = self._dirs.get(path)
            if cached is None or cached[0] != mtime:
                try:
                    with os.scandir(path) as it:
                        entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
                except OSError:
                    continue
                is_flow = any(n == STATE_FILE and not d for n, d in entries)
                subdirs = sorted(os.path.join(path, n) for n, d in entries if d and not (
                    is_flow and n in SKIP))
                cached = (mtime, subdirs, is_flow)
            known[path] = cached
            if cached[2]:
                out.append(path)
            stack.extend(reversed(cached[1]))
        self._dirs = known
        return out

    def _signature(self, folder: str, row: dict[str, Any] | None) -> Signature:
        files = [STATE_FILE, ".last_error.json", AUDIT_FILE, "jobs", "cron_job.json"]
        sig = [_stat(os.path.join(folder, f)) for f in files]
        for job in (row or {}).get("jobs") or []:  # a running job's log moves on
            log = job.get("log_file")
            if log and job.get("log_readable", True):
                sig.append(_stat(str(log)))
        return tuple(sig)

    def _read_folder(self, flow_id: str, folder: Path) -> dict[str, Any]:
        from flow.cli.status import describe
        from workspace.jsonio import loads

        row: dict[str, Any] = {"flow_id": flow_id, "path": str(folder)}
        self.reads += 1
        try:
            raw = loads((folder / STATE_FILE).read_bytes())
            row.update(describe(raw, folder, self.allowed))
        except (OSError, ValueError, AttributeError) as exc:
            row.update(workflow=None, phase=None, unreadable=str(exc))
        from flow.cli.inbox import sleeping

        self.reads += 1
        row["sleeping"] = sleeping(folder)
        try:
            self.reads += 1
            err = loads((folder / ".last_error.json").read_bytes())
            row["last_error"] = f"{err.get('code')}: {err.get('message')}"
        except (OSError, ValueError, AttributeError):
            row["last_error"] = None
        return _stamped(row)

    def allowed(self, path: str) -> Path | None:
        """A log may be read only when it resolves inside the workspace."""
        from flow.web.pages import inside

        return inside(self.root, path) if path else None

    # -- the PostgreSQL store ------------------------------------------------------------

    def _store_refresh(self, url: str, known: dict[str, dict[str, Any]]) -> set[str]:
        from flow.cli.campaigns import guard
        from workspace.pgconn import connect

        conn = connect(url)
        marks = guard(url, "listing the flows", lambda: conn.execute(
            "SELECT flow_id, revision, md5(coalesce(last_error, ''::bytea)) FROM flows "
            "WHERE flow_id NOT LIKE %s", ("%.old-%",)).fetchall())
        want = [fid for fid, rev, err in marks if self._sigs.get(fid) != (rev, err)]
        for start in range(0, len(want), 500):
            chunk = want[start:start + 500]
            rows = guard(url, "reading the flows", lambda c=chunk: conn.execute(  # type: ignore[misc]
                "SELECT flow_id, state, last_error, revision, root, "
                "md5(coalesce(last_error, ''::bytea)) FROM flows WHERE flow_id = ANY(%s)",
                (c,)).fetchall())
            for flow_id, state, last_error, rev, old_root, err in rows:
                self.reads += 1
                known[flow_id] = self._read_row(flow_id, state, last_error, old_root)
                self._sigs[flow_id] = (rev, err)
                self._changed = True
        from flow.cli.inbox import stamp_of
        from workspace.campaignstatus import attention

        items = guard(url, "reading the campaigns' expired leases", attention, conn)
        for item in items[0]:
            item["expired_epoch"] = stamp_of(item.get("lease_until"))
        if self.items is None or _steady(self.items) != _steady(items):
            self._changed = True
        self.items = items
        return {fid for fid, _, _ in marks}

    def _read_row(self, flow_id: str, state: Any, last_error: Any,
                  old_root: str | None) -> dict[str, Any]:
        from flow.cli.status import describe
        from workspace.jsonio import loads
        from workspace.pgoutputs import rebase

        row: dict[str, Any] = {"flow_id": flow_id, "path": None}
        try:
            raw = loads(rebase(bytes(state), old_root, str(self.root)))
            row.update(describe(raw, None, self.allowed))
        except (ValueError, AttributeError) as exc:
            row.update(workflow=None, phase=None, unreadable=str(exc))
        try:
            err = loads(bytes(last_error)) if last_error is not None else None
            row["last_error"] = f"{err.get('code')}: {err.get('message')}" if err else None
        except (ValueError, AttributeError):
            row["last_error"] = None
        return _stamped(row)
