"""Finding the flow a ``--flow ID`` means when ID is not a flow's full id.

Flow ids are the workflow's folder, then the rest (``reproduce/3c68408c927d-5f181672``,
``refactor/core/test_ops``). A person copies the part they see or remember: the hash without
``reproduce/``, ``core/test_ops``, the first hex digits. ``resolve`` takes such an ID to the one
flow it names, like git takes a short sha: an ID that is a whole tail of exactly one flow id
(the part after one or more leading folders), else the beginning of exactly one flow id or of
one of its tails. Several flows matching, or none matching but some close (``difflib``), is a
``FlowNotFound`` error (exit 2) whose ``candidates`` lists them; it never guesses.

Flows moved aside by ``--restart`` (``<id>.old-<stamp>``) are never matched. Only a call whose
ID names no flow lists the flows, so a ``--resume`` of a full id reads nothing more.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from flow.core.errors import FlowNotFound
from workspace.paths import STATE_FILE

MIN_PREFIX = 4  # fewer characters than this begin too many ids to name one
SHOWN = 8  # candidates listed in an error


def flow_ids(root: Path, url: str | None) -> list[str]:
    """Every flow id of the store, sorted (moved-aside flows left out)."""
    if url is not None:
        return _store_ids(url)
    found: list[str] = []
    if not root.is_dir():
        return found
    for folder, dirs, files in os.walk(root):
        if STATE_FILE in files:
            rel = Path(folder).relative_to(root).as_posix()
            if ".old-" not in rel:
                found.append(rel)
            dirs[:] = []  # a flow holds no flows: never walk its logs and trees
        else:
            dirs[:] = [d for d in dirs if not d.startswith(".")]
    return sorted(found)


def _store_ids(url: str) -> list[str]:
    from flow.cli.campaigns import guard
    from workspace.pgconn import connect

    conn = connect(url)
    rows = guard(url, "listing the flows", lambda: conn.execute(
        "SELECT flow_id FROM flows WHERE flow_id NOT LIKE %s ORDER BY flow_id",
        ("%.old-%",)).fetchall())
    return [str(row[0]) for row in rows]


def tails(flow_id: str) -> list[str]:
    """The id and each part of it after a '/': ``a/b/c`` -> ``a/b/c``, ``b/c``, ``c``."""
    parts = flow_id.split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def matches(given: str, ids: list[str]) -> list[str]:
    """The flow ids ``given`` names: those it is a whole tail of, else those one of whose
    tails it begins (at least ``MIN_PREFIX`` characters)."""
    whole = [f for f in ids if given in tails(f)]
    if whole or len(given) < MIN_PREFIX:
        return whole
    return [f for f in ids if any(t.startswith(given) for t in tails(f))]


def near(given: str, ids: list[str]) -> list[str]:
    """The flow ids whose id or a tail of it is close to ``given`` (a typo), closest first."""
    by_tail = {t: f for f in ids for t in reversed(tails(f))}
    close = difflib.get_close_matches(given, list(by_tail), n=SHOWN, cutoff=0.6)
    return list(dict.fromkeys(by_tail[t] for t in close))


def resolve(given: str, root: Path, url: str | None, where: str) -> str:
    """The full id of the one flow ``given`` names; ``FlowNotFound`` listing the candidates
    (code ``ambiguous_flow`` when several match, ``flow_not_found`` otherwise)."""
    ids = flow_ids(root, url)
    found = matches(given, ids)
    if len(found) == 1:
        return found[0]
    if found:
        shown = found[:SHOWN]
        raise FlowNotFound(
            f"{len(found)} flows match {given!r} in {where}: {', '.join(shown)}"
            + (" ..." if len(found) > SHOWN else ""),
            "pass --flow with one full flow id from candidates (run 'orchestrator.py status' "
            "to list them all)", code="ambiguous_flow", candidates=shown)
    close = near(given, ids)
    if close:
        raise FlowNotFound(f"no flow {given!r} in {where}; did you mean {close[0]}?",
                           f"did you mean {' or '.join(close[:3])}? pass --flow with a full "
                           "flow id (run 'orchestrator.py status' to list them)",
                           candidates=close)
    raise FlowNotFound(f"no flow {given!r} in {where}",
                       "run 'orchestrator.py status' to list the flows, or check --workspace")
