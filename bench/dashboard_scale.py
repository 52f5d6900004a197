#!/usr/bin/env python3
"""The dashboard at fleet scale: a workspace of ``--flows`` flows (default 2,000) made by
running real flows (the README's main job, the refactor demo, a toy flow asking a person, a
notes flow waiting on an agent) and cloning their folders under new ids, served by
``orchestrator.py serve``. Measured, each as the median time to the first byte of a fresh
connection, against the same bytes served by a static file server on the same machine:

- ``list``: the list page ``/`` (the index warm, no refresh running);
- ``refresh``: the page's 2-s poll ``/parts/flows`` with the ETag it holds, one second apart
  so that each one sets off a revalidation of the index (a stat walk of the workspace, in a
  background thread once the answer is sent), nothing changed; the static server is asked
  after the same idle time;
- ``refresh_changed``: the same poll after one flow's state was touched (that flow re-read,
  the part rendered again);
- ``static_during_list``: ``/static/style.css`` asked while a list is being rendered (a flow
  touched first so the render is not cached) vs asked alone;
- ``flow``: one flow's page ``/flow/ID`` (the main job's clone, or the refactor's when
  there is one: the biggest page), the flow unchanged since its last render;
- ``flow_poll``: that page's 2-s poll ``/parts/flow/ID`` with the ETag it holds, the flow
  unchanged (its saved version read, a 304);
- ``flow_poll_changed``: the same poll right after the flow was touched (rendered again).

Targets: the list, the flow page and both polls within 2x the static server (the polls
against the part's bytes served whole), a static file during a list render within 2x its
time alone.

The same on the PostgreSQL store (``serve --store``), unless ``--no-postgres`` or ``initdb``
is missing: a throw-away cluster (``tests.store.pgserver``: Debian's ``initdb``/``pg_ctl``, as
the ``postgres`` user under root), the same real flows made in it, their rows cloned under
new ids (the state's own id moved, as a clone's folder is) to the same count; "touched" is
a row's ``revision`` bumped, what any save does. Prints one JSON object (``file`` and
``postgres``). Usage:
python bench/dashboard_scale.py [--flows 2000] [--runs 10] [--no-refactor] [--no-postgres]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.web.workspace import build, call, serving  # noqa: E402


def make_workspace(root: Path, flows: int, refactor: bool) -> int:
    """Real flows, then clones of their folders until there are ``flows``; the templates'
    count."""
    build(root, hostile=False)
    if refactor:
        call(root, "demo", "refactor")
    templates = sorted(p.parent for p in root.rglob("flow_state.json"))
    for i in range(flows - len(templates)):
        src = templates[i % len(templates)]
        dest = src.parent / f"clone-{i:05d}"
        shutil.copytree(src, dest, ignore=shutil.ignore_patterns("scratch", ".lock"))
        for name in ("flow_state.json", ".last_spec.json"):
            path = dest / name
            if path.exists():
                path.write_bytes(path.read_bytes().replace(str(src).encode(), str(dest).encode())
                                 .replace(str(src.relative_to(root)).encode(),
                                          str(dest.relative_to(root)).encode()))
    return len(templates)


def first_byte(url: str, path: str, headers: dict[str, str] | None = None) -> tuple[float, bytes]:
    """Seconds from connect to the first byte of the answer, and the whole answer's body."""
    parts = urlsplit(url)
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    start = time.perf_counter()
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}\r\nConnection: close\r\n"
                     f"{extra}\r\n".encode())
        first = sock.recv(65536)
        took = time.perf_counter() - start
        data = [first]
        while chunk := sock.recv(65536):
            data.append(chunk)
    raw = b"".join(data)
    return took, raw.partition(b"\r\n\r\n")[2]


def etag_of(url: str, path: str) -> str:
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port)) as sock:
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {parts.hostname}\r\nConnection: close\r\n\r\n"
                     .encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(65536)
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"etag:"):
            return line.split(b":", 1)[1].strip().decode()
    return ""


def static_server(folder: Path) -> tuple[str, http.server.ThreadingHTTPServer]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):  # type: ignore[no-untyped-def]
            super().__init__(*a, directory=str(folder), **kw)

        def log_message(self, *a):  # type: ignore[no-untyped-def]
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/", server


def median(values: list[float]) -> float:
    return round(statistics.median(values) * 1000, 3)


