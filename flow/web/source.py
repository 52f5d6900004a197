"""Where the dashboard reads a flow from: its folder (the file store) or the PostgreSQL store
that ``--store``/``ORCHESTRATOR_STORE`` names (``FolderSource`` / ``StoreSource``).

Both answer the same questions, read-only and without a lock: the flows as ``status`` lists
them, a flow's raw state, its audit records, the spec last printed for it, and one of its
outputs by name (``verdict.json``, ``final_summary.md``, ``original/<file>``...), and the
flow's saved ``version``: a cheap mark that moves whenever anything its page shows could have
(the file store: the (mtime, size) of the folder and of each file the page reads; the
PostgreSQL store: one small query for the row's ``revision``, its last error's and spec's
digests, its last audit record and its outputs' digests), so a page is rendered again only
when it moved (``flow.web.pagecache``). ``aversion`` reads the same mark on the server's
event loop (the stats in place; the query on an asyncio session), so a poll of an unchanged
page needs no worker thread. On the
PostgreSQL store the state's paths are shown moved to this workspace (as a load there would
move them) and the outputs come from the database (``workspace.pgoutputs``), so a flow
another machine ran shows its verdict and summary here. psycopg is imported for a URL only.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workspace.jsonio import loads
from workspace.paths import STATE_FILE

MAX_OUTPUT = 8 * 1024 * 1024
#: a flow's saved version on the PostgreSQL store (``StoreSource.version``)
VERSION_SQL = ("SELECT f.revision, md5(coalesce(f.last_error, ''::bytea)), f.spec_sha, f.root, "
               "(SELECT max(a.id) FROM audit a WHERE a.flow_id = f.flow_id), "
               "(SELECT string_agg(o.name || '=' || o.sha, ',' ORDER BY o.name) FROM artifacts o "
               "WHERE o.flow_id = f.flow_id) FROM flows f WHERE f.flow_id = %s")


def _inside(root: Path, path: Path) -> Path | None:
    try:
        real = path.resolve()
        real.relative_to(root.resolve())
    except (OSError, ValueError, RuntimeError):
        return None
    return real


# the files of a flow folder its page reads (and the folder itself: a file written beside and
# renamed over, or a job's result file appearing, moves its mtime)
PAGE_FILES = (".", STATE_FILE, ".last_error.json", "audit.jsonl", ".last_spec.json",
              "cron_job.json", "jobs", "verdict.json", "report.json", "final_summary.md",
              "logs", "logs/stage1.log", "logs/stage2.log", "logs/stage3.log", "original")


def stat_mark(path: str) -> tuple[int, int] | None:
    """(mtime in ns, size) of ``path``, None when it cannot be read."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _flow_id_ok(flow_id: str) -> bool:
    from flow.core.errors import UsageError
    from workspace.paths import check_flow_id

    try:
        check_flow_id(flow_id)
    except UsageError:
        return False
    return True


class FolderSource:
    """The file store: every flow a folder under ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.where = str(root)

    def rows(self) -> list[dict[str, Any]]:
        from flow.cli.status import collect

        return collect(self.root)

    def _folder(self, flow_id: str) -> Path | None:
        if not _flow_id_ok(flow_id):
            return None
        folder = _inside(self.root, self.root / flow_id)
        if folder is None or not (folder / STATE_FILE).is_file():
            return None
        return folder

    def folder(self, flow_id: str) -> Path | None:
        return self._folder(flow_id)

    def exists(self, flow_id: str) -> bool:
        return self._folder(flow_id) is not None

    def version(self, flow_id: str, also: tuple[str, ...] = ()) -> tuple[Any, ...] | None:
        """The flow's saved version (``PAGE_FILES`` stat'ed, then the files ``also`` names:
        its running jobs' logs, the file it refactors); None when there is no such flow."""
        folder = self._folder(flow_id)
        if folder is None:
            return None
        base = str(folder)
        return (*(stat_mark(f"{base}/{name}") for name in PAGE_FILES),
                *(stat_mark(p) for p in also))

    async def aversion(self, flow_id: str, also: tuple[str, ...] = ()) -> tuple[Any, ...] | None:
        """``version`` for the event loop: a few ``stat`` calls, answered in place."""
        return self.version(flow_id, also)

    def last_error(self, flow_id: str) -> str | None:
        """``code: message`` of the flow's last refused call, as ``status`` shows it."""
        folder = self._folder(flow_id)
        try:
            err = loads((folder / ".last_error.json").read_bytes()) if folder else None
            return f"{err.get('code')}: {err.get('message')}" if err else None
        except (OSError, ValueError, AttributeError):
            return None

    def state(self, flow_id: str) -> dict[str, Any] | None:
        folder = self._folder(flow_id)
        try:
            raw = loads((folder / STATE_FILE).read_bytes()) if folder else None
        except (OSError, ValueError):
            return None
        return raw if isinstance(raw, dict) else None

    def audit(self, flow_id: str, last: int) -> list[dict[str, Any]]:
        folder = self._folder(flow_id)
        try:
            lines = (folder / "audit.jsonl").read_bytes().splitlines()[-last:] if folder else []
        except OSError:
            return []
        return _records(lines)

    def last_spec(self, flow_id: str) -> dict[str, Any] | None:
        folder = self._folder(flow_id)
        try:
            cache = loads((folder / ".last_spec.json").read_bytes()) if folder else None
            spec = cache.get("spec") if isinstance(cache, dict) else None
        except (OSError, ValueError):
            return None
        return spec if isinstance(spec, dict) else None

    def output(self, flow_id: str, name: str) -> bytes | None:
        folder = self._folder(flow_id)
        path = _inside(folder, folder / name) if folder else None
        try:
            if path is None or not path.is_file():
                return None
            with path.open("rb") as fh:
                return fh.read(MAX_OUTPUT)
        except OSError:
            return None


