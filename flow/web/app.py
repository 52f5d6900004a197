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
from flow.web.pages import STATES, flow_page, flow_rows

HERE = Path(__file__).resolve().parent
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "img-src 'self'; connect-src 'self'; base-uri 'none'; "
                               "form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def _mask(value: Any) -> Any:
    """Every value a template prints, with secrets masked (``flow.core.redact``)."""
    return redact(value) if isinstance(value, str) else value


def templates() -> Environment:
    return Environment(loader=FileSystemLoader(str(HERE / "templates")), autoescape=True,
                       finalize=_mask, trim_blocks=True, lstrip_blocks=True)


def create_app(root: Path, url: str | None = None) -> Any:
    """The application over workspace ``root``, or over the PostgreSQL store at ``url``
    (``flow.web.source``; read at each request: flows come and go)."""
    from flow.web.source import source_for

    env = templates()
    src = source_for(root, url)

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = env.get_template(name).render(root=str(root), **context)
        return HTMLResponse(html, status_code=status)

    def chosen(request: Request) -> tuple[list[dict[str, Any]], dict[str, str], list[str]]:
        rows = flow_rows(root, src)
        want = {k: request.query_params.get(k, "") for k in ("state", "workflow")}
        workflows = sorted({str(r.get("workflow")) for r in rows if r.get("workflow")})
        shown = [r for r in rows if (not want["state"] or r["state"] == want["state"])
                 and (not want["workflow"] or r.get("workflow") == want["workflow"])]
        return shown, want, workflows

    async def index(request: Request) -> Response:
        shown, want, workflows = chosen(request)
        return page("list.html", rows=shown, want=want, workflows=workflows, states=STATES)

    async def rows_part(request: Request) -> Response:
        shown, _, _ = chosen(request)
        return page("rows.html", rows=shown)

    async def flow(request: Request) -> Response:
        flow_id = request.path_params["flow_id"]
        info = flow_page(root, flow_id, src)
        if info is None:
            return not_found(request, f"no flow {flow_id!r} in this workspace")
        return page("flow.html", flow_id=flow_id, info=info, mermaid=_mermaid(info))

    async def jobs_part(request: Request) -> Response:
        info = flow_page(root, request.path_params["flow_id"], src)
        if info is None:
            return not_found(request, "no such flow")
        return page("jobs.html", jobs=info["jobs"])

    async def diagram(request: Request) -> Response:
        flow_id = request.query_params.get("flow", "")
        info = flow_page(root, flow_id, src)
        raw = info["raw"] if info else None
        if not raw or not raw.get("workflow"):
            return not_found(request, "no such flow")
        from flow.cli.graph import picture
        from flow.core.errors import OrchestratorError
        from flow.workflows import registry

        try:
            wf = registry.load(str(raw["workflow"])).WORKFLOW
            svg = picture(wf, "svg", str(raw.get("phase")), info["path"])
        except OrchestratorError as err:
            return Response(f"{err.message}: {err.hint}", status_code=503,
                            media_type="text/plain")
        return Response(svg, media_type="image/svg+xml")

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
        Route("/", index, methods=["GET"]),
        Route("/parts/flows", rows_part, methods=["GET"]),
        Route("/flow/{flow_id:path}", flow, methods=["GET"]),
        Route("/parts/jobs/{flow_id:path}", jobs_part, methods=["GET"]),
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
    return _with_headers(app)


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
