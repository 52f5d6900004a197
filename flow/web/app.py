"""The dashboard's web application: read-only pages over one workspace, or the PostgreSQL
store ``--store``/``ORCHESTRATOR_STORE`` names (Starlette).

Routes, all GET (any other method is refused with 405; nothing here can change a flow: the
harness contract stays the only way in):

- ``/``                      every flow, filtered by ``?state=`` and ``?workflow=``;
- ``/parts/flows``           the list's rows alone, which the page polls to stay live;
- ``/flow/{id}``             one flow: diagram, timeline, pending tasks, jobs, outputs;
- ``/parts/jobs/{id}``       that flow's running jobs alone (polled: elapsed, log tail);
- ``/campaign/{name}``       a campaign of the PostgreSQL store, its items filtered by
                             ``?state=`` and ``?q=`` and paged (``/parts/campaign/{name}``:
                             the part the page polls);
- ``/diagram.svg?flow={id}`` its state machine drawn by Graphviz, current state and path
                             highlighted (``flow.cli.graph.picture``);
- ``/favicon.ico``           the page's icon (``static/favicon.svg``);
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


POLL_TIMEOUT_S = 10.0  # a poll with no answer by then is given up: the part is shown stale
POLL_PERIOD_S = 2.0  # how often an open page asks for its parts


def _seconds(name: str, default: float) -> float:
    """A number of seconds from the environment variable ``name``: ``default`` when unset, not
    a number, or not between 0 and an hour."""
    import os

    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        return default
    return value if 0 < value < 3600 else default


def poll_timeout_s() -> float:
    """How long the page waits for a poll's answer (``ORCHESTRATOR_POLL_TIMEOUT_S``, default
    ``POLL_TIMEOUT_S``; a value that is no positive number is the default)."""
    return _seconds("ORCHESTRATOR_POLL_TIMEOUT_S", POLL_TIMEOUT_S)


def poll_period_s() -> float:
    """How often an open page polls its parts (``ORCHESTRATOR_POLL_PERIOD_S``, default
    ``POLL_PERIOD_S``; a value that is no positive number is the default). A big fleet's
    dashboard watched by many may poll less often."""
    return _seconds("ORCHESTRATOR_POLL_PERIOD_S", POLL_PERIOD_S)


def templates() -> Environment:
    """The templates; every value they print has its secrets masked (``flow.core.redact``,
    the secret values found once for the server's life, each distinct text masked once)."""
    from markupsafe import Markup

    from flow.core.redact import masker

    mask = masker()

    def finalize(value: Any) -> Any:
        # a Markup value is a part these templates rendered (and masked) already
        return mask(value) if isinstance(value, str) and not isinstance(value, Markup) \
            else value

    env = Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True,
                      finalize=finalize, trim_blocks=True, lstrip_blocks=True)
    env.globals["poll_timeout_ms"] = int(poll_timeout_s() * 1000)
    env.globals["poll_period_ms"] = int(poll_period_s() * 1000)
    from flow.cli.person import counted

    env.filters["counted"] = counted  # {{ n | counted("claim") }}: 1 claim, 2 claims
    return env


