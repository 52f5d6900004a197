"""The dashboard's web application: read-only pages over one workspace, or the PostgreSQL
store ``--store``/``ORCHESTRATOR_STORE`` names (Starlette).

Routes, all GET (any other method is refused with 405; nothing here can change a flow: the
harness contract stays the only way in):

- ``/``                      every flow, filtered by ``?state=`` and ``?workflow=``;
- ``/parts/flows``           the list's rows alone, which the page polls to stay live;
- ``/flow/{id}``             one flow: diagram, timeline, pending tasks, jobs, outputs;
- ``/parts/jobs/{id}``       that flow's running jobs alone (polled: elapsed, log tail);
- ``/diagram.svg?flow={id}`` its state machine drawn by Graphviz, current state and path
                             highlighted (``flow.cli.graph.picture``);
- ``/static/...``            the page's own style sheet and script, from this package.

Templates are Jinja2 with autoescaping on, and every value printed passes ``redact`` (a
token in a prompt or a log is shown as ``***``). Unknown flows and paths get the 404 page.
A strict Content-Security-Policy allows this origin's own script only: text from feeds or
GitHub that looks like a script or a ``javascript:`` link can only ever be text.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flow.core.redact import redact
from flow.cli.inbox import STATES
from flow.web.pages import flow_page

HERE = Path(__file__).resolve().parent
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def templates() -> Environment:
    """The templates; every value they print has its secrets masked (``flow.core.redact``,
    the secret values found once for the server's life, each distinct text masked once)."""
    from flow.core.redact import masker

    mask = masker()

    def finalize(value: Any) -> Any:
        return mask(value) if isinstance(value, str) else value

    return Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True,
                       finalize=finalize, trim_blocks=True, lstrip_blocks=True)


