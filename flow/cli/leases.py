"""A campaign item's lease on the calls of its flow: fencing, heartbeats, the item finished.

Every command printed for a leased flow (feed, resume, answer, on-complete) carries the
lease's token (``--lease TOKEN``, sticky like ``--store``). A call that carries one is checked
under the flow's lock against the item's current lease and renews it (``check``: the
heartbeat, also on the cached-spec path of ``--resume``); the store's save checks it again
inside its transaction. A stale holder, whose item another worker claimed since, is refused
(``lease_lost``, exit 3, naming the current holder) before anything is read or written, and
the jobs its flow still runs from this workspace are ended (the new holder runs them again).
After the call (``after_call``), a flow that ended marks its item done under the caller's
token, exactly once. A call without a token (a person's) acts on the flow but neither renews
nor finishes the item: the holder's next call does.

The token is a fencing token, not a secret: it keeps a stale harness out, not a hostile one.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from flow.core.errors import OrchestratorError, UsageError

def check(store: Any, token: int, lease: Any = None) -> None:
    """Under the flow's lock: ``token`` must be the current lease of the flow's item (of
    ``lease``'s item when the campaign command begins its flow); the lease is renewed and
    the store's saves are fenced by it, and the lock's heartbeat renews it while the call
    works (a run longer than the lease keeps its item). Raises ``LeaseLost`` (this
    workspace's jobs of the flow ended first) or ``UsageError`` on the file store."""
    from flow.cli.campaigns import guard
    from workspace import campaign as camp
    from workspace.pgconn import connect

    url = getattr(store, "url", None)
    if url is None:
        raise UsageError("--lease needs the PostgreSQL store (leases are campaign items')",
                         "drop --lease, or add the campaign's --store postgresql://... URL")
    where = (lease.campaign, lease.item_id) if lease is not None else (None, None)
    try:
        held = guard(url, "checking the lease", camp.hold, connect(url), store.flow_id, token,
                     *where)
    except camp.LeaseLost as err:
        end_jobs(store, err)
        raise
    store.keep_lease(held.campaign, held.item, token, held.lease_s)


def end_jobs(store: Any, err: OrchestratorError) -> None:
    """End what the flow still runs from this workspace, and say so in ``err``."""
    from flow.core.jobs import end_local

    try:
        ended = end_local(store.dir)
    except OSError:
        ended = []
    if ended:
        err.details["jobs_ended"] = ended


def after_call(store: Any, spec: dict[str, Any], lease: Any, token: int | None, script: Path,
               root: Path, harness: str) -> None:
    """Bind the flow to the item the campaign command claimed; when the flow ended, mark
    the item done under ``token``; add the ``campaign`` block. Nothing without a token."""
    from flow.cli.campaigns import guard
    from workspace import campaign as camp
    from workspace.pgconn import connect

    fence = getattr(store, "lease_fence", None)
    if token is None or fence is None:
        return
    conn = connect(store.url)
    if lease is not None:
        guard(store.url, "binding the flow", camp.bind, conn, lease, store.flow_id)
    name, item, _ = fence
    command = shlex.join([sys.executable, str(script), "--workspace", str(root), "--store",
                          store.url, "--harness", harness, "campaign", name])
    block: dict[str, Any] = {"name": name, "item": item, "lease": token, "command": command}
    if spec.get("status") == "done":
        result = {k: spec.get(k) for k in ("outcome", "flow_id") if k in spec}
        result.update(outcome_of(spec))
        ok = guard(store.url, "finishing the item", camp.complete, conn, name, item, token,
                   result)
        block["item_done"] = ok
        spec.setdefault("next_steps", []).append(
            f"campaign {name!r}: item {item!r} is done; run the campaign command for the "
            f"next item: {command}" if ok else
            f"campaign {name!r}: this worker's lease on {item!r} had ended and another "
            f"worker took it; run the campaign command for the next item: {command}")
    else:
        block["lease_renewed"] = True  # ``check`` renewed it under the lock
    spec["campaign"] = block


def outcome_of(spec: dict[str, Any]) -> dict[str, Any]:
    """What a person looks for in a done item besides its outcome: a reproduce flow's
    verdict (``status --campaign`` shows it and buckets a reproduce campaign by it)."""
    verdict = spec.get("verdict")
    return {"verdict": verdict} if isinstance(verdict, dict) else {}


def reap(conn: Any, name: str, root: Path, url: str) -> list[str]:
    """On this machine's next campaign call: end the jobs that flows of campaign ``name``
    still run from this workspace when their item is no longer worked on here (another
    worker took it over elsewhere, or it is done, given back or parked); the flows whose
    jobs were ended. The current holder's own runs here are left alone."""
    import socket

    from flow.cli.campaigns import guard
    from flow.core.jobs import end_local

    rows = guard(url, "reading the campaign's flows", lambda: conn.execute(
        "SELECT c.flow_id, c.state, c.holder_host, f.root FROM campaign_items c LEFT JOIN "
        "flows f ON f.flow_id = c.flow_id WHERE c.campaign = %s AND c.flow_id IS NOT NULL",
        (name,)).fetchall())
    here = socket.gethostname()
    ended: list[str] = []
    for flow_id, state, host, flow_root in rows:
        folder = root / str(flow_id)
        if not (folder / "jobs").is_dir():
            continue
        if state == "leased" and host == here and flow_root in (None, str(root)):
            continue  # held here: its runs are the holder's
        try:
            if end_local(folder):
                ended.append(str(flow_id))
        except OSError:
            continue
    return ended