class StoreSource:
    """The PostgreSQL store at ``url``; local files (job logs) under ``root``."""

    def __init__(self, root: Path, url: str) -> None:
        from workspace.pgerrors import mask_url

        self.root = root
        self.url = url
        self.where = mask_url(url)
        self._aconn: Any = None  # the event loop's session (``aversion``), opened on first use
        self._alock: Any = None
        self._aloop: Any = None

    def _one(self, sql: str, params: tuple[Any, ...]) -> Any:
        from flow.cli.campaigns import guard
        from workspace.pgconn import connect

        conn = connect(self.url)
        return guard(self.url, "reading a flow", lambda: conn.execute(sql, params).fetchall())

    def rows(self) -> list[dict[str, Any]]:
        from flow.cli.fleet import collect_store

        return collect_store(self.url)

    def folder(self, flow_id: str) -> Path | None:
        return None  # a flow of the store has no folder here (its job logs may)

    def version(self, flow_id: str, also: tuple[str, ...] = ()) -> tuple[Any, ...] | None:
        """The flow's saved version, one small query: its row's ``revision``, the digests of
        its last error and of the spec last printed, the workspace it was saved from, its
        last audit record's id and each output's name and digest; then the local files
        ``also`` names (its running jobs' logs). None when there is no such flow."""
        if not _flow_id_ok(flow_id):
            return None
        rows = self._one(VERSION_SQL, (flow_id,))
        if not rows:
            return None
        return (*rows[0], *(stat_mark(p) for p in also))

    async def aversion(self, flow_id: str, also: tuple[str, ...] = ()) -> tuple[Any, ...] | None:
        """``version`` for the event loop: the same query on this source's own asyncio
        session (``workspace.pgconn.asession``), one query at a time, opened again after an
        error. A database error is ``StoreUnavailable``, as ``version``'s."""
        import asyncio

        import psycopg

        from workspace.pgconn import asession, statement_s
        from workspace.pgerrors import unavailable

        if not _flow_id_ok(flow_id):
            return None
        loop = asyncio.get_running_loop()
        if self._aloop is not loop:  # a session and a lock serve the loop they were made on
            if self._aconn is not None:
                self._aconn.pgconn.finish()
            self._aconn, self._alock, self._aloop = None, asyncio.Lock(), loop
        async with self._alock:
            try:
                if self._aconn is None or self._aconn.closed or self._aconn.broken:
                    self._aconn = await asession(self.url, statement_s(), part="dashboard")
                rows = await (await self._aconn.execute(VERSION_SQL, (flow_id,))).fetchall()
            except (psycopg.Error, ValueError) as exc:
                if self._aconn is not None:
                    self._aconn.pgconn.finish()  # a broken session's close could raise too
                self._aconn = None
                raise unavailable(self.url, exc, "reading a flow") from None
        if not rows:
            return None
        return (*rows[0], *(stat_mark(p) for p in also))

    def last_error(self, flow_id: str) -> str | None:
        rows = self._one("SELECT last_error FROM flows WHERE flow_id = %s", (flow_id,))
        try:
            err = loads(bytes(rows[0][0])) if rows and rows[0][0] is not None else None
            return f"{err.get('code')}: {err.get('message')}" if err else None
        except (ValueError, AttributeError):
            return None

    def exists(self, flow_id: str) -> bool:
        return _flow_id_ok(flow_id) and bool(
            self._one("SELECT 1 FROM flows WHERE flow_id = %s", (flow_id,)))

    def state(self, flow_id: str) -> dict[str, Any] | None:
        from workspace.pgoutputs import rebase

        if not _flow_id_ok(flow_id):
            return None
        rows = self._one("SELECT state, root FROM flows WHERE flow_id = %s", (flow_id,))
        if not rows:
            return None
        try:
            raw = loads(rebase(bytes(rows[0][0]), rows[0][1], str(self.root)))
        except ValueError:
            return None
        return raw if isinstance(raw, dict) else None

    def audit(self, flow_id: str, last: int) -> list[dict[str, Any]]:
        rows = self._one("SELECT record FROM (SELECT id, record FROM audit WHERE flow_id = %s "
                         "ORDER BY id DESC LIMIT %s) t ORDER BY id", (flow_id, last))
        return _records(bytes(record) for (record,) in rows)

    def last_spec(self, flow_id: str) -> dict[str, Any] | None:
        rows = self._one("SELECT spec, root FROM flows WHERE flow_id = %s", (flow_id,))
        if not rows or rows[0][0] is None or rows[0][1] not in (None, str(self.root)):
            return None  # another workspace's spec names its paths, not this one's
        try:
            spec = loads(bytes(rows[0][0]))
        except ValueError:
            return None
        return spec if isinstance(spec, dict) else None

    def output(self, flow_id: str, name: str) -> bytes | None:
        rows = self._one("SELECT substring(data FROM 1 FOR %s) FROM artifacts WHERE "
                         "flow_id = %s AND name = %s", (MAX_OUTPUT, flow_id, name))
        return bytes(rows[0][0]) if rows else None


def source_for(root: Path, url: str | None) -> FolderSource | StoreSource:
    return FolderSource(root) if url is None else StoreSource(root, url)


def _records(lines: Iterable[bytes]) -> list[dict[str, Any]]:
    """The audit records among ``lines``: each a JSON object; other lines are skipped."""
    out = []
    for line in lines:
        try:
            rec = loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out