def create_app(root: Path, url: str | None = None, hosts: tuple[str, ...] = ()) -> Any:
    """The application over workspace ``root``, or over the PostgreSQL store at ``url``
    (``flow.web.source``); the list comes from an index of flows (``flow.web.index``) and
    every blocking read runs in a worker thread. ``hosts``: the Host names answered beside
    127.0.0.1, localhost and ::1 (``flow.web.hosts``)."""
    from starlette.concurrency import run_in_threadpool

    from flow.web.hosts import only_hosts
    from flow.web.index import FlowIndex
    from flow.web.source import source_for

    env = templates()
    src = source_for(root, url)
    index = FlowIndex(root, src)
    rendered: dict[tuple[Any, ...], tuple[str, str]] = {}

    def html(name: str, **context: Any) -> str:
        return env.get_template(name).render(root=str(root), **context)

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(html(name, **context), status_code=status)

    def answer(request: Request, body: str, etag: str) -> Response:
        """The body, or 304 when the page already holds this version of it; the index is
        refreshed once the answer is sent (``FlowIndex.later``)."""
        from starlette.background import BackgroundTask

        after = BackgroundTask(index.later)
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag}, background=after)
        return HTMLResponse(body, headers={"ETag": etag}, background=after)

    def listing(params: dict[str, str], part: bool) -> tuple[str, str]:
        """The list (or its live part) for these parameters, rendered once per change of the
        index (and per minute: ages and "stuck" move with the clock)."""
        rows = index.rows()
        key = (index.generation, int(time.time() // 60), part, tuple(sorted(params.items())))
        if key in rendered:
            return rendered[key]
        from flow.cli.inbox import choose, choose_items, counts, page_of, shown

        every = shown(rows)
        chosen = choose(every, state=params["state"], workflow=params["workflow"],
                        q=params["q"], needs_me=params["needs_me"] == "1")
        held = index.items
        items = None if held is None else (choose_items(
            held[0], state=params["state"], workflow=params["workflow"], q=params["q"]),
            held[1])
        try:
            number = int(params["page"] or 1)
        except ValueError:
            number = 1
        part_rows, number, pages = page_of(chosen, number)
        context = dict(rows=part_rows, counts=counts(every), total=len(every),
                       matched=len(chosen), page=number, pages=pages, want=params,
                       workflows=sorted({str(r["workflow"]) for r in every if r.get("workflow")}),
                       states=STATES, campaigns=campaign_names(), items=items,
                       items_read=0 if held is None else len(held[0]))
        body = html("listing.html" if part else "list.html", **context)
        if len(rendered) > 64:
            rendered.clear()
        rendered[key] = (body, f'W/"{key[0]}-{key[1]}-{abs(hash(key)) % 10**12}"')
        return rendered[key]

    def warm() -> None:
        for part in (True, False):
            listing(dict.fromkeys(("state", "workflow", "q", "page", "needs_me"), ""), part)

    index.on_change = warm

    def campaign_names() -> list[str]:
        if url is None:
            return []
        from flow.web.campaigns import names

        return names(url)

    def params_of(request: Request) -> dict[str, str]:
        return {k: request.query_params.get(k, "")[:200]
                for k in ("state", "workflow", "q", "page", "needs_me")}

    async def list_page(request: Request) -> Response:
        body, etag = await run_in_threadpool(listing, params_of(request), False)
        return answer(request, body, etag)

    async def rows_part(request: Request) -> Response:
        body, etag = await run_in_threadpool(listing, params_of(request), True)
        return answer(request, body, etag)

    def flow_view(flow_id: str, part: bool) -> str | None:
        info = flow_page(root, flow_id, src)
        if info is None:
            return None
        import shutil

        return html("flowbody.html" if part else "flow.html", flow_id=flow_id, info=info,
                    mermaid=_mermaid(info), pictures=shutil.which("dot") is not None)

    async def flow(request: Request) -> Response:
        flow_id = request.path_params["flow_id"]
        body = await run_in_threadpool(flow_view, flow_id, False)
        if body is None:
            return not_found(request, f"no flow {flow_id!r} in this workspace")
        return HTMLResponse(body)

    async def flow_part(request: Request) -> Response:
        body = await run_in_threadpool(flow_view, request.path_params["flow_id"], True)
        if body is None:
            return not_found(request, "no such flow")
        import hashlib

        return answer(request, body, f'W/"{hashlib.sha256(body.encode()).hexdigest()[:24]}"')

    async def job_log(request: Request) -> Response:
        from flow.web.pages import job_log_text

        text = await run_in_threadpool(job_log_text, root, src, request.path_params["flow_id"],
                                       request.path_params["job_id"])
        if text is None:
            return not_found(request, "no such job log")
        return Response(text, media_type="text/plain; charset=utf-8")

    async def campaign(request: Request) -> Response:
        if url is None:
            return not_found(request, "campaigns live in the PostgreSQL store (serve --store)")
        from flow.web.campaigns import campaign_view

        view = await run_in_threadpool(campaign_view, url, request.path_params["name"])
        if view is None:
            return not_found(request, "no such campaign")
        return page("campaign.html", c=view)

    def diagram_svg(flow_id: str) -> Response | None:
        info = flow_page(root, flow_id, src)
        raw = info["raw"] if info else None
        if not raw or not raw.get("workflow"):
            return None
        from flow.cli.graph import picture
        from flow.core.errors import OrchestratorError
        from flow.workflows import registry

        try:
            wf = registry.load(str(raw["workflow"])).WORKFLOW
            svg = picture(wf, "svg", str(raw.get("phase")), info["path"])
        except OrchestratorError as err:
            return Response(redact(f"{err.message}: {err.hint}"), status_code=503,
                            media_type="text/plain")
        return Response(svg, media_type="image/svg+xml")

    async def diagram(request: Request) -> Response:
        made = await run_in_threadpool(diagram_svg, request.query_params.get("flow", ""))
        return made if made is not None else not_found(request, "no such flow")

    def not_found(request: Request, why: str = "nothing here") -> HTMLResponse:
        return page("missing.html", status=404, why=why, path=request.url.path)

    async def on_http_error(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException) and exc.status_code == 404:
            return not_found(request)
        code = exc.status_code if isinstance(exc, HTTPException) else 500
        return Response("this page is read-only: only GET is served" if code == 405 else
                        "error", status_code=code, media_type="text/plain",
                        headers={"Allow": "GET, HEAD"} if code == 405 else None)

    routes = [
        Route("/", list_page, methods=["GET"]),
        Route("/parts/flows", rows_part, methods=["GET"]),
        Route("/flow/{flow_id:path}", flow, methods=["GET"]),
        Route("/parts/flow/{flow_id:path}", flow_part, methods=["GET"]),
        Route("/log/{job_id}/{flow_id:path}", job_log, methods=["GET"]),
        Route("/campaign/{name}", campaign, methods=["GET"]),
        Route("/diagram.svg", diagram, methods=["GET"]),
        Mount("/static", StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    async def on_store_error(request: Request, exc: Exception) -> Response:
        from flow.core.errors import OrchestratorError

        assert isinstance(exc, OrchestratorError)  # the PostgreSQL store did not answer
        return Response(redact(f"{exc.message}\n{exc.hint}"), status_code=503,
                        media_type="text/plain")

    from flow.core.errors import OrchestratorError

    app = Starlette(routes=routes, exception_handlers={HTTPException: on_http_error,
                                                       OrchestratorError: on_store_error})
    app.state.index = index
    return only_hosts(_with_headers(app), hosts)


def _with_headers(app: Any) -> Any:
    """Every response, static files and errors included, carries ``HEADERS``."""
    extra = [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start":
                have = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *(h for h in extra if h[0] not in have)]
            await send(message)

        await app(scope, receive, sending if scope["type"] == "http" else send)

    return asgi


def _mermaid(info: dict[str, Any]) -> str:
    """The diagram's Mermaid text, shown under the picture (and instead of it without
    Graphviz)."""
    raw = info.get("raw") or {}
    if not raw.get("workflow"):
        return ""
    from flow.core.errors import OrchestratorError
    from flow.workflows import registry

    try:
        wf = registry.load(str(raw["workflow"])).WORKFLOW
        return wf.mermaid(str(raw.get("phase")), info["path"])
    except (OrchestratorError, ValueError, KeyError):
        return ""
