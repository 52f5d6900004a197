"""The PostgreSQL store: a flow's state, audit trail, spec cache, last error, lock and
outputs (verdicts, reports, summaries, accepted feeds: ``workspace.pgoutputs``) in a database
that every machine of a fleet reaches; its logs, job files and builds stay in the local flow
folder (``FlowStore``'s folder, under ``--workspace``). A flow taken over on another machine,
or in another workspace folder, loads with its paths moved to that workspace and its outputs
written into that folder, so it reports and resumes there.

The same guarantees as the file store (``workspace.interface``):

- a save is one transaction: the state row and its audit record commit together or not at all
  (so no audit replay is needed), and only while this caller holds the lock with its fence;
- a refused input writes nothing but an audit record: the state row stays byte-identical (the
  bytes are the very ones the file store would write);
- the lock is a session advisory lock, so a dead holder's lock goes with its session; the
  ``locks`` row names the holder (host, pid, command, since) and carries a fencing counter
  bumped by every acquisition: a caller that lost its session (and so its lock) and comes back
  after another caller took the lock is refused (``Fenced``) instead of overwriting;
- a holder beats while it holds the lock (``workspace.pgbeat``); a holder silent for
  ``ORCHESTRATOR_LOCK_STALE_S`` (its machine vanished without a FIN, its process stopped) has
  its session ended by the next caller that wants the flow, which then takes the lock.
"""

from __future__ import annotations

import hashlib
import os
import socket
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from flow.core.errors import Busy, OrchestratorError, StateLoadError
from workspace.jsonio import dumps, loads
from workspace.lock import lock_timeout
from workspace.pgerrors import StoreUnavailable, mask_url, unavailable
from workspace.store import FlowStore, _sha, now_iso, parse_state

if TYPE_CHECKING:
    from flow.core.state import FlowState

POLL_S = 0.05
STALE_LOOK_S = 1.0  # how often a waiter looks whether the lock's holder went silent


class Fenced(OrchestratorError):
    """This caller lost the flow's lock (its session ended) and another caller took it."""

    code = "fenced"
    exit_code = 3


def lock_key(flow_id: str) -> int:
    """The advisory lock key of a flow: 63 bits of its id's SHA-256 (a signed bigint)."""
    return int.from_bytes(hashlib.sha256(f"flow:{flow_id}".encode()).digest()[:8], "big",
                          signed=True)