def measure(url: str, static_dir: Path, touch: Callable[[int], None], runs: int,
            flow_id: str, touch_flow: Callable[[], None]) -> dict[str, Any]:
    """The figures of one served store (see the module docstring); ``touch(i)`` changes the
    i-th flow, ``touch_flow()`` the flow ``flow_id`` whose page is measured."""
    cold, page = first_byte(url, "/")
    part_tag = etag_of(url, "/parts/flows")
    _, part = first_byte(url, "/parts/flows")
    static_dir.mkdir()
    (static_dir / "list.html").write_bytes(page)
    (static_dir / "part.html").write_bytes(part)
    (static_dir / "style.css").write_bytes((ROOT / "flow/web/static/style.css").read_bytes())
    surl, server = static_server(static_dir)
    from urllib.parse import quote

    flow_path = f"/flow/{quote(flow_id)}"
    poll_path = f"/parts/flow/{quote(flow_id)}"
    _, flow_page = first_byte(url, flow_path)
    _, flow_part = first_byte(url, poll_path)
    (static_dir / "flow.html").write_bytes(flow_page)
    (static_dir / "flow_part.html").write_bytes(flow_part)
    out: dict[str, list[float]] = {k: [] for k in (
        "list", "list_static", "refresh", "refresh_static", "refresh_changed",
        "css_alone", "css_during_list", "flow", "flow_static", "flow_poll",
        "flow_poll_static", "flow_poll_changed")}
    for i in range(runs):
        time.sleep(1.05)  # the re-render the last change set off (in the background) is over
        out["list"].append(first_byte(url, "/")[0])
        out["list_static"].append(first_byte(surl, "/list.html")[0])
        time.sleep(1.05)  # past the index's 1 s: this poll revalidates
        out["refresh"].append(first_byte(url, "/parts/flows", {"If-None-Match": part_tag})[0])
        time.sleep(1.05)  # the static server asked after the same idle time
        out["refresh_static"].append(first_byte(surl, "/part.html")[0])
        touch(i)
        time.sleep(1.05)
        out["refresh_changed"].append(first_byte(url, "/parts/flows")[0])
        part_tag = etag_of(url, "/parts/flows")
        out["css_alone"].append(first_byte(url, "/static/style.css")[0])
        touch(i + 1)
        time.sleep(1.05)
        lister = threading.Thread(target=first_byte, args=(url, "/"))
        lister.start()
        out["css_during_list"].append(first_byte(url, "/static/style.css")[0])
        lister.join()
    time.sleep(1.05)  # the index's refresh set off by the last list is over
    flow_tag = etag_of(url, poll_path)
    for _ in range(runs):
        out["flow"].append(first_byte(url, flow_path)[0])
        out["flow_static"].append(first_byte(surl, "/flow.html")[0])
        out["flow_poll"].append(first_byte(url, poll_path, {"If-None-Match": flow_tag})[0])
        out["flow_poll_static"].append(first_byte(surl, "/flow_part.html")[0])
        touch_flow()
        out["flow_poll_changed"].append(first_byte(url, poll_path,
                                                  {"If-None-Match": flow_tag})[0])
        flow_tag = etag_of(url, poll_path)
    server.shutdown()
    ms = {k: median(v) for k, v in out.items()}
    return {
        "list_bytes": len(page), "rows_on_page": page.count(b'class="flow '),
        "median_ms": ms, "first_list_ms_cold": round(cold * 1000, 3),
        "list_vs_static": round(ms["list"] / ms["list_static"], 2),
        "refresh_vs_static": round(ms["refresh"] / ms["refresh_static"], 2),
        "refresh_changed_vs_static": round(ms["refresh_changed"] / ms["refresh_static"], 2),
        "css_during_list_vs_alone": round(ms["css_during_list"] / ms["css_alone"], 2),
        "flow_page": flow_id, "flow_bytes": len(flow_page), "flow_part_bytes": len(flow_part),
        "flow_vs_static": round(ms["flow"] / ms["flow_static"], 2),
        "flow_poll_vs_static": round(ms["flow_poll"] / ms["flow_poll_static"], 2),
        "flow_poll_changed_vs_static": round(ms["flow_poll_changed"] / ms["flow_poll_static"],
                                             2),
    }


def biggest(ids: list[str]) -> str:
    """The clone of the refactor demo's flow when there is one (the biggest page: summary
    and diff), else of the main job's."""
    clones = [i for i in ids if "/clone-" in i]
    return next((i for i in clones if i.startswith("refactor/")),
                next((i for i in clones if i.startswith("reproduce/")), clones[0]))