def create_app(root: Path, url: str | None = None, hosts: tuple[str, ...] = ()) -> Any:
    """The application over workspace ``root``, or over the PostgreSQL store at ``url``
    (``flow.web.source``); the list comes from an index of flows (``flow.web.index``) and
    every blocking read runs in a worker thread. ``hosts``: the Host names answered beside
    127.0.0.1, localhost and ::1 (``flow.web.hosts``)."""
    from starlette.concurrency import run_in_threadpool

    from flow.web.hosts import only_hosts
    from flow.web.index import FlowIndex
    from flow.web.source import source_for

    import shutil
    from collections import Counter

    from flow.web.pagecache import PageCache, etag_of

    env = templates()
    src = source_for(root, url)
    index = FlowIndex(root, src)
    rendered: dict[tuple[Any, ...], tuple[str, str]] = {}
    renders: Counter[str] = Counter()  # templates rendered, by name (tests count them)
    pictures = shutil.which("dot") is not None

    def html(name: str, **context: Any) -> str:
        renders[name] += 1
        return env.get_template(name).render(root=str(root), **context)

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(html(name, **context), status_code=status)

    def answer(request: Request, body: str, etag: str, refresh: bool = True) -> Response:
        """The body, or 304 when the page already holds this version of it; for the list
        (``refresh``) the index is refreshed once the answer is sent (``FlowIndex.later``)."""
        from starlette.background import BackgroundTask

        after = BackgroundTask(index.later) if refresh else None
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={"ETag": etag}, background=after)
        return HTMLResponse(body, headers={"ETag": etag}, background=after)

    def listing(params: dict[str, str], part: bool) -> tuple[str, str]:
        """The list (or its live part) for these parameters, rendered once per change of the
        index (and per minute: whether a flow is stuck moves with the clock); its ETag is
        the body's digest, so a list rendered again the same is still "not modified"."""
        rows = index.rows()
        key = list_key(params, part)
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
        rendered[key] = (body, etag_of(body))
        return rendered[key]

    def list_key(params: dict[str, str], part: bool) -> tuple[Any, ...]:
        return (index.generation, int(time.time() // 60), part, tuple(sorted(params.items())))

    async def list_answer(request: Request, part: bool) -> Response:
        """The list or its live part: answered on the event loop when this version is already
        rendered (the usual poll: nothing to read or render), else rendered in a worker thread."""
        params = params_of(request)
        got = rendered.get(list_key(params, part)) if index.checked else None
        if got is None:
            got = await run_in_threadpool(listing, params, part)
        return answer(request, *got)

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
        return await list_answer(request, False)

    async def rows_part(request: Request) -> Response:
        return await list_answer(request, True)

    def flow_part(flow_id: str) -> tuple[str, tuple[str, ...]] | None:
        """The live part of a flow's page, and the files beyond the flow's own it read."""
        info = flow_page(root, flow_id, src)
        if info is None:
            return None
        body = html("flowbody.html", flow_id=flow_id, info=info, mermaid=_mermaid(info),
                    pictures=pictures)
        return body, _read_also(root, info)

    pages = PageCache(src, flow_part)
    whole: dict[tuple[str, str], tuple[str, str]] = {}

    def flow_view(flow_id: str, part: bool) -> tuple[str, str] | None:
        """(body, ETag) of a flow's page or its live part: rendered only when the flow's
        saved version moved (``flow.web.pagecache``); the page wraps the part and names its
        ETag, so the page's first poll is already a 304."""
        got = pages.get(flow_id)
        if got is None or part:
            return got
        key = (flow_id, got[1])
        if key not in whole:
            from markupsafe import Markup

            body = html("flow.html", flow_id=flow_id, body=Markup(got[0]), part_etag=got[1])
            if len(whole) > 64:
                whole.clear()
            whole[key] = (body, etag_of(body))
        return whole[key]

    async def flow_answer(flow_id: str, part: bool) -> tuple[str, str] | None:
        """A flow's page or its live part: answered on the event loop while the flow's saved
        version holds (``PageCache.held``: the usual poll), else made in a worker thread."""
        got = await pages.held(flow_id)
        if got is not None and not part:
            got = whole.get((flow_id, got[1]))
        if got is None:
            got = await run_in_threadpool(flow_view, flow_id, part)
        return got

    async def flow(request: Request) -> Response:
        flow_id = request.path_params["flow_id"]
        got = await flow_answer(flow_id, False)
        if got is None:
            return not_found(request, f"no flow {flow_id!r} in this workspace")
        return answer(request, *got, refresh=False)

    async def flow_live(request: Request) -> Response:
        got = await flow_answer(request.path_params["flow_id"], True)
        if got is None:
            return not_found(request, "no such flow")
        return answer(request, *got, refresh=False)

    async def job_log(request: Request) -> Response:
        from flow.web.pages import job_log_text

        text = await run_in_threadpool(job_log_text, root, src, request.path_params["flow_id"],
                                       request.path_params["job_id"])
        if text is None:
            return not_found(request, "no such job log")
        return Response(text, media_type="text/plain; charset=utf-8")

    def campaign_body(name: str, params: dict[str, str], part: bool) -> tuple[str, str] | None:
        """A campaign's page (or its live part): its figures, leases and the page of its
        items the filter keeps (``flow.web.campaigns.choose``)."""
        from flow.cli.inbox import page_of
        from flow.web.campaigns import ITEM_STATES, campaign_view, choose

        assert url is not None
        view = campaign_view(url, name)
        if view is None:
            return None
        chosen = choose(view["item_rows"], params["state"], params["q"])
        try:
            number = int(params["page"] or 1)
        except ValueError:
            number = 1
        rows, number, pages = page_of(chosen, number)
        body = html("campaignbody.html" if part else "campaign.html", c=view, rows=rows,
                    matched=len(chosen), page=number, pages=pages, want=params,
                    states=ITEM_STATES)
        return body, etag_of(body)

    async def campaign(request: Request) -> Response:
        return await campaign_answer(request, False)

    async def campaign_part(request: Request) -> Response:
        return await campaign_answer(request, True)

    async def campaign_answer(request: Request, part: bool) -> Response:
        if url is None:
            return not_found(request, "campaigns live in the PostgreSQL store (serve --store)")
        params = {k: request.query_params.get(k, "")[:200] for k in ("state", "q", "page")}
        got = await run_in_threadpool(campaign_body, request.path_params["name"], params, part)
        if got is None:
            return not_found(request, "no such campaign")
        return answer(request, *got, refresh=False)

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

    icon = (HERE / "static" / "favicon.svg").read_bytes()

    async def favicon(request: Request) -> Response:
        """The page's icon (an SVG of our own: two states and the step between them, the
        current one red), kept by the browser for a day."""
        return Response(icon, media_type="image/svg+xml",
                        headers={"Cache-Control": "public, max-age=86400"})

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
        Route("/parts/flow/{flow_id:path}", flow_live, methods=["GET"]),
        Route("/log/{job_id}/{flow_id:path}", job_log, methods=["GET"]),
        Route("/campaign/{name:path}", campaign, methods=["GET"]),  # one made before the
        # name rule may hold a slash; its page is served all the same
        Route("/parts/campaign/{name:path}", campaign_part, methods=["GET"]),
        Route("/diagram.svg", diagram, methods=["GET"]),
        Route("/favicon.ico", favicon, methods=["GET"]),
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
    app.state.pages = pages
    app.state.renders = renders
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


def _read_also(root: Path, info: dict[str, Any]) -> tuple[str, ...]:
    """The files beyond the flow's own a page of it read: the logs of its jobs not taken yet
    (their tails are shown) and the file a refactor edits (its diff is shown)."""
    paths = [str(j["log_file"]) for j in info.get("jobs") or []
             if j.get("status") != "taken" and j.get("log_readable") and j.get("log_file")]
    data = (info.get("raw") or {}).get("data")
    if isinstance(data, dict) and isinstance(data.get("file"), str):
        from flow.web.outputs import refactored_file

        target = refactored_file(data, root)
        if target is not None:
            paths.append(str(target))
    return tuple(paths)


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