def query(url: str, doing: str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Run ``sql`` on this process's connection to ``url``; its rows (none for a statement
    that returns none). A database error is ``StoreUnavailable`` naming ``doing``."""
    import psycopg

    from workspace.pgconn import connect

    try:
        cur = connect(url).execute(sql, params)
        return cur.fetchall() if cur.description else []
    except psycopg.Error as exc:
        raise unavailable(url, exc, doing) from None


class PgFlowStore(FlowStore):
    """One flow in the PostgreSQL store at ``url``; local files under ``root/flow_id``."""

    def __init__(self, root: Path, flow_id: str, url: str) -> None:
        super().__init__(root, flow_id)
        self.url = url
        self.source = f"{mask_url(url)} flow {flow_id!r}"
        self.fence: int | None = None
        # (campaign, item, token): the campaign lease this call acts under, checked again in
        # every save's transaction (``flow.cli.leases``); None outside a campaign
        self.lease_fence: tuple[str, str, int] | None = None
        self.beat: Any = None  # the heartbeat of the lock this call holds (``PgLock``)
        self._synced: dict[str, str] = {}  # outputs (name -> sha) in common with the database

    def _conn(self) -> Any:
        from workspace.pgconn import connect

        return connect(self.url)

    def _query(self, doing: str, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return query(self.url, doing, sql, params)

    def exists(self) -> bool:
        return bool(self._query("looking up the flow",
                                "SELECT 1 FROM flows WHERE flow_id = %s", (self.flow_id,)))

    def read_bytes(self) -> bytes:
        rows = self._query("reading the state",
                           "SELECT state FROM flows WHERE flow_id = %s", (self.flow_id,))
        if not rows:
            raise StateLoadError(f"{self.source}: no such flow in the store",
                                 "run 'orchestrator.py status' to list the flows")
        return bytes(rows[0][0])

    def load(self) -> FlowState:
        """The state, its paths moved to this workspace, and the flow's outputs written into
        the local folder where it lacks them (``workspace.pgoutputs``)."""
        from workspace import pgoutputs

        rows = self._query("reading the state",
                           "SELECT state, root FROM flows WHERE flow_id = %s", (self.flow_id,))
        if not rows:
            raise StateLoadError(f"{self.source}: no such flow in the store",
                                 "run 'orchestrator.py status' to list the flows")
        data = pgoutputs.rebase(bytes(rows[0][0]), rows[0][1], str(self.root))
        state = parse_state(data, self.source)
        self._fetch_outputs()
        if state.pending():  # a flow taken over here: its tasks' feed files are written here
            self.feeds_dir.mkdir(parents=True, exist_ok=True)
        return state

    def _fetch_outputs(self) -> None:
        """Bring the local folder to the database's outputs: what it lacks, or still has as
        last synced while the database has a newer one, is written; what it had from the
        database and the database no longer has is removed; what was written or changed
        here since the last sync (an agent's report before its feed, a feed file rewritten
        after it was applied) is kept as it is, as the file store would keep it."""
        from workspace import pgoutputs

        rows = self._query("reading the flow's outputs",
                           "SELECT name, sha FROM artifacts WHERE flow_id = %s", (self.flow_id,))
        remote = {str(name): str(digest) for name, digest in rows
                  if pgoutputs.safe_name(str(name))}
        manifest = pgoutputs.read_manifest(self.dir)
        want = []
        for name, digest in remote.items():
            path = self.dir / name
            try:
                local = pgoutputs.sha(path.read_bytes()) if not path.is_symlink() else None
            except OSError:
                local = None
            if local is None and not path.exists() or \
                    local not in (None, digest) and local == manifest.get(name):
                want.append(name)
        for name, digest in manifest.items():
            path = self.dir / name
            if name not in remote and pgoutputs.safe_name(name) and not path.is_symlink():
                try:
                    if pgoutputs.sha(path.read_bytes()) == digest:
                        path.unlink()
                except OSError:
                    pass
        if want:
            got = self._query("reading the flow's outputs",
                              "SELECT name, data FROM artifacts WHERE flow_id = %s AND "
                              "name = ANY(%s)", (self.flow_id, want))
            self.dir.mkdir(parents=True, exist_ok=True)
            for name, data in got:
                pgoutputs.place(self.dir, str(name), bytes(data))
        self._synced = remote
        if remote != manifest:
            pgoutputs.write_manifest(self.dir, remote)

    def save(self, state: FlowState, event: str, **fields: Any) -> bytes:
        """Bump the revision and commit state and audit record in one transaction, fenced."""
        revision, updated = state.revision, state.updated_at
        state.revision += 1
        state.updated_at = now_iso()
        state.audit_record = {"at": state.updated_at, "event": event,
                              "revision": state.revision, **fields}
        data = dumps(state.model_dump(mode="json"))
        record = dumps(state.audit_record, indent=False)
        outputs = self._changed_outputs(state)
        try:
            self._commit_fenced(data, record, state, outputs)
        except BaseException:
            state.revision, state.updated_at = revision, updated
            raise
        self._outputs_sent(outputs)
        self.log_saved(event)
        return data

    def _changed_outputs(self, state: FlowState) -> tuple[dict[str, bytes], list[str],
                                                          dict[str, str]]:
        """(outputs to send, names to delete, the outputs after this save)."""
        from workspace import pgoutputs

        applied = {t.task_id: t.result_digest for t in state.tasks if t.status == "applied"}
        files, big = pgoutputs.scan(self.dir, applied)
        for name in big:
            self.log(f"output {name} is over {pgoutputs.MAX_BYTES} bytes: kept on this "
                     "machine only, not in the store")
        now = {name: pgoutputs.sha(blob) for name, blob in files.items()}
        for task_id, accepted in applied.items():
            # An applied task's feed file counts while it holds the accepted result: one
            # rewritten since (refused as already_applied) leaves the database's as it is.
            name = f"feeds/{task_id}.json"
            if name in files and not pgoutputs.holds(files[name], accepted):
                del files[name], now[name]
                if name in self._synced:
                    now[name] = self._synced[name]
        send = {n: files[n] for n, d in now.items() if n in files and self._synced.get(n) != d}
        gone = [n for n in self._synced if n not in now]
        return send, gone, now

    def _outputs_sent(self, outputs: tuple[dict[str, bytes], list[str],
                                           dict[str, str]]) -> None:
        from workspace import pgoutputs

        send, gone, now = outputs
        self._synced = now
        if send or gone or pgoutputs.read_manifest(self.dir) != now:
            try:
                pgoutputs.write_manifest(self.dir, now)
            except OSError:
                pass  # the manifest only spares work; the database has the outputs

    def _commit_fenced(self, data: bytes, record: bytes, state: FlowState,
                       outputs: tuple[dict[str, bytes], list[str], dict[str, str]]) -> None:
        import psycopg

        send, gone, now = outputs

        for attempt in (1, 2):
            try:
                try:
                    conn = self._conn()
                except StoreUnavailable as exc:
                    if exc.code != StoreUnavailable.code:
                        raise
                    # This process's session is gone (ended by the server, or by a caller
                    # that found this one silent too long): the lock went with it.
                    raise psycopg.OperationalError(str(exc.message)) from None
                with conn.transaction():
                    row = conn.execute("SELECT fence FROM locks WHERE flow_id = %s FOR UPDATE",
                                       (self.flow_id,)).fetchone()
                    if self.fence is None or row is None or row[0] != self.fence:
                        raise self._fenced(row[0] if row else None)
                    if self.lease_fence is not None:
                        self._check_lease(conn)
                    conn.execute(
                        "INSERT INTO flows (flow_id, workflow, state, revision, updated_at, "
                        "root) VALUES (%s, %s, %s, %s, now(), %s) ON CONFLICT (flow_id) DO "
                        "UPDATE SET workflow = EXCLUDED.workflow, state = EXCLUDED.state, "
                        "revision = EXCLUDED.revision, updated_at = now(), root = EXCLUDED.root",
                        (self.flow_id, state.workflow, data, state.revision, str(self.root)))
                    conn.execute("INSERT INTO audit (flow_id, revision, record) "
                                 "VALUES (%s, %s, %s)", (self.flow_id, state.revision, record))
                    if gone:
                        conn.execute("DELETE FROM artifacts WHERE flow_id = %s AND "
                                     "name = ANY(%s)", (self.flow_id, gone))
                    if send:
                        with conn.cursor() as cur:
                            cur.executemany(
                                "INSERT INTO artifacts (flow_id, name, data, sha) VALUES "
                                "(%s, %s, %s, %s) ON CONFLICT (flow_id, name) DO UPDATE SET "
                                "data = EXCLUDED.data, sha = EXCLUDED.sha, updated_at = now()",
                                [(self.flow_id, n, blob, now[n]) for n, blob in send.items()])
                return
            except psycopg.errors.QueryCanceled as exc:  # the statement timeout: no retry
                raise unavailable(self.url, exc, "saving the state") from None
            except psycopg.OperationalError as exc:
                # The session dropped (server restart, network): this caller's advisory lock
                # went with it. Take it again and write only if nobody held it in between.
                again = "down" if attempt == 2 else self._relock()
                if again == "fenced":
                    raise self._fenced(None) from None
                if again == "down":
                    raise unavailable(self.url, exc, "saving the state") from None
            except psycopg.Error as exc:
                raise unavailable(self.url, exc, "saving the state") from None

    def _check_lease(self, conn: Any) -> None:
        """Inside the save's transaction: the item's lease is still this call's (the row is
        locked until the commit, so no claim slips in between); ``LeaseLost`` if not. The
        item is bound to this flow in the same transaction as the flow's first save, so an
        item whose holder vanished mid-call names its flow (status, the next holder)."""
        from workspace import campaign

        name, item, token = self.lease_fence or ("", "", 0)
        row = conn.execute("SELECT token, state, flow_id FROM campaign_items WHERE "
                           "campaign = %s AND item_id = %s FOR SHARE", (name, item)).fetchone()
        if row is None or int(row[0]) != token or row[1] not in ("leased", "done"):
            campaign.hold(conn, self.flow_id, token, name, item)  # raises, naming the holder
        elif row[2] is None:
            conn.execute("UPDATE campaign_items SET flow_id = %s WHERE campaign = %s AND "
                         "item_id = %s AND token = %s", (self.flow_id, name, item, token))

    def _relock(self) -> str:
        """After a lost session: the lock again, without waiting, if the fence is still ours
        ("ok"); "fenced" if another caller holds it or took it since; "down" if the store
        cannot be reached."""
        import psycopg

        from workspace.pgconn import connect, drop

        drop(self.url)
        try:
            conn = connect(self.url, fresh=True)
            got = conn.execute("SELECT pg_try_advisory_lock(%s)",
                               (lock_key(self.flow_id),)).fetchone()[0]
            if not got:
                return "fenced"
            row = conn.execute("SELECT fence FROM locks WHERE flow_id = %s",
                               (self.flow_id,)).fetchone()
            if row is None or row[0] != self.fence:
                conn.execute("SELECT pg_advisory_unlock(%s)", (lock_key(self.flow_id),))
                return "fenced"
            conn.execute("UPDATE locks SET backend = pg_backend_pid(), alive_at = now() "
                         "WHERE flow_id = %s AND fence = %s", (self.flow_id, self.fence))
            return "ok"
        except (psycopg.Error, OrchestratorError):
            return "down"

    def _fenced(self, current: int | None) -> Fenced:
        return Fenced(
            f"{self.source}: this call lost the flow's lock (fence {self.fence}, the store's "
            f"now {current}); another caller holds or held it since, so nothing was written",
            "run --resume: it loads what the other caller saved and carries on from there",
            fence=self.fence, store_fence=current)

    def log_saved(self, event: str) -> None:
        """Nothing to do after a commit (the audit record is in it); kept for symmetry."""

    def audit(self, event: str, **fields: Any) -> None:
        record = dumps({"at": now_iso(), "event": event, **fields}, indent=False)
        self._query("writing the audit trail",
                    "INSERT INTO audit (flow_id, revision, record) VALUES (%s, NULL, %s)",
                    (self.flow_id, record))

    def replay_audit(self, state: FlowState) -> bool:
        """Never needed: a state and its audit record commit together."""
        return False

    def audit_lines(self) -> list[dict[str, Any]]:
        rows = self._query("reading the audit trail",
                           "SELECT record FROM audit WHERE flow_id = %s ORDER BY id",
                           (self.flow_id,))
        return [loads(bytes(r[0])) for r in rows]

    def cache_spec(self, state_bytes: bytes, spec: dict[str, Any]) -> None:
        data = dumps(spec, indent=False)
        self._query("caching the spec",
                    "UPDATE flows SET spec = %s, spec_sha = %s WHERE flow_id = %s "
                    "AND (spec IS DISTINCT FROM %s OR spec_sha IS DISTINCT FROM %s)",
                    (data, _sha(state_bytes), self.flow_id, data, _sha(state_bytes)))

    def cached_spec(self) -> dict[str, Any] | None:
        rows = self._query("reading the spec cache",
                           "SELECT state, spec, spec_sha, root FROM flows WHERE flow_id = %s",
                           (self.flow_id,))
        # Only a spec rendered from exactly this row in this workspace: another machine's
        # names its own paths (and this folder may lack the flow's outputs yet).
        if not rows or rows[0][1] is None or rows[0][2] != _sha(bytes(rows[0][0])) \
                or rows[0][3] not in (None, str(self.root)):
            return None
        spec = loads(bytes(rows[0][1]))
        return spec if isinstance(spec, dict) else None

    def record_error(self, record: dict[str, Any] | None) -> None:
        try:
            self._query("recording the error", "UPDATE flows SET last_error = %s "
                        "WHERE flow_id = %s", (None if record is None else dumps(record),
                                               self.flow_id))
        except OrchestratorError:
            pass  # best effort, as in the file store

    def last_error(self) -> dict[str, Any] | None:
        rows = self._query("reading the last error",
                           "SELECT last_error FROM flows WHERE flow_id = %s", (self.flow_id,))
        if not rows or rows[0][0] is None:
            return None
        return loads(bytes(rows[0][0]))

    def move_aside(self, stamp: str) -> str:
        """Rename the flow's rows (and its local folder, if any) to ``<id>.old-<stamp>``."""
        base = f"{self.flow_id}.old-{stamp}"
        target, n = base, 1
        while self._query("restarting", "SELECT 1 FROM flows WHERE flow_id = %s", (target,)):
            n += 1
            target = f"{base}-{n}"
        import psycopg

        try:
            conn = self._conn()
            with conn.transaction():
                conn.execute("UPDATE flows SET flow_id = %s WHERE flow_id = %s",
                             (target, self.flow_id))
                conn.execute("UPDATE audit SET flow_id = %s WHERE flow_id = %s",
                             (target, self.flow_id))
                conn.execute("UPDATE artifacts SET flow_id = %s WHERE flow_id = %s",
                             (target, self.flow_id))
        except psycopg.Error as exc:
            raise unavailable(self.url, exc, "moving the flow aside") from None
        if self.dir.is_dir():
            self.dir.rename(self.root / target)
        return target

    def keep_lease(self, campaign: str, item: str, token: int, lease_s: float) -> None:
        """The lease this call works under: its saves are fenced by it, and the lock's
        heartbeat renews it while the call works."""
        self.lease_fence = (campaign, item, token)
        if self.beat is not None and lease_s > 0:
            self.beat.lease(campaign, item, token, lease_s)

    def lock(self) -> PgLock:
        return PgLock(self)