def file_store(tmp: Path, flows: int, runs: int, refactor: bool) -> dict[str, Any]:
    root = tmp / "agent_space"
    t = time.perf_counter()
    kinds = make_workspace(root, flows, refactor)
    built_s = time.perf_counter() - t
    states = sorted(root.rglob("flow_state.json"))
    shown = biggest([str(s.parent.relative_to(root)) for s in states])
    with serving(root) as (url, _):
        figures = measure(url, tmp / "static-file", lambda i: os.utime(states[i % len(states)]),
                          runs, shown, lambda: os.utime(root / shown / "flow_state.json"))
    return {"flows": len(states), "flow_kinds_cloned": kinds, "build_s": round(built_s, 1),
            **figures}


def make_store(root: Path, url: str, flows: int, refactor: bool) -> tuple[int, list[str]]:
    """The same real flows made in the store at ``url``, then their rows cloned under new
    ids (``<template's folder>/clone-NNNNN``, the state's own id and paths moved the way a
    cloned folder's are) until there are ``flows``; (the templates' count, every id)."""
    import psycopg

    build(root, hostile=False, ORCHESTRATOR_STORE=url)
    if refactor:
        call(root, "demo", "refactor", ORCHESTRATOR_STORE=url)
    with psycopg.connect(url, autocommit=True) as conn:
        templates = [r[0] for r in conn.execute(
            "SELECT flow_id FROM flows WHERE flow_id NOT LIKE %s ORDER BY flow_id",
            ("%.old-%",)).fetchall()]
        assert templates, "no flow was made in the store"
        clones = []
        for i in range(flows - len(templates)):
            src = templates[i % len(templates)]
            clones.append((src, f"{src.rsplit('/', 1)[0]}/clone-{i:05d}"))
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO flows (flow_id, workflow, state, revision, updated_at, spec, "
                "spec_sha, last_error, root) SELECT %s, workflow, convert_to(replace(replace("
                "convert_from(state, 'UTF8'), %s, %s), %s, %s), 'UTF8'), revision, updated_at, "
                "NULL, NULL, last_error, root FROM flows WHERE flow_id = %s",
                [(new, f"/{src}/", f"/{new}/", f'"{src}"', f'"{new}"', src)
                 for src, new in clones])
        ids = [r[0] for r in conn.execute("SELECT flow_id FROM flows WHERE flow_id NOT LIKE %s",
                                          ("%.old-%",)).fetchall()]
    return len(templates), ids


def postgres_store(tmp: Path, flows: int, runs: int, refactor: bool) -> dict[str, Any]:
    """The same figures on ``serve --store`` over a throw-away PostgreSQL cluster."""
    import psycopg

    from tests.store.pgserver import Cluster, available

    why = available()
    if why is not None:
        return {"skipped": why}
    cluster = Cluster().start()
    try:
        url = cluster.create_db("dashboard_scale")
        root = tmp / "pg_space"
        t = time.perf_counter()
        kinds, ids = make_store(root, url, flows, refactor)
        built_s = time.perf_counter() - t
        conn = psycopg.connect(url, autocommit=True)

        def touch(i: int) -> None:
            conn.execute("UPDATE flows SET revision = revision + 1 WHERE flow_id = %s",
                         (ids[i % len(ids)],))

        shown = biggest(ids)
        with serving(tmp / "pg_viewer", ORCHESTRATOR_STORE=url) as (served, _):
            figures = measure(served, tmp / "static-pg", touch, runs, shown,
                              lambda: conn.execute("UPDATE flows SET revision = revision + 1 "
                                                   "WHERE flow_id = %s", (shown,)))
        conn.close()
        return {"flows": len(ids), "flow_kinds_cloned": kinds, "build_s": round(built_s, 1),
                **figures}
    finally:
        cluster.destroy()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--flows", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-refactor", action="store_true")
    ap.add_argument("--no-postgres", action="store_true")
    args = ap.parse_args()
    result: dict[str, Any] = {"runs": args.runs}
    with tempfile.TemporaryDirectory() as tmp:
        result["file"] = file_store(Path(tmp), args.flows, args.runs, not args.no_refactor)
        if not args.no_postgres:
            result["postgres"] = postgres_store(Path(tmp), args.flows, args.runs,
                                                not args.no_refactor)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