class PgLock:
    """The flow's lock: a session advisory lock plus the ``locks`` row naming its holder."""

    def __init__(self, store: PgFlowStore, timeout: float | None = None) -> None:
        from workspace.pgbeat import stale_seconds

        self.store = store
        self.timeout = timeout if timeout is not None else lock_timeout(os.environ)
        self.stale_s = stale_seconds()
        self.key = lock_key(store.flow_id)

    def __enter__(self) -> PgLock:
        import psycopg

        from workspace.pgbeat import Beat

        store = self.store
        deadline = time.monotonic() + self.timeout
        store.dir.mkdir(parents=True, exist_ok=True)  # the local files' folder, as FlowLock
        ended: list[dict[str, Any]] = []
        try:
            conn = store._conn()
            look = time.monotonic()  # when to look next whether the holder went silent
            while not conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()[0]:
                now = time.monotonic()
                if now >= look:
                    look = now + STALE_LOOK_S
                    gone = self._end_stale(conn)
                    if gone is not None:
                        ended.append(gone)
                        continue
                if now >= deadline:
                    holder = self.holder()
                    raise Busy(
                        f"flow {store.flow_id!r} in {mask_url(store.url)} is locked by another "
                        f"caller: {holder}",
                        f"wait for that call to finish (it holds the lock since "
                        f"{holder.get('since')}, its last heartbeat {holder.get('silent_s')} s "
                        f"ago; a holder silent for {self.stale_s:g} s is ended by the next "
                        "caller); a cron firing can simply retry later", holder=holder)
                time.sleep(POLL_S)
            info = {"host": socket.gethostname(), "pid": os.getpid(), "command": sys.argv}
            row = conn.execute(
                "INSERT INTO locks (flow_id, fence, host, pid, command, since, backend, "
                "alive_at) VALUES (%s, 1, %s, %s, %s, now(), pg_backend_pid(), now()) "
                "ON CONFLICT (flow_id) DO UPDATE SET fence = locks.fence + 1, "
                "host = EXCLUDED.host, pid = EXCLUDED.pid, command = EXCLUDED.command, "
                "since = now(), backend = pg_backend_pid(), alive_at = now() RETURNING fence",
                (store.flow_id, info["host"], info["pid"], dumps(info["command"]).decode())
            ).fetchone()
        except psycopg.Error as exc:
            raise unavailable(store.url, exc, "taking the flow's lock") from None
        store.fence = int(row[0])
        store.beat = Beat(store.url, store.flow_id, store.fence, self.stale_s).start()
        for gone in ended:
            try:
                store.audit("lock_holder_ended", holder=gone, stale_s=self.stale_s)
            except OrchestratorError:
                pass  # the record only explains; the lock is this call's either way
        return self

    def _end_stale(self, conn: Any) -> dict[str, Any] | None:
        """End the holder's session if it has been silent for ``stale_s`` (its machine
        vanished, its process stopped); who was ended, or None."""
        import psycopg

        from workspace.pgbeat import end_stale

        try:
            return end_stale(conn, self.store.flow_id, self.key, self.stale_s)
        except psycopg.errors.InsufficientPrivilege:
            return None  # another role's session: Busy says who holds it; a person ends it

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        import psycopg

        store, fence = self.store, self.store.fence
        store.fence = None
        if store.beat is not None:
            store.beat.stop()
            store.beat = None
        try:
            conn = store._conn()
            conn.execute("UPDATE locks SET host = NULL, pid = NULL, command = NULL, "
                         "since = NULL, backend = NULL, alive_at = NULL WHERE flow_id = %s "
                         "AND fence = %s", (store.flow_id, fence))
            conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
        except (psycopg.Error, OrchestratorError):
            pass  # a lost session released the advisory lock already

    def holder(self) -> dict[str, Any]:
        """Who holds the lock now: host, pid, command, since (the database's clock)."""
        rows = self.store._query(
            "reading the lock's holder",
            "SELECT host, pid, command, to_char(since AT TIME ZONE 'UTC', "
            "'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), round(extract(epoch FROM now() - "
            "coalesce(alive_at, since))::numeric, 1)::float8 FROM locks WHERE flow_id = %s",
            (self.store.flow_id,))
        if not rows:
            return {"host": None, "pid": None, "command": None, "since": None,
                    "silent_s": None}
        host, pid, command, since, silent = rows[0]
        return {"host": host, "pid": pid, "command": command, "since": since,
                "silent_s": silent}


class PgSaved:
    """The saved flows of the PostgreSQL store, asked as ``flow.workflows.refactor.identity``
    asks the workspace's folders (its ``Saved``): every machine's flows of a file are seen."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _query(self, doing: str, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return query(self.url, doing, sql, params)

    def states(self, base: str) -> list[tuple[str, dict[str, Any]]]:
        """(flow id, saved state) of ``base`` and of the ``base-*`` flows (a state that does
        not parse reads as ``{}``)."""
        like = base.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "-%"
        rows = self._query("looking up the file's flows",
                           "SELECT flow_id, state FROM flows WHERE flow_id = %s OR flow_id LIKE %s "
                           "ORDER BY flow_id <> %s, flow_id", (base, like, base))
        found = []
        for flow_id, state in rows:
            try:
                raw = loads(bytes(state))
            except ValueError:
                raw = {}
            found.append((str(flow_id), raw if isinstance(raw, dict) else {}))
        return found

    def original_sha(self, flow_id: str, name: str) -> str | None:
        """sha256 of the flow's kept ``original/<name>`` (its output row); None without one."""
        rows = self._query("looking up the file's flows",
                           "SELECT sha FROM artifacts WHERE flow_id = %s AND name = %s",
                           (flow_id, f"original/{name}"))
        return str(rows[0][0]) if rows else None
